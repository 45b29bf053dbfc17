//! Records the git commit panto is built from, for `panto --version` ("panto 0.1.0 (commit
//! 1a2b3c4d5e6f)").
//!
//! From a git checkout the commit is `git rev-parse HEAD`, and the build reruns when HEAD or the
//! branch it points to moves. From a source tarball without `.git`, it is the commit Cargo
//! recorded in `.cargo_vcs_info.json` when it packaged the crate, else the `PANTO_GIT_COMMIT`
//! environment variable (for packagers building from a plain tarball), else "unknown".
//!
//! On Linux it also links the `panto` executable at a fixed address (see `main`).

// Build scripts talk to Cargo through stdout.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=PANTO_GIT_COMMIT");
    let commit = from_git(&manifest_dir)
        .or_else(|| from_vcs_info(&manifest_dir))
        .or_else(|| std::env::var("PANTO_GIT_COMMIT").ok().filter(|c| is_commit(c)))
        .map(|c| c[..12].to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=PANTO_GIT_COMMIT={commit}");
    // The `panto` executable is linked at a fixed address, not position-independent. As a PIE it
    // carries about 49,000 relative relocations that the dynamic loader applies at every start,
    // writing (so copying) every page of the data they point into. Linked at a fixed address,
    // `panto --version` runs 0.61 M instructions instead of 1.25 M, takes 145 page faults instead
    // of 370, and 1.3 ms instead of 2.1 (docs/performance.md, "Close to the floor"). Packed
    // relocations (`-z pack-relative-relocs`) shrink the table but not the writes, and moved
    // nothing. The cost: the executable's own code and data are not
    // randomised (shared libraries, stack, heap and mmaps still are). Only the bin targets of
    // this package get it: libpanto (panto-ffi) and proc macros are untouched.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

/// A full or abbreviated hexadecimal commit id, at least 12 digits.
fn is_commit(text: &str) -> bool {
    text.len() >= 12 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).current_dir(dir).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8(output.stdout).ok()?.trim().to_owned())
}

/// HEAD of the checkout the crate is in, with rerun triggers on what moves it.
fn from_git(dir: &Path) -> Option<String> {
    let commit = git(dir, &["rev-parse", "HEAD"]).filter(|c| is_commit(c))?;
    // HEAD itself (a checkout), the branch it names (a commit), packed refs (a gc).
    let abs = |p: String| -> PathBuf {
        let path = PathBuf::from(p);
        if path.is_absolute() {
            path
        } else {
            dir.join(path)
        }
    };
    if let Some(git_dir) = git(dir, &["rev-parse", "--git-dir"]).map(abs) {
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    }
    if let Some(common) = git(dir, &["rev-parse", "--git-common-dir"]).map(abs) {
        println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
        if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(branch).display());
        }
    }
    Some(commit)
}

/// The commit `cargo package` recorded: `{"git": {"sha1": "..."}, ...}`.
fn from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let after = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = after.find('"')? + 1;
    let end = start + after[start..].find('"')?;
    Some(after[start..end].to_owned()).filter(|c| is_commit(c))
}
