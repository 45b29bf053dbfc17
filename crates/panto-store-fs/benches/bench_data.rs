//! Builds the bench data sets: `cargo xtask bench-data [--large] [--force]`, which runs
//! `cargo bench -p panto-store-fs --bench bench_data -- --generate [--large] [--force]`.
//!
//! Without `--generate` (as in a plain `cargo bench`) it does nothing: the benches build the
//! default sets they need on first use, and nobody wants 10 GB written by accident.

#![allow(clippy::print_stderr)]

mod data;

use std::path::Path;
use std::process::ExitCode;

/// Free space needed before the 10 GB set is started: the set plus room for everything else.
const LARGE_HEADROOM: u64 = 12 * 1024 * 1024 * 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--generate") {
        eprintln!("bench_data: nothing to do without --generate (see `cargo xtask bench-data`)");
        return ExitCode::SUCCESS;
    }
    let large = args.iter().any(|a| a == "--large");
    let force = args.iter().any(|a| a == "--force");
    for spec in data::ALL.iter().filter(|s| large || !s.large) {
        if !force && data::is_ready(spec) {
            eprintln!("bench-data: {} is ready ({})", spec.name, data::dir(spec).display());
            continue;
        }
        if spec.large {
            if let Err(e) = check_space(&data::root(), LARGE_HEADROOM) {
                eprintln!("bench-data: not building {}: {e}", spec.name);
                return ExitCode::FAILURE;
            }
        }
        if let Err(e) = data::build(spec) {
            eprintln!("bench-data: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Fails unless the filesystem holding `dir` has `needed` bytes free (asked of `df`, since std
/// has no portable free-space call).
fn check_space(dir: &Path, needed: u64) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let out = std::process::Command::new("df")
        .arg("-Pk")
        .arg(dir)
        .output()
        .map_err(|e| format!("running df: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let free_kib: u64 = text
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("cannot read df's output: {text}"))?;
    let free = free_kib * 1024;
    if free < needed {
        return Err(format!(
            "{} has {:.1} GB free; the large set needs {:.1} GB",
            dir.display(),
            free as f64 / 1e9,
            needed as f64 / 1e9
        ));
    }
    Ok(())
}
