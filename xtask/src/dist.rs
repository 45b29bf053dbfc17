//! `cargo xtask dist` and `cargo xtask install`: panto as a release tree a C, Go or shell user
//! installs like any library.
//!
//! ```text
//! bin/panto
//! include/panto.h
//! lib/libpanto.so.<ABI>          SONAME libpanto.so.<ABI> (PANTO_ABI_VERSION)
//! lib/libpanto.so -> libpanto.so.<ABI>
//! lib/libpanto.a
//! lib/pkgconfig/panto.pc
//! share/man/man1/panto.1
//! share/bash-completion/completions/panto
//! share/zsh/site-functions/_panto
//! share/fish/vendor_completions.d/panto.fish
//! share/doc/panto/README.md, LICENSE
//! share/panto/valgrind/panto.supp  valgrind suppressions for programs using libpanto
//! ```
//!
//! `dist` stages the tree under `target/dist/panto-<version>-<host>/` (its `panto.pc` finds the
//! prefix through `${pcfiledir}`, so the unpacked tarball works wherever it lands) and packs it
//! into `target/dist/panto-<version>-<host>.tar.gz` with fixed owners, modes, order and times, so
//! two builds give the same bytes except where the binaries differ. `dist --verify` stages the
//! tree twice and fails when any file other than the binaries differs, or the binaries differ in
//! size. `install --prefix P [--destdir D]` writes the same tree into `D/P` with a `panto.pc`
//! naming `P`.
//!
//! Both build first, in `target/dist-build/` ([`dist_build_dir`]): a release build with the
//! SONAME, kept apart from the checkout's `target/release/`, which they never write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Where `install` goes without `--prefix`.
const DEFAULT_PREFIX: &str = "/usr/local";

/// The files of the tree that are compiled (their build ids may differ between two builds).
/// They are stripped of debug info (`strip --strip-debug`, binutils, which `nm` in ffi-test
/// needs too).
const BINARIES: &[&str] = &["bin/panto", "lib/libpanto.a"];

/// The license text shipped in the tree: the workspace's `license` field names two licenses, and
/// LICENSE says so and where their texts are.
const LICENSE: &str = "panto is licensed under either of

- Apache License, Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0)
- MIT license (https://opensource.org/licenses/MIT)

at your option (SPDX: MIT OR Apache-2.0, as Cargo.toml's `license` says).
";

/// What the release build produced.
pub(crate) struct Release {
    pub(crate) dir: PathBuf,
    pub(crate) abi: u32,
    pub(crate) version: String,
}

/// `cargo xtask dist [--verify]`.
pub(crate) fn dist(root: &Path, args: &[String]) -> Result<()> {
    let verify = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => false,
        ["--verify"] => true,
        other => bail!("usage: cargo xtask dist [--verify] (got {other:?})"),
    };
    let release = build_release(root)?;
    dist_from(root, &release, verify)?;
    Ok(())
}

/// CI's step: one release build (started earlier, [`BackgroundRelease`]) makes the tarball
/// (checked reproducible), an install into a scratch prefix, and the C programs, Go tests and
/// examples built against that install as a user would (pkg-config, no rpath or
/// LD_LIBRARY_PATH of their own).
pub(crate) fn ci(root: &Path, build: BackgroundRelease) -> Result<()> {
    let release = build.finish(root)?;
    dist_from(root, &release, true)?;
    let prefix = crate::target_dir(root).join("ci-install").join("prefix");
    if prefix.exists() {
        std::fs::remove_dir_all(&prefix).with_context(|| format!("cannot clear {}", prefix.display()))?;
    }
    stage(root, &release, &prefix, PcPrefix::Fixed(&prefix))?;
    crate::ffi_tests::installed(root, &prefix)?;
    crate::examples::run(root, Some(&prefix))
}

/// Stages the tree from `release` and packs the tarball; with `verify`, stages it again and
/// compares. Returns the tarball's path.
fn dist_from(root: &Path, release: &Release, verify: bool) -> Result<PathBuf> {
    let host = host_triple()?;
    let name = format!("panto-{}-{host}", release.version);
    let out = crate::target_dir(root).join("dist");
    let tree = out.join(&name);
    if tree.exists() {
        std::fs::remove_dir_all(&tree).with_context(|| format!("cannot clear {}", tree.display()))?;
    }
    stage(root, release, &tree, PcPrefix::Relocatable)?;
    let tarball = out.join(format!("{name}.tar.gz"));
    pack(&out, &name, &tarball)?;
    println!("dist: {}", tarball.display());
    if verify {
        let again = out.join(format!("{name}.again"));
        if again.exists() {
            std::fs::remove_dir_all(&again)?;
        }
        stage(root, release, &again, PcPrefix::Relocatable)?;
        compare_trees(&tree, &again)?;
        let tarball_again = out.join(format!("{name}.again.tar.gz"));
        pack_as(&again, &name, &tarball_again)?;
        if std::fs::read(&tarball)? != std::fs::read(&tarball_again)? {
            bail!(
                "two packings of the same tree differ: {} and {}",
                tarball.display(),
                tarball_again.display()
            );
        }
        std::fs::remove_dir_all(&again)?;
        std::fs::remove_file(&tarball_again)?;
        println!("dist: reproducible (every file but the binaries byte for byte, the tarball too)");
    }
    Ok(tarball)
}

/// `cargo xtask install [--prefix DIR] [--destdir DIR]`.
pub(crate) fn install(root: &Path, args: &[String]) -> Result<()> {
    let mut prefix = PathBuf::from(DEFAULT_PREFIX);
    let mut destdir: Option<PathBuf> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a directory"));
        match arg.as_str() {
            "--prefix" => prefix = PathBuf::from(value()?),
            "--destdir" => destdir = Some(PathBuf::from(value()?)),
            other => bail!("usage: cargo xtask install [--prefix DIR] [--destdir DIR] (got {other:?})"),
        }
    }
    let prefix = if prefix.is_absolute() {
        prefix
    } else {
        std::env::current_dir()?.join(prefix)
    };
    let release = build_release(root)?;
    let target = match &destdir {
        // DESTDIR/prefix: the prefix's root components are dropped, as make's DESTDIR does.
        Some(dest) => dest.join(prefix.strip_prefix("/").unwrap_or(&prefix)),
        None => prefix.clone(),
    };
    stage(root, &release, &target, PcPrefix::Fixed(&prefix))?;
    println!("install: panto {} in {}", release.version, target.display());
    println!(
        "install: build against it with PKG_CONFIG_PATH={}/lib/pkgconfig and `cc app.c $(pkg-config --cflags --libs panto)`",
        prefix.display()
    );
    Ok(())
}

/// Builds `panto` and libpanto in release mode; the shared library gets its SONAME
/// (`libpanto.so.<PANTO_ABI_VERSION>`) here, so debug builds keep linking as `libpanto.so`.
pub(crate) fn build_release(root: &Path) -> Result<Release> {
    let checkout_lib_before = file_stamp(&checkout_lib(root));
    crate::run(&mut release_build_command(root)?)?;
    release_built(root, checkout_lib_before)
}

/// The release build, not yet started.
fn release_build_command(root: &Path) -> Result<Command> {
    let abi = abi_version(root)?;
    // One invocation, so `panto` and libpanto share one feature resolution and the dependency
    // graph compiles once (two invocations resolved features apart and built most of it twice).
    // The SONAME reaches the cdylib's link through panto-ffi's build script. The build has a
    // target directory of its own: a SONAME'd libpanto in `target/release` would change what a
    // program linked against the build tree (docs/ffi.md) needs at run time, and the package
    // selection here would resolve features apart from the checkout's own `cargo build
    // --release` and rebuild over it each time the two alternate.
    let mut cmd = crate::cargo_command(root);
    cmd.args([
        "build",
        "--release",
        "--locked",
        "-p",
        "panto-cli",
        "--bin",
        "panto",
        "-p",
        "panto-ffi",
        "--lib",
    ])
    .env("CARGO_TARGET_DIR", dist_build_dir(root))
    .env("PANTO_SONAME", format!("libpanto.so.{abi}"))
    // The tree ships every compiled file stripped of debug info (`stage`), so the line tables
    // the release profile keeps for a developer's backtraces would only cost compile time here.
    .env("CARGO_PROFILE_RELEASE_DEBUG", "false");
    Ok(cmd)
}

/// The checkout's own release libpanto, which the dist build must never write.
fn checkout_lib(root: &Path) -> PathBuf {
    crate::target_dir(root).join("release").join("libpanto.so")
}

/// What the finished release build left, checked.
fn release_built(root: &Path, checkout_lib_before: Option<std::time::SystemTime>) -> Result<Release> {
    let checkout_lib = checkout_lib(root);
    if file_stamp(&checkout_lib) != checkout_lib_before {
        bail!(
            "the release build for dist/install changed the checkout's own {}",
            checkout_lib.display()
        );
    }
    let dir = dist_build_dir(root).join("release");
    for file in ["panto", "libpanto.so", "libpanto.a"] {
        if !dir.join(file).exists() {
            bail!("{} is missing after the release build", dir.join(file).display());
        }
    }
    Ok(Release {
        dir,
        abi: abi_version(root)?,
        version: crate::codegen::ffi_version(root)?,
    })
}

/// CI's release build, running beside the other steps from the start.
///
/// It runs at the lowest CPU priority (`nice -n 19`): the steps in front keep both cores when
/// they can use them, and the build takes what they leave idle (a crate graph's narrow stretches,
/// linking, tests waiting on servers and processes). Run after them, it was a third of CI's
/// time. Its output goes to a log the dist step prints, so it does not interleave with theirs.
pub(crate) struct BackgroundRelease {
    /// `None` once waited for.
    child: Option<std::process::Child>,
    log: PathBuf,
    checkout_lib_before: Option<std::time::SystemTime>,
}

impl BackgroundRelease {
    /// Starts the build.
    pub(crate) fn start(root: &Path) -> Result<Self> {
        let build = release_build_command(root)?;
        let dir = dist_build_dir(root);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let log = dir.join("ci-build.log");
        let out = std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = Command::new("nice");
        cmd.args(["-n", "19"]).arg(build.get_program()).args(build.get_args());
        if let Some(dir) = build.get_current_dir() {
            cmd.current_dir(dir);
        }
        for (key, value) in build.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        let checkout_lib_before = file_stamp(&checkout_lib(root));
        let child = cmd.spawn().with_context(|| format!("could not start {cmd:?}"))?;
        Ok(Self {
            child: Some(child),
            log,
            checkout_lib_before,
        })
    }

    /// Waits for the build, prints its log, and returns what it built.
    pub(crate) fn finish(mut self, root: &Path) -> Result<Release> {
        let mut child = self.child.take().context("the release build was already waited for")?;
        let status = child.wait().context("waiting for the release build")?;
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        print!("{log}");
        if !status.success() {
            bail!(
                "the release build failed with {status} (its output is above, and in {})",
                self.log.display()
            );
        }
        release_built(root, self.checkout_lib_before)
    }
}

impl Drop for BackgroundRelease {
    /// A CI run that fails before the dist step stops the build rather than leave it running.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where `dist` and `install` build: a target directory of their own under the checkout's
/// (`cargo clean` removes it too), never `target/release`.
pub(crate) fn dist_build_dir(root: &Path) -> PathBuf {
    crate::target_dir(root).join("dist-build")
}

/// Whether a file exists, and when it was last written: enough to notice a rebuild over it.
fn file_stamp(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// `PANTO_ABI_VERSION` as the committed header defines it.
pub(crate) fn abi_version(root: &Path) -> Result<u32> {
    let header = std::fs::read_to_string(root.join(crate::codegen::HEADER))
        .with_context(|| format!("cannot read {}", crate::codegen::HEADER))?;
    abi_version_in(&header)
}

/// `PANTO_ABI_VERSION` as a header's text defines it.
pub(crate) fn abi_version_in(header: &str) -> Result<u32> {
    header
        .lines()
        .find_map(|l| l.strip_prefix("#define PANTO_ABI_VERSION "))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("{} defines no PANTO_ABI_VERSION", crate::codegen::HEADER))
}

fn host_triple() -> Result<String> {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("could not run rustc -vV")?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

/// What `panto.pc` says the prefix is.
enum PcPrefix<'a> {
    /// Wherever the `.pc` file is found (`${pcfiledir}/../..`): for the tarball.
    Relocatable,
    /// This directory: for an install.
    Fixed(&'a Path),
}

/// Writes the tree into `dest` (created; files of an earlier tree there are replaced).
fn stage(root: &Path, release: &Release, dest: &Path, prefix: PcPrefix<'_>) -> Result<()> {
    let abi = release.abi;
    let versioned = format!("libpanto.so.{abi}");
    let copy = |from: PathBuf, to: &str, mode: u32| -> Result<()> {
        let to = dest.join(to);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // Replace rather than overwrite: a running program may map the old library.
        let _ = std::fs::remove_file(&to);
        std::fs::copy(&from, &to).with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
        set_mode(&to, mode)
    };
    let write = |to: &str, text: &[u8], mode: u32| -> Result<()> {
        let to = dest.join(to);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(&to, text).with_context(|| format!("cannot write {}", to.display()))?;
        set_mode(&to, mode)
    };
    copy(release.dir.join("panto"), "bin/panto", 0o755)?;
    copy(release.dir.join("libpanto.so"), &format!("lib/{versioned}"), 0o755)?;
    copy(release.dir.join("libpanto.a"), "lib/libpanto.a", 0o644)?;
    // The build has no debug info of its own (`release_build_command`), but std's precompiled
    // code brings line tables: the installed files ship without any (exported symbols stay).
    for binary in ["bin/panto", &format!("lib/{versioned}"), "lib/libpanto.a"] {
        crate::run(Command::new("strip").arg("--strip-debug").arg(dest.join(binary)))?;
    }
    let link = dest.join("lib/libpanto.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&versioned, &link).with_context(|| format!("cannot link {}", link.display()))?;
    copy(root.join(crate::codegen::HEADER), "include/panto.h", 0o644)?;
    copy(
        root.join(crate::ffi_tests::SUPPRESSIONS),
        "share/panto/valgrind/panto.supp",
        0o644,
    )?;

    let pc = match prefix {
        PcPrefix::Relocatable => crate::pkgconfig::panto_pc(
            &release.version,
            "${pcfiledir}/../..",
            "${prefix}/lib",
            "${prefix}/include",
        ),
        PcPrefix::Fixed(prefix) => crate::pkgconfig::panto_pc(
            &release.version,
            &prefix.display().to_string(),
            "${prefix}/lib",
            "${prefix}/include",
        ),
    };
    write("lib/pkgconfig/panto.pc", pc.as_bytes(), 0o644)?;

    let panto = dest.join("bin/panto");
    write("share/man/man1/panto.1", &output_of(&panto, &["man"])?, 0o644)?;
    for (shell, path) in [
        ("bash", "share/bash-completion/completions/panto"),
        ("zsh", "share/zsh/site-functions/_panto"),
        ("fish", "share/fish/vendor_completions.d/panto.fish"),
    ] {
        write(path, &output_of(&panto, &["completions", shell])?, 0o644)?;
    }
    copy(root.join("README.md"), "share/doc/panto/README.md", 0o644)?;
    write("share/doc/panto/LICENSE", LICENSE.as_bytes(), 0o644)?;
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))
}

/// The stdout of a program of the tree (the man page, completions), failing with its stderr.
fn output_of(program: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let output = Command::new(program)
        .args(args)
        // The generated text must not depend on the machine's configuration.
        .env_remove("PANTO_CONFIG")
        .env("HOME", "/nonexistent")
        .output()
        .with_context(|| format!("could not run {}", program.display()))?;
    if !output.status.success() || output.stdout.is_empty() {
        bail!(
            "`{} {}` failed ({}): {}",
            program.display(),
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output.stdout)
}

/// Packs `<dir>/<name>` into `tarball`.
fn pack(dir: &Path, name: &str, tarball: &Path) -> Result<()> {
    pack_as(&dir.join(name), name, tarball)
}

/// Packs the tree at `tree` into `tarball` under the top directory `name`, the same bytes for
/// the same files: GNU tar with sorted names, owner 0, fixed modes and times; gzip without a
/// name or time stamp.
fn pack_as(tree: &Path, name: &str, tarball: &Path) -> Result<()> {
    let parent = tree.parent().context("the tree has no parent directory")?;
    // gzip appends .gz to the name it compresses.
    let tar_name = tarball.with_extension("");
    crate::run(
        Command::new("tar")
            .current_dir(parent)
            .args([
                "--sort=name",
                "--mtime=@0",
                "--owner=0",
                "--group=0",
                "--numeric-owner",
                "--mode=go-w",
                "--format=gnu",
                &format!(
                    "--transform=s,^{},{name},",
                    tree.file_name().and_then(|n| n.to_str()).unwrap_or(name)
                ),
                "-cf",
            ])
            .arg(&tar_name)
            .arg(tree.file_name().context("the tree has no name")?),
    )?;
    let _ = std::fs::remove_file(tarball);
    crate::run(Command::new("gzip").args(["-n", "-f"]).arg(&tar_name))?;
    Ok(())
}

/// Every file of a tree, relative path to its bytes (a symlink: its target).
fn files_of(tree: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
        for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            let relative = path.strip_prefix(base)?.display().to_string();
            let meta = std::fs::symlink_metadata(&path)?;
            if meta.file_type().is_symlink() {
                out.insert(relative, std::fs::read_link(&path)?.display().to_string().into_bytes());
            } else if meta.is_dir() {
                walk(base, &path, out)?;
            } else {
                out.insert(relative, std::fs::read(&path)?);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(tree, tree, &mut out)?;
    Ok(out)
}

/// Two trees hold the same files; those that are not binaries byte for byte, the binaries with
/// the same size (their build ids may differ).
fn compare_trees(a: &Path, b: &Path) -> Result<()> {
    let (first, second) = (files_of(a)?, files_of(b)?);
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    if names(&first) != names(&second) {
        bail!(
            "the two trees hold different files: {:?} and {:?}",
            names(&first),
            names(&second)
        );
    }
    for (name, bytes) in &first {
        let other = &second[name];
        let binary = BINARIES.contains(&name.as_str()) || name.starts_with("lib/libpanto.so.");
        if binary && bytes.len() != other.len() || !binary && bytes != other {
            bail!(
                "{name} differs between two builds of the tree ({} and {})",
                a.display(),
                b.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_differing_outside_the_binaries_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for tree in [&a, &b] {
            std::fs::create_dir_all(tree.join("bin")).unwrap();
            std::fs::create_dir_all(tree.join("lib/pkgconfig")).unwrap();
            std::fs::write(tree.join("lib/pkgconfig/panto.pc"), "Version: 1\n").unwrap();
        }
        std::fs::write(a.join("bin/panto"), "build id 1").unwrap();
        std::fs::write(b.join("bin/panto"), "build id 2").unwrap();
        compare_trees(&a, &b).unwrap();
        std::fs::write(b.join("lib/pkgconfig/panto.pc"), "Version: 2\n").unwrap();
        let e = compare_trees(&a, &b).unwrap_err().to_string();
        assert!(e.starts_with("lib/pkgconfig/panto.pc differs"), "{e}");
    }
}
