//! A running `panto-mock` process, shared by `sdk-check`, `ffi-test` and `crash-test`.
//!
//! The mock prints `PORT=<n>` as its first line and serves until its stdin closes, so it dies
//! with xtask even when xtask is killed; dropping a [`MockProcess`] closes its stdin, gives it a
//! grace period to exit and then kills it.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long a dropped mock may take to exit after its stdin closes before it is killed.
const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// A running `panto-mock`, stopped on drop (stdin closed, then killed if it outlives its grace).
pub(crate) struct MockProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    port: u16,
    grace: Duration,
}

impl MockProcess {
    /// Starts `binary` with `args` and reads its `PORT=<n>` handshake line.
    pub(crate) fn start(binary: &Path, args: &[&OsStr]) -> Result<Self> {
        let mut child = Command::new(binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("could not start {}", binary.display()))?;
        let stdin = child.stdin.take();
        let mut line = String::new();
        let read = match child.stdout.take() {
            Some(stdout) => BufReader::new(stdout).read_line(&mut line),
            None => Ok(0),
        };
        let port = line.trim().strip_prefix("PORT=").and_then(|p| p.parse::<u16>().ok());
        match (read, port) {
            (Ok(_), Some(port)) => Ok(MockProcess {
                child,
                stdin,
                port,
                grace: DEFAULT_GRACE,
            }),
            (read, _) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "panto-mock did not print PORT=<n> first (read {line:?}, {:?})",
                    read.err()
                )
            }
        }
    }

    /// Sets how long the mock may take to exit on drop, once its stdin is closed, before it is
    /// killed (5 s unless set; zero kills it at once unless it has already exited).
    pub(crate) fn with_stop_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The listening port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The base URL, `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + self.grace;
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
