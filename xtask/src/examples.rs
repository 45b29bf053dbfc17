//! `cargo xtask examples [--prefix DIR]`: builds and runs the programs of `examples/` against
//! the mock server, as a user would build them.
//!
//! - `examples/c`: `cc weather.c $(pkg-config --cflags --libs panto)`;
//! - `examples/go`: `go build` of a module that imports the binding through a `replace`
//!   directive (the documented local recipe), linking through pkg-config;
//! - `examples/rust`: `cargo build -p panto-example`, run twice: the second run resumes the
//!   session the first wrote.
//!
//! With `--prefix` pkg-config finds the libpanto installed there (`cargo xtask install`);
//! without it, a `panto.pc` for the debug build tree. Each program streams a turn in which the
//! model (the mock, scripted by `examples/mock-weather.json`) calls the example's tool; the
//! check is what the program prints.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::mock::MockProcess;

/// The script every example's mock serves: a tool call, its answer, and a second turn's answer.
const SCRIPT: &str = "examples/mock-weather.json";

/// What each example must print for the scripted turn.
const TOOL_LINE: &str = "[get_weather {\"city\":\"Paris\"}]";
const ANSWER: &str = "It is sunny in Paris.";

/// `cargo xtask examples [--prefix DIR]`.
pub(crate) fn main(root: &Path, args: &[String]) -> Result<()> {
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => run(root, None),
        ["--prefix", prefix] => run(root, Some(Path::new(prefix))),
        other => bail!("usage: cargo xtask examples [--prefix DIR] (got {other:?})"),
    }
}

/// Builds and runs every example; with `prefix`, against the libpanto installed there.
pub(crate) fn run(root: &Path, prefix: Option<&Path>) -> Result<()> {
    crate::build_debug(root)?;
    let debug = crate::target_dir(root).join("debug");
    let pkgconfig = match prefix {
        Some(prefix) => prefix.join("lib/pkgconfig"),
        None => {
            let dir = crate::target_dir(root).join("ffi-tests").join("pkgconfig");
            crate::pkgconfig::write_for_build_tree(root, &debug, &dir)?;
            dir
        }
    };
    let out = crate::target_dir(root).join("examples");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let mock = debug.join("panto-mock");

    // C, exactly as docs/ffi.md says: cc app.c $(pkg-config --cflags --libs panto).
    let flags = pkg_config(&pkgconfig)?;
    let c_exe = out.join("weather-c");
    crate::run(
        Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .arg(root.join("examples/c/weather.c"))
            .args(flags.split_whitespace())
            .arg("-o")
            .arg(&c_exe),
    )?;
    check_turn(root, &mock, "c", &mut Command::new(&c_exe))?;

    // Go: the module imports the binding by its path, found through `replace`.
    let go_exe = out.join("weather-go");
    crate::run(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&go_exe)
            .arg(".")
            .current_dir(root.join("examples/go"))
            .env("PKG_CONFIG_PATH", &pkgconfig)
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=mod"),
    )?;
    check_turn(root, &mock, "go", &mut Command::new(&go_exe))?;

    // Rust: a resumed session. The first run writes it, the second resumes it.
    let sessions = out.join("rust-sessions");
    let _ = std::fs::remove_dir_all(&sessions);
    let rust_exe = debug.join("panto-example");
    let script = root.join(SCRIPT);
    let mock_process = MockProcess::start(&mock, &["--script".as_ref(), script.as_os_str()])?;
    let first = output(Command::new(&rust_exe).env("PANTO_SESSIONS", &sessions), &mock_process)?;
    expect("rust", &first, &[TOOL_LINE, ANSWER])?;
    let second = output(
        Command::new(&rust_exe)
            .arg("And tomorrow?")
            .env("PANTO_SESSIONS", &sessions),
        &mock_process,
    )?;
    expect(
        "rust (resumed)",
        &second,
        &["[resumed session ", "with 4 messages]", "Tomorrow too."],
    )?;
    println!("examples: c, go and rust ran their turns against the mock");
    Ok(())
}

/// `pkg-config --cflags --libs panto` with `PKG_CONFIG_PATH=dir`.
pub(crate) fn pkg_config(dir: &Path) -> Result<String> {
    let output = Command::new("pkg-config")
        .args(["--cflags", "--libs", "panto"])
        .env("PKG_CONFIG_PATH", dir)
        .output()
        .context("could not run pkg-config (install it: CI's .ci/run does)")?;
    if !output.status.success() {
        bail!(
            "pkg-config cannot find panto in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Runs one example against a fresh mock and checks it printed the scripted turn.
fn check_turn(root: &Path, mock: &Path, name: &str, cmd: &mut Command) -> Result<()> {
    let script = root.join(SCRIPT);
    let mock = MockProcess::start(mock, &["--script".as_ref(), script.as_os_str()])?;
    let printed = output(cmd, &mock)?;
    expect(name, &printed, &[TOOL_LINE, ANSWER])
}

/// What the program printed, pointed at `mock`; fails with its stderr if it fails.
fn output(cmd: &mut Command, mock: &MockProcess) -> Result<String> {
    let line = format!("{cmd:?}");
    let output = cmd
        .env("PANTO_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .output()
        .with_context(|| format!("could not start {line}"))?;
    if !output.status.success() {
        bail!(
            "{line} failed with {}: {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn expect(name: &str, printed: &str, wanted: &[&str]) -> Result<()> {
    for want in wanted {
        if !printed.contains(want) {
            bail!("the {name} example printed {printed:?}, without {want:?}");
        }
    }
    println!("examples: {name} ok");
    Ok(())
}
