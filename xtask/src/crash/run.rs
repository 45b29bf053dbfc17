//! Running `panto` once, and SIGKILLing it at a chosen moment.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

/// When to kill the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// Let it finish.
    Never,
    /// SIGKILL as soon as this many complete stdout lines have arrived.
    AfterLines(usize),
    /// SIGKILL this long after the start.
    AfterDelay(Duration),
    /// SIGKILL as soon as the `nth` stdout line of this `type` has arrived: right at a boundary
    /// where the process is about to persist or run something.
    AfterEvent(&'static str, usize),
    /// SIGKILL this long after the steer was written to stdin (never, if it was not).
    AfterSteer(Duration),
}

/// What the run reads on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feed {
    /// Nothing: stdin is `/dev/null`.
    Nothing,
    /// A pipe closed at once (end of input before the run starts).
    Closed,
    /// A pipe that gets `line` (and then its end) right after the `nth` stdout line of type
    /// `kind`, or after the first `turn_complete`, whichever comes first.
    Steer {
        /// The event type.
        kind: &'static str,
        /// Which one of them.
        nth: usize,
        /// The stdin line, without its line end.
        line: String,
    },
}

impl std::fmt::Display for Kill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kill::Never => write!(f, "no kill"),
            Kill::AfterLines(n) => write!(f, "kill after {n} lines"),
            Kill::AfterDelay(d) => write!(f, "kill after {} ms", d.as_millis()),
            Kill::AfterEvent(kind, n) => write!(f, "kill at {kind} #{n}"),
            Kill::AfterSteer(d) => write!(f, "kill {} ms after the steer", d.as_millis()),
        }
    }
}

/// What one run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Everything written to stdout before the process died or exited.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: String,
    /// When the kill was sent (time since the start) and how many lines had arrived then, if
    /// the process was still running at that moment.
    pub killed: Option<(Duration, usize)>,
    /// The exit code, when the process exited by itself.
    pub code: Option<i32>,
    /// How long the process lived.
    pub elapsed: Duration,
    /// When the steer was written to stdin (time since the start), if it was.
    pub steered: Option<Duration>,
    /// The wall clock (milliseconds since the Unix epoch) when the kill was sent.
    pub killed_wall_ms: Option<u128>,
}

/// How `panto` is started: the binary, the working directory and a private home, so nothing of
/// the developer's own configuration or keys can leak in.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The `panto` binary.
    pub binary: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
    /// HOME and the XDG base directories live under this.
    pub home: PathBuf,
}

/// The longest a run may take before it counts as hung.
const HANG: Duration = Duration::from_secs(60);

impl Launcher {
    /// Runs `panto args`, killing it as `kill` says. Stderr goes to `stderr_file`.
    pub fn run(&self, args: &[&str], kill: Kill, feed: &Feed, stderr_file: &Path) -> Result<Outcome> {
        let stderr = File::create(stderr_file).with_context(|| format!("creating {}", stderr_file.display()))?;
        let env = [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", self.home.display().to_string()),
            ("XDG_CONFIG_HOME", self.home.join("config").display().to_string()),
            ("XDG_DATA_HOME", self.home.join("data").display().to_string()),
            ("XDG_STATE_HOME", self.home.join("state").display().to_string()),
            ("NO_COLOR", "1".to_owned()),
        ];
        let started = Instant::now();
        let mut child = Command::new(&self.binary)
            .args(args)
            .env_clear()
            .envs(env)
            .current_dir(&self.cwd)
            .stdin(if *feed == Feed::Nothing {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .with_context(|| format!("could not start {}", self.binary.display()))?;
        let mut stdin = child.stdin.take();
        if *feed == Feed::Closed {
            stdin = None;
        }
        let mut steered: Option<Duration> = None;
        let mut steer_events = 0usize;
        let mut killed_wall_ms = None;
        let mut stdout = child.stdout.take().context("panto has no stdout pipe")?;
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });

        let mut out = Vec::new();
        let mut killed = None;
        let mut hung = false;
        let (mut lines, mut scanned, mut events) = (0usize, 0usize, 0usize);
        loop {
            let elapsed = started.elapsed();
            while let Some(end) = out[scanned..].iter().position(|&b| b == b'\n') {
                let kind_of_line = line_type(&out[scanned..scanned + end]);
                if let Kill::AfterEvent(kind, _) = kill {
                    if kind_of_line == Some(kind) {
                        events += 1;
                    }
                }
                if let Feed::Steer { kind, nth, line } = feed {
                    if kind_of_line == Some(*kind) {
                        steer_events += 1;
                    }
                    let due = steer_events >= *nth || kind_of_line == Some("turn_complete");
                    if due && steered.is_none() {
                        if let Some(mut pipe) = stdin.take() {
                            // A run that already ended cannot take it; that is no failure.
                            let _ = pipe.write_all(format!("{line}\n").as_bytes());
                            steered = Some(started.elapsed());
                        }
                    }
                }
                lines += 1;
                scanned += end + 1;
            }
            let due = killed.is_none()
                && match kill {
                    Kill::Never => false,
                    Kill::AfterLines(n) => lines >= n,
                    Kill::AfterDelay(d) => elapsed >= d,
                    Kill::AfterEvent(_, n) => events >= n,
                    Kill::AfterSteer(d) => steered.is_some_and(|at| elapsed >= at + d),
                };
            if due || (elapsed >= HANG && killed.is_none()) {
                hung = !due;
                // Only a process that has not exited yet can be killed; kill() on a reaped
                // child is an error, on an unreaped zombie it is harmless.
                if child.try_wait().ok().flatten().is_none() {
                    let _ = child.kill();
                    killed_wall_ms = SystemTime::now().duration_since(UNIX_EPOCH).ok().map(|d| d.as_millis());
                    killed = Some((elapsed, lines));
                } else {
                    killed = None;
                }
                if hung {
                    break;
                }
            }
            let wait = match kill {
                Kill::AfterDelay(d) if killed.is_none() => d.saturating_sub(elapsed).min(Duration::from_millis(50)),
                Kill::AfterSteer(d) if killed.is_none() => steered
                    .map_or(Duration::from_millis(50), |at| (at + d).saturating_sub(elapsed))
                    .min(Duration::from_millis(50)),
                _ => Duration::from_millis(50),
            };
            match rx.recv_timeout(wait) {
                Ok(chunk) => out.extend_from_slice(&chunk),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        drop(stdin);
        let status = child.wait().context("waiting for panto")?;
        let elapsed = started.elapsed();
        while let Ok(chunk) = rx.recv() {
            out.extend_from_slice(&chunk);
        }
        let _ = reader.join();
        if hung {
            bail!("panto did not finish within {} s", HANG.as_secs());
        }
        let stderr = std::fs::read_to_string(stderr_file).unwrap_or_default();
        Ok(Outcome {
            stdout: out,
            stderr,
            killed: if status.code().is_some() { None } else { killed },
            code: status.code(),
            elapsed,
            steered,
            killed_wall_ms: if status.code().is_some() { None } else { killed_wall_ms },
        })
    }
}

/// The `type` of a stream-json line, if it is one docs/cli.md defines.
fn line_type(line: &[u8]) -> Option<&'static str> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let kind = value.get("type")?.as_str()?;
    super::stream::EVENT_TYPES.iter().copied().find(|k| *k == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_types_are_recognised() {
        assert_eq!(
            line_type(br#"{"stop_reason":"tool_use","type":"message_complete","usage":null}"#),
            Some("message_complete")
        );
        assert_eq!(line_type(br#"{"type":"tool_start","id":"a"}"#), Some("tool_start"));
        assert_eq!(
            line_type(br#"{"text":"\"type\":\"tool_start\"","type":"text_delta"}"#),
            Some("text_delta")
        );
        assert_eq!(line_type(b"{}"), None);
        assert_eq!(line_type(br#"{"type":"bookmark"}"#), None);
        assert_eq!(line_type(br#"{"type":"tool_st"#), None);
    }
}
