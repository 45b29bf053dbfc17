//! `cargo xtask <task>`: the project's automation, in Rust instead of shell scripts.
//!
//! Tasks:
//! - `ci`: the whole check CI runs (format, clippy, tests, docs, architecture invariants, the
//!   mock server's SDK check, and the generated-header and C/Go checks once they exist).
//! - `arch`: the architecture invariants alone.
//! - `sdk-check`: drive the mock LLM server with the official Python SDKs.
//! - `bench`, `bench-data`: the performance targets, measured (docs/performance.md).
//! - `crash-test`: the kill-9 crash harness (docs/robustness.md).
//! - `dist`, `install`: the release tree (binary, libpanto, header, pkg-config, man page,
//!   completions) as a tarball, or installed into a prefix.
//! - `fuzz`: run a fuzz target of `fuzz/` for a while.
//! - `mcp-servers`: install the real MCP servers the tests use, from npm and PyPI, pinned.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod arch;
mod bench;
mod codegen;
mod crash;
mod dist;
mod examples;
mod ffi_tests;
mod fuzz;
mod mcp_servers;
mod mock;
mod pkgconfig;
mod postgres;
mod sdk_check;
mod symbols;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("arch") => arch::check(&root),
        Some("bench") => bench::bench(&root, &args[1..]),
        Some("bench-data") => bench::bench_data(&root, &args[1..]),
        Some("crash-test") => crash::main(&root, &args[1..]),
        Some("dist") => dist::dist(&root, &args[1..]),
        Some("examples") => examples::main(&root, &args[1..]),
        Some("install") => dist::install(&root, &args[1..]),
        Some("codegen") => codegen::main(&root, &args[1..]),
        Some("ffi-test") => ffi_tests::main(&root, &args[1..]),
        Some("fuzz") => fuzz::fuzz(&root, &args[1..]),
        Some("mcp-servers") => mcp_servers::main(&root, &args[1..]),
        Some("postgres") => postgres::run(&root, &args[1..]),
        Some("sdk-check") => sdk_check::run(&root),
        Some(other) => bail!("unknown task {other:?}\n\n{USAGE}"),
        None => {
            println!("{USAGE}");
            Ok(())
        }
    }
}

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  ci         the whole check: fmt, invariants, clippy (also without otel), tests, header, C/Go, crash harness, docs, SDK check
  arch       architecture invariants (unsafe only in panto-ffi, printing only in panto-cli,
             no filesystem I/O in panto-core, panto-core's modules layered without cycles)
  bench      run every benchmark and print the table of targets (--only B, --cold)
  bench-data build the benchmark data sets under target/bench-data (--large, --force)
  codegen    generate include/panto.h and docs/events.schema.json (--check: fail if one is stale)
  crash-test SIGKILL panto at random moments and check the sessions it leaves (--trials N, --seed S)
  dist       the release tarball for the host under target/dist (--verify: build the tree twice, compare)
  install    the same tree into --prefix DIR (default /usr/local); --destdir DIR for packagers
  examples   build and run examples/ (C, Go, Rust) against the mock (--prefix DIR: an installed libpanto)
  ffi-test   libpanto from C (plain, valgrind, ASan) and Go (also GOGC=1, -race); `c` or `go` alone;
             `installed PREFIX`: C and Go against an installed tree
  fuzz       fuzz TARGET SECONDS: sse_parser or jsonl_loader (cargo-fuzz on nightly, else a driver)
  mcp-servers install the real MCP servers the tests use (npm and pip, pinned; bash .ci/run does)
  postgres   a throwaway PostgreSQL (prints PANTO_PG_URL; or -- CMD… runs CMD with it set)
  sdk-check  validate the mock LLM server against the official anthropic/openai Python SDKs";

fn workspace_root() -> PathBuf {
    // xtask lives in <root>/xtask.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set (a relative one is taken from the
/// workspace root, as Cargo does; joining an absolute one yields it), else `<root>/target`.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    root.join(std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into()))
}

/// Builds, in debug, every library, binary, test and example of the workspace: what the C, Go,
/// example and crash checks run (libpanto, `panto`, `panto-mock`, the example programs). Always
/// the whole workspace with its tests, so that Cargo resolves the dependencies' features exactly
/// as `cargo test --workspace` does and every such build after the test step finds everything
/// already compiled; a build of a few packages resolves them apart and compiles much of the
/// graph again (CI paid minutes for each).
pub(crate) fn build_debug(root: &Path) -> Result<()> {
    cargo(
        root,
        &[
            "build",
            "--quiet",
            "--workspace",
            "--lib",
            "--bins",
            "--tests",
            "--examples",
        ],
    )
}

/// A `cargo` command (the one running xtask, per `CARGO`, else `cargo` from `PATH`) that runs
/// in the workspace root, without the variables `cargo run` set for the xtask itself (see
/// [`panto_testkit::cargo_command`]: with them, `cargo test` then `cargo xtask ffi-test c`
/// rebuilt ring, rustls, reqwest and every crate above them, and back again).
pub(crate) fn cargo_command(root: &Path) -> Command {
    let mut cmd = panto_testkit::cargo_command();
    cmd.current_dir(root);
    cmd
}

/// Runs `cargo <args>` in the workspace root, failing with the command line if it fails.
pub(crate) fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    run(cargo_command(root).args(args))
}

/// Runs a command, inheriting stdio, failing with its command line if it fails.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let line = format!("{cmd:?}");
    let status = cmd.status().with_context(|| format!("could not start {line}"))?;
    if !status.success() {
        bail!("{line} failed with {status}");
    }
    Ok(())
}

/// One named step of `ci`.
type Step<'a> = (&'static str, Box<dyn Fn() -> Result<()> + 'a>);

fn ci(root: &Path) -> Result<()> {
    // CI builds once from a clean tree: incremental state would only cost disk (gigabytes under
    // target/debug/incremental) and time. Every cargo the steps start inherits this.
    std::env::set_var("CARGO_INCREMENTAL", "0");
    // Line tables are all CI needs of debug info (a panic's backtrace still names file and line);
    // full debug info for the workspace's crates, which the dev profile keeps for a developer's
    // debugger, makes every test binary larger and slower to compile and link.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    // The real MCP servers the tests use (pinned; nothing to do once installed), so this one
    // command runs every test on a fresh machine, and the Python SDKs the last step checks the
    // mock against. Installing them is mostly waiting on the registries, so it runs beside the
    // first steps (which keep both cores busy compiling), and the step before the tests waits
    // for it.
    let installs = {
        let root = root.to_path_buf();
        std::thread::spawn(move || -> Result<()> {
            mcp_servers::install()?;
            sdk_check::prepare(&root).map(drop)
        })
    };
    let installs = std::sync::Mutex::new(Some(installs));
    // The release build for the dist step runs beside everything before it, at the lowest CPU
    // priority (`dist::BackgroundRelease` says why).
    let release = std::sync::Mutex::new(Some(dist::BackgroundRelease::start(root)?));
    let steps: Vec<Step<'_>> = vec![
        ("fmt", Box::new(|| cargo(root, &["fmt", "--all", "--", "--check"]))),
        ("arch", Box::new(|| arch::check(root))),
        (
            "clippy",
            Box::new(|| {
                cargo(
                    root,
                    &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
                )
            }),
        ),
        // The `panto` build without the `otel` feature that docs/observability.md offers.
        (
            "no-otel",
            Box::new(|| {
                cargo(
                    root,
                    &[
                        "clippy",
                        "-p",
                        "panto-cli",
                        "--no-default-features",
                        "--",
                        "-D",
                        "warnings",
                    ],
                )
            }),
        ),
        (
            "installs",
            Box::new(|| {
                let installing = installs.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.take();
                match installing {
                    Some(handle) => handle
                        .join()
                        .map_err(|_| anyhow::anyhow!("installing the MCP servers and SDKs panicked"))?,
                    None => Ok(()),
                }
            }),
        ),
        ("test", Box::new(|| cargo(root, &["test", "--workspace"]))),
        ("codegen-check", Box::new(|| codegen::run(root, true))),
        ("ffi-c", Box::new(|| ffi_tests::c(root))),
        ("ffi-go", Box::new(|| ffi_tests::go(root))),
        ("crash-test", Box::new(|| crash::run(root, 50))),
        ("doc", Box::new(|| doc(root))),
        ("sdk-check", Box::new(|| sdk_check::run(root))),
        // One release build: the tarball, an install, and C, Go and the examples against it. Last,
        // so that the build, running since the start, has every step before it to overlap.
        (
            "dist-install",
            Box::new(|| {
                let build = release.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.take();
                dist::ci(root, build.context("the release build was already used")?)
            }),
        ),
    ];
    let started = Instant::now();
    for (name, step) in &steps {
        let t = Instant::now();
        println!("==> xtask ci: {name}");
        step().with_context(|| format!("xtask ci step {name:?} failed"))?;
        println!("==> xtask ci: {name} ok ({:.1}s)", t.elapsed().as_secs_f64());
    }
    println!(
        "==> xtask ci: all {} steps passed in {:.1}s",
        steps.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn doc(root: &Path) -> Result<()> {
    run(cargo_command(root)
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings"))
}
