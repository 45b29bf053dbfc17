//! `cargo xtask fuzz <target> <seconds>`: runs a fuzz target of `fuzz/` for a while.
//!
//! With a nightly toolchain it runs libFuzzer through cargo-fuzz (installing cargo-fuzz from
//! crates.io when it is missing), coverage-guided, with AddressSanitizer. The checked-in seeds in
//! `fuzz/corpus/<target>/` are read but never written: what libFuzzer finds goes to
//! `target/fuzz-corpus/<target>/`, crashes to `fuzz/artifacts/<target>/`.
//!
//! Without nightly (or with `--driver`) it runs the plain driver instead, on stable: random
//! mutations of the same seeds, not coverage-guided (`fuzz/src/bin/drive.rs`).

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::run;

/// The targets, as named in `fuzz/Cargo.toml`.
const TARGETS: &[&str] = &["sse_parser", "jsonl_loader", "decoded_roundtrip"];

const FUZZ_USAGE: &str = "usage: cargo xtask fuzz <target> <seconds> [--driver]

targets: sse_parser (SSE parser and both decoders), jsonl_loader (the JSONL session store),
  decoded_roundtrip (both decoders' messages written through the JSONL store and loaded back)
  --driver   use the stable, libFuzzer-free driver even when nightly is installed";

/// `cargo xtask fuzz <target> <seconds> [--driver]`.
pub fn fuzz(root: &Path, args: &[String]) -> Result<()> {
    let driver = args.iter().any(|a| a == "--driver");
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let (Some(target), Some(seconds)) = (positional.first(), positional.get(1)) else {
        bail!("{FUZZ_USAGE}");
    };
    if !TARGETS.contains(&target.as_str()) {
        bail!("unknown fuzz target {target:?}\n\n{FUZZ_USAGE}");
    }
    let seconds: u64 = seconds
        .parse()
        .with_context(|| format!("<seconds> must be a whole number, not {seconds:?}"))?;
    let fuzz_dir = root.join("fuzz");

    if driver || !has_nightly() {
        if !driver {
            println!("xtask fuzz: no nightly toolchain; running the stable driver (not coverage-guided)");
        }
        return run(rustup_cargo(None)
            .args(["run", "--release", "--no-default-features", "--bin", "drive", "--"])
            .arg(target.as_str())
            .arg(seconds.to_string())
            .current_dir(&fuzz_dir));
    }

    if !rustup_cargo(Some("nightly"))
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        println!("xtask fuzz: installing cargo-fuzz from crates.io");
        run(rustup_cargo(None).args(["install", "cargo-fuzz", "--locked"]))?;
    }
    let work = root.join("target").join("fuzz-corpus").join(target.as_str());
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let seeds = fuzz_dir.join("corpus").join(target.as_str());
    let mut cmd = rustup_cargo(Some("nightly"));
    cmd.args(["fuzz", "run", target.as_str()])
        .arg(&work)
        .arg(&seeds)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1");
    if target.as_str() == "jsonl_loader" {
        // libFuzzer caps inputs at the largest seed by default; session files past 16 KB take
        // other read paths, so allow them.
        cmd.arg("-max_len=131072");
    }
    run(cmd.current_dir(root))
}

/// `cargo` through rustup's proxy (so `+toolchain` works), with the outer cargo's toolchain
/// choice removed from the environment.
fn rustup_cargo(toolchain: Option<&str>) -> Command {
    let mut cmd = Command::new("cargo");
    if let Some(t) = toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC");
    cmd
}

fn has_nightly() -> bool {
    Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| l.starts_with("nightly"))
        })
}
