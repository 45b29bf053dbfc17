//! `cargo xtask sdk-check`: checks the mock LLM server against the official Python SDKs.
//!
//! The mock is only useful if what it serves is what the real APIs serve. This task makes a
//! virtualenv under `target/sdk-venv` with the `anthropic` and `openai` packages (reused on later
//! runs), builds and starts `panto-mock`, and runs `tests/sdk-check/check.py` against it: every
//! provider fixture and every scripted builder must pass the SDKs' own event types and streaming
//! helpers, and every error fixture must make the SDK raise `APIStatusError`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::mock::MockProcess;

/// Runs the SDK check from the workspace root; fails when any case fails.
pub fn run(workspace_root: &Path) -> Result<()> {
    let started = Instant::now();
    let target = crate::target_dir(workspace_root);
    let python = prepare(workspace_root)?;

    crate::build_debug(workspace_root)?;

    let fixtures = workspace_root.join("crates/panto-testkit/fixtures/wire");
    let binary = target
        .join("debug")
        .join(format!("panto-mock{}", std::env::consts::EXE_SUFFIX));
    let mock = MockProcess::start(&binary, &["--fixtures".as_ref(), fixtures.as_os_str()])?;
    let script = workspace_root.join("tests/sdk-check/check.py");
    let status = Command::new(&python)
        .arg(&script)
        .arg("--base-url")
        .arg(mock.url())
        .arg("--fixtures")
        .arg(&fixtures)
        // The SDKs warn about model names they consider old; that is noise here.
        .env("PYTHONWARNINGS", "ignore::DeprecationWarning")
        .current_dir(workspace_root)
        .status()
        .with_context(|| format!("could not run {}", script.display()))?;
    drop(mock);
    if !status.success() {
        bail!("the SDK check failed ({status}); the FAIL lines above say which cases and why");
    }
    println!("sdk-check: passed in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Makes the check's virtualenv (`target/sdk-venv`) if it is missing and installs the SDKs if
/// they cannot be imported; returns its Python. `cargo xtask ci` calls it early, beside the
/// compiling steps, since it mostly waits on the package registry.
pub(crate) fn prepare(workspace_root: &Path) -> Result<PathBuf> {
    ensure_venv(&crate::target_dir(workspace_root).join("sdk-venv"))
}

fn ensure_venv(venv: &Path) -> Result<PathBuf> {
    let python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if !python.exists() {
        let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        println!("sdk-check: creating {}", venv.display());
        let status = Command::new(&base)
            .args(["-m", "venv"])
            .arg(venv)
            .status()
            .with_context(|| format!("could not run {base} (set PYTHON to a Python 3 interpreter)"))?;
        if !status.success() {
            bail!(
                "{base} -m venv {} failed with {status} (is the venv module installed?)",
                venv.display()
            );
        }
    }
    let ready = Command::new(&python)
        .args(["-c", "import anthropic, openai"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ready {
        println!("sdk-check: installing anthropic and openai into {}", venv.display());
        let status = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "anthropic",
                "openai",
            ])
            .status()
            .with_context(|| format!("could not run {} -m pip", python.display()))?;
        if !status.success() {
            bail!("pip install anthropic openai failed with {status}");
        }
    }
    Ok(python)
}
