//! `cargo xtask mcp-servers`: installs the real MCP servers the tests run panto against, at the
//! versions `panto_testkit::real_mcp` pins, into its directory (`$PANTO_MCP_SERVERS`, else
//! `target/mcp-servers`).
//!
//! - `@modelcontextprotocol/server-everything` with `npm install --prefix DIR/npm` (needs `npm`);
//! - `mcp-server-git` with pip into the venv `DIR/venv` (needs `python3` with `venv`).
//!
//! A package whose stamp already names its pinned version is left alone, so a second run costs
//! nothing. Both come from the registries npm and pip are configured with.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use panto_testkit::real_mcp;

/// Runs the task.
pub fn main(_root: &Path, args: &[String]) -> Result<()> {
    if let Some(arg) = args.first() {
        anyhow::bail!("mcp-servers takes no arguments, got {arg:?}");
    }
    install()
}

/// Installs whichever pinned server is missing or at another version.
pub fn install() -> Result<()> {
    let dir = real_mcp::dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    let (package, version) = real_mcp::EVERYTHING_PACKAGE;
    if !current(package, version) {
        println!("==> installing {package}@{version} into {}", dir.join("npm").display());
        crate::run(Command::new("npm").args([
            "install",
            "--prefix",
            &dir.join("npm").display().to_string(),
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            &format!("{package}@{version}"),
        ]))?;
        stamp(package, version)?;
    }

    let (package, version) = real_mcp::GIT_PACKAGE;
    if !current(package, version) {
        let venv = dir.join("venv");
        println!("==> installing {package}=={version} into {}", venv.display());
        crate::run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        crate::run(Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &format!("{package}=={version}"),
        ]))?;
        stamp(package, version)?;
    }
    println!("==> MCP servers installed in {}", dir.display());
    Ok(())
}

fn current(package: &str, version: &str) -> bool {
    std::fs::read_to_string(real_mcp::stamp_file(package)).is_ok_and(|s| s.trim() == version)
}

fn stamp(package: &str, version: &str) -> Result<()> {
    let path = real_mcp::stamp_file(package);
    std::fs::write(&path, format!("{version}\n")).with_context(|| format!("writing {}", path.display()))
}
