//! The real MCP servers the tests run panto against: which ones, at which pinned versions, where
//! they are installed, and how a test finds them.
//!
//! `cargo xtask mcp-servers` (run by `bash .ci/run`) installs them from the package registries
//! into [`dir`]: `@modelcontextprotocol/server-everything` with npm under `npm/`, and
//! `mcp-server-git` with pip into a venv under `venv/`. A test that needs one asks for it with
//! [`everything`] or [`git`], which panic with what to run when it is missing: a real-server test
//! never passes by skipping.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable naming the install directory (default: `<workspace>/target/mcp-servers`).
pub const DIR_ENV: &str = "PANTO_MCP_SERVERS";

/// The npm package of the reference "everything" server, and its pinned version.
pub const EVERYTHING_PACKAGE: (&str, &str) = ("@modelcontextprotocol/server-everything", "2026.8.31");

/// The PyPI package of the reference git server, and its pinned version.
pub const GIT_PACKAGE: (&str, &str) = ("mcp-server-git", "2026.10.19");

/// The install directory: `$PANTO_MCP_SERVERS`, else `target/mcp-servers` of this workspace.
pub fn dir() -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        // This crate lives in <workspace>/crates/panto-testkit.
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .unwrap_or(Path::new("."))
            .join("target/mcp-servers"),
    }
}

/// The `mcp-server-everything` executable (a Node script; its argument picks the transport:
/// `stdio` or `streamableHttp`, which listens on `$PORT`).
///
/// # Panics
/// When it is not installed, with what to run.
pub fn everything() -> PathBuf {
    locate_everything().unwrap_or_else(|why| panic!("{why}"))
}

/// [`everything`], or what to run when it is missing.
pub fn locate_everything() -> Result<PathBuf, String> {
    installed(
        &dir().join("npm/node_modules/.bin/mcp-server-everything"),
        EVERYTHING_PACKAGE,
    )
}

/// The variable `cargo xtask ffi-test` passes the everything server's path to C and Go tests in.
pub const EVERYTHING_ENV: &str = "PANTO_MCP_EVERYTHING";

/// The `mcp-server-git` executable (stdio; `--repository PATH` confines it to one repository).
///
/// # Panics
/// When it is not installed, with what to run.
pub fn git() -> PathBuf {
    installed(&dir().join("venv/bin/mcp-server-git"), GIT_PACKAGE).unwrap_or_else(|why| panic!("{why}"))
}

/// `path` when it exists and the pinned version is the one installed (the stamp `cargo xtask
/// mcp-servers` writes beside it); otherwise what to run.
fn installed(path: &Path, (package, version): (&str, &str)) -> Result<PathBuf, String> {
    let stamp = stamp_file(package);
    let stamped = std::fs::read_to_string(&stamp).unwrap_or_default();
    if !path.exists() || stamped.trim() != version {
        return Err(format!(
            "the real MCP server {package} {version} is not installed at {} (found {}): run \
             `cargo xtask mcp-servers` (bash .ci/run does), or set {DIR_ENV} to where it is installed",
            path.display(),
            if path.exists() {
                format!("version {:?}", stamped.trim())
            } else {
                "nothing".to_owned()
            },
        ));
    }
    Ok(path.to_path_buf())
}

/// Where the installed version of `package` is recorded.
pub fn stamp_file(package: &str) -> PathBuf {
    dir().join(format!("{}.version", package.replace(['/', '@'], "_")))
}

/// A free TCP port on 127.0.0.1 at the time of the call, for a server that takes its port as a
/// setting (the everything server's `PORT`). Another process may take it before the server binds
/// it; tests start the server and wait for its banner, which names a clash.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// A git repository with one commit of `file` holding `text`, made in `dir` with the `git`
/// command (what `mcp-server-git` serves).
pub fn git_repo(dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::create_dir_all(dir).expect("the repository directory");
    std::fs::write(dir.join(file), text).expect("the committed file");
    for args in [
        &["init", "-q"][..],
        &["add", file],
        &[
            "-c",
            "user.name=Panto Test",
            "-c",
            "user.email=test@panto.invalid",
            "commit",
            "-q",
            "-m",
            message,
        ],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .status()
            .expect("running git");
        assert!(status.success(), "git {args:?} failed in {}", dir.display());
    }
}

/// The everything server in its streamable HTTP mode on 127.0.0.1, killed when dropped.
#[derive(Debug)]
pub struct EverythingHttp {
    child: std::process::Child,
    port: u16,
}

impl EverythingHttp {
    /// Starts it on a free port and waits until it says it listens.
    ///
    /// # Panics
    /// When it is not installed, or does not come up (with what it wrote).
    pub fn start() -> EverythingHttp {
        use std::io::{BufRead, BufReader};
        let program = everything();
        let mut last = String::new();
        // A port free a moment ago may be taken before the server binds it; try a few.
        for _ in 0..3 {
            let port = free_port();
            let mut child = Command::new(&program)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
            let stderr = child.stderr.take().expect("piped stderr");
            let mut lines = BufReader::new(stderr).lines();
            let mut said = String::new();
            let up = loop {
                match lines.next() {
                    Some(Ok(line)) => {
                        said.push_str(&line);
                        said.push('\n');
                        if line.contains("listening on port") {
                            break true;
                        }
                    }
                    _ => break false,
                }
            };
            if up {
                // Keep draining its stderr so the server never blocks on a full pipe.
                std::thread::spawn(move || lines.for_each(drop));
                return EverythingHttp { child, port };
            }
            let _ = child.kill();
            let _ = child.wait();
            last = said;
        }
        panic!("the everything server did not start in streamable HTTP mode; it said:\n{last}");
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
