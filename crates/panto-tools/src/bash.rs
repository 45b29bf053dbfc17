//! `bash`: run a command with `bash -c` in the working directory.
//!
//! The command runs in its own process group, marked so its descendants can be found (see
//! [`crate::processes`]). When bash ends, or times out, or the turn is cancelled, everything it
//! started and left running is killed, background jobs and `setsid` escapes included, and the
//! result says what was killed and what could not be. Output is capped; the result states the cap
//! when it cut something, so the model knows it saw only part.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::child::{self, ChildSetup};
use crate::preview::Preview;
use crate::{one_line, parse_input, processes, running, ToolContext, ToolName};

/// The longest timeout the model may ask for.
const MAX_TIMEOUT_SECS: u64 = 600;
/// How long to wait for output after bash exits, in case a background process keeps it open.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Sees `bash`'s output while the command runs, set in [`crate::Options::bash_progress`]: an
/// interactive front end shows the last line live. Called from the tasks reading the command's
/// stdout and stderr, with each chunk as it arrives (raw bytes: untrusted, not split on lines
/// or characters); chunks of calls running at the same time interleave. It must return quickly,
/// since the command's output waits for it. What it sees is never capped, so it should keep only
/// what it shows; the result the model gets is unaffected.
pub trait BashProgress: Send + Sync + std::fmt::Debug {
    /// The next chunk of stdout or stderr.
    fn output(&self, chunk: &[u8]);
}

/// The `bash` tool.
#[derive(Debug)]
pub(crate) struct BashTool {
    ctx: ToolContext,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    command: String,
    timeout_secs: Option<u64>,
}

impl BashTool {
    /// A bash tool over `ctx`.
    pub(crate) fn new(ctx: ToolContext) -> Self {
        BashTool { ctx }
    }
}

/// The first `cap` bytes of a stream, and how many bytes it had in all.
#[derive(Debug, Default)]
struct Captured {
    head: Vec<u8>,
    total: usize,
}

/// Reads `reader` to its end into `sink`, keeping at most `cap` bytes (so a flood of output cannot
/// exhaust memory) and counting the rest. The sink is shared so that what arrived is still there
/// when the reader is abandoned.
async fn capture<R: AsyncRead + Unpin>(
    mut reader: R,
    cap: usize,
    sink: Arc<Mutex<Captured>>,
    progress: Option<Arc<dyn BashProgress>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Some(progress) = &progress {
                    progress.output(&buf[..n]);
                }
                let mut captured = sink.lock().unwrap_or_else(|e| e.into_inner());
                captured.total += n;
                let room = cap.saturating_sub(captured.head.len());
                captured.head.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

/// A stream being captured: the reader task and its sink.
struct Capture {
    task: tokio::task::JoinHandle<()>,
    sink: Arc<Mutex<Captured>>,
}

impl Capture {
    fn start<R: AsyncRead + Unpin + Send + 'static>(
        reader: Option<R>,
        cap: usize,
        progress: Option<Arc<dyn BashProgress>>,
    ) -> Option<Capture> {
        let sink = Arc::new(Mutex::new(Captured::default()));
        let task = tokio::spawn(capture(reader?, cap, sink.clone(), progress));
        Some(Capture { task, sink })
    }
}

/// Waits up to [`DRAIN_GRACE`] for a stream to end. Returns what it captured, and whether the
/// stream was still open when the wait gave up.
async fn drain(capture: Option<Capture>) -> (Captured, bool) {
    let Some(mut capture) = capture else {
        return (Captured::default(), false);
    };
    let open = tokio::time::timeout(DRAIN_GRACE, &mut capture.task).await.is_err();
    if open {
        capture.task.abort();
    }
    let captured = std::mem::take(&mut *capture.sink.lock().unwrap_or_else(|e| e.into_inner()));
    (captured, open)
}

/// How the command ended.
enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Cancelled,
}

/// The processes of one call, killed when the guard is dropped: a call abandoned mid-run (its task
/// aborted) still leaves nothing behind. The normal path cleans up with a report and disarms it.
struct Leftovers(Option<processes::Call>);

impl Leftovers {
    /// Kills what the call left running and reports it; blocking work, so off the runtime.
    async fn clean_up(&mut self) -> processes::Cleanup {
        let Some(call) = self.0.take() else {
            return processes::Cleanup::default();
        };
        tokio::task::spawn_blocking(move || call.clean_up())
            .await
            .unwrap_or_default()
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if let Some(call) = &self.0 {
            call.kill_now();
        }
    }
}

/// Assembles the result text: stdout, then stderr under a marker, then the exit status and what
/// the cap cut.
fn render(stdout: &Captured, stderr: &Captured, ending: &str, cap: usize, notes: &[String]) -> String {
    let mut out = String::new();
    let mut shown = 0usize;
    let out_text = String::from_utf8_lossy(&stdout.head);
    let take = |text: &str, room: usize| -> String { crate::cut_at(text, room).to_owned() };
    let part = take(&out_text, cap);
    shown += part.len();
    out.push_str(&part);
    let err_text = String::from_utf8_lossy(&stderr.head);
    if !err_text.is_empty() {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("[stderr]\n");
        let part = take(&err_text, cap.saturating_sub(shown));
        shown += part.len();
        out.push_str(&part);
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let total = stdout.total + stderr.total;
    if total > shown {
        out.push_str(&format!(
            "[output truncated: {shown} of {total} bytes shown; bash output is capped at {cap} bytes]\n"
        ));
    }
    for note in notes {
        out.push_str(note);
        out.push('\n');
    }
    out.push_str(ending);
    out
}

#[async_trait]
impl Tool for BashTool {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: ToolName::Bash.as_str().into(),
            description: format!(
                "Run a shell command with `bash -c` in the working directory, with no standard input. Returns \
                 stdout, then stderr, then the exit code. Output beyond {} bytes is cut (the result says so). \
                 The command is killed after `timeout_secs` (default {}, at most {MAX_TIMEOUT_SECS}). \
                 Processes it leaves running in the background are killed when it ends.",
                self.ctx.max_output_bytes,
                self.ctx.bash_timeout.as_secs()
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS,
                                      "description": "Seconds before the command is killed."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let (input, timeout) = prepare(&self.ctx, &call.input)?;

        let _running = running::global().start(format!("bash {}", one_line(&input.command, 80)));
        let marker = processes::new_marker();
        let mut command = std::process::Command::new("bash");
        command
            .arg("-c")
            .arg(&input.command)
            .current_dir(&self.ctx.cwd)
            .env(processes::MARKER_VAR, &marker)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The provider keys stay with panto: a command that prints one would put it into the
        // result the model reads and the session.
        crate::options::scrub_key_variables(&mut command, &self.ctx.scrub_env);
        let setup = ChildSetup::new(self.ctx.bash_sandbox(&input.command).as_ref().clone());
        let mut group = child::spawn(command, &setup)
            .map_err(|e| format!("cannot start bash: {}", child::explain_spawn_error(&e)))?;
        // bash leads its own group, so the group id is its pid.
        let mut leftovers = Leftovers(group.group().map(|pid| processes::Call::new(pid, marker)));
        let child = group.child();
        let cap = self.ctx.max_output_bytes;
        let progress = &self.ctx.bash_progress;
        let stdout = Capture::start(child.stdout.take(), cap, progress.clone());
        let stderr = Capture::start(child.stderr.take(), cap, progress.clone());

        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => Ending::Exited(status),
                Err(e) => return Err(format!("waiting for bash failed: {e}").into()),
            },
            _ = tokio::time::sleep(timeout) => Ending::TimedOut(timeout),
            _ = call.cancel.cancelled() => Ending::Cancelled,
        };
        if !matches!(ending, Ending::Exited(_)) {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        // Whatever bash left behind dies now, before the output is collected: a background job
        // that still holds the pipes would otherwise only delay the result.
        let cleanup = leftovers.clean_up().await;

        // An unkillable process may still hold the pipes; wait briefly, then report what arrived
        // rather than hang the turn.
        let (out, out_open) = drain(stdout).await;
        let (err, err_open) = drain(stderr).await;
        let mut notes: Vec<String> = cleanup.note().into_iter().collect();
        if out_open || err_open {
            notes.push("[a process still holds the output open; it was not waited for]".to_owned());
        }

        let (ending_text, is_error) = match ending {
            Ending::Exited(status) => match status.code() {
                Some(0) => ("[exit code 0]".to_owned(), false),
                Some(code) => (format!("[exit code {code}]"), true),
                None => ("[killed by a signal]".to_owned(), true),
            },
            Ending::TimedOut(t) => (format!("[timed out after {}s; bash was killed]", t.as_secs()), true),
            Ending::Cancelled => (
                "[cancelled: the turn was interrupted; bash was killed]".to_owned(),
                true,
            ),
        };
        let text = render(&out, &err, &ending_text, cap, &notes);
        Ok(ToolCallResult {
            parts: vec![panto_core::ResultPart::Text(text)],
            is_error,
        })
    }
}

/// A bash call's arguments checked as the tool checks them, with the timeout it runs under.
fn prepare(ctx: &ToolContext, raw: &serde_json::Value) -> Result<(Input, Duration), ToolError> {
    let input: Input = parse_input(ToolName::Bash, raw)?;
    if input.command.trim().is_empty() {
        return Err("the command is empty".into());
    }
    let timeout = match input.timeout_secs {
        Some(0) => return Err("timeout_secs must be at least 1".into()),
        Some(s) => Duration::from_secs(s.min(MAX_TIMEOUT_SECS)),
        None => ctx.bash_timeout,
    };
    Ok((input, timeout))
}

/// What a bash call would run ([`crate::Toolbox::preview`]): the whole command, so a question
/// shows every character that will run (the CLI's asker makes them all visible). `Err` is the
/// error the call would end with.
pub(crate) fn preview(ctx: &ToolContext, raw: &serde_json::Value) -> Result<Preview, String> {
    let (input, _) = prepare(ctx, raw).map_err(|e| e.to_string())?;
    Ok(Preview {
        summary: input.command,
        change: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use panto_core::CancellationToken;

    use super::*;
    use crate::testing::{call, call_with, context, text};
    use crate::{Approval, ToolName as Name};

    fn tool(dir: &std::path::Path) -> BashTool {
        BashTool::new(context(dir))
    }

    #[tokio::test]
    async fn runs_in_the_working_directory_and_reports_both_streams() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "").unwrap();
        let r = call(&tool(dir.path()), json!({"command": "ls; echo oops >&2; exit 3"})).await;
        let t = text(&r);
        assert!(r.is_error);
        assert!(t.starts_with("marker\n[stderr]\noops\n"), "{t}");
        assert!(t.ends_with("[exit code 3]"), "{t}");
    }

    #[tokio::test]
    async fn output_is_capped_and_the_cap_is_stated() {
        let dir = tempfile::tempdir().unwrap();
        let r = call(
            &tool(dir.path()),
            json!({"command": "head -c 100000 /dev/zero | tr '\\0' x"}),
        )
        .await;
        let t = text(&r);
        assert!(!r.is_error, "{t}");
        assert!(t.contains("4096 of 100000 bytes shown"), "{t}");
        assert!(t.contains("capped at 4096 bytes"), "{t}");
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let r = call(
            &tool(dir.path()),
            json!({"command": "sleep 30 | cat; echo never", "timeout_secs": 1}),
        )
        .await;
        let t = text(&r);
        assert!(r.is_error && t.contains("timed out after 1s"), "{t}");
        assert!(!t.contains("never"), "{t}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn cancel_stops_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let r = call_with(&tool(dir.path()), json!({"command": "sleep 30"}), cancel).await;
        assert!(r.is_error && text(&r).contains("cancelled"), "{}", text(&r));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// Whether `pid` is alive; a zombie has ended.
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !matches!(
                stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()),
                Some('Z')
            )
        })
    }

    #[tokio::test]
    async fn nothing_the_command_started_outlives_the_call_and_the_result_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let r = call(
            &tool(dir.path()),
            json!({"command": "sleep 1000 & echo $! > a; setsid sleep 1000 & echo $! > b; echo ok"}),
        )
        .await;
        let t = text(&r);
        let pids: Vec<i32> = ["a", "b"]
            .iter()
            .map(|f| {
                std::fs::read_to_string(dir.path().join(f))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(!r.is_error, "{t}");
        assert!(
            t.starts_with("ok\n[killed 2 processes the command left running: pid "),
            "{t}"
        );
        for pid in pids {
            assert!(!alive(pid), "{pid} survived: {t}");
            assert!(t.contains(&pid.to_string()), "{t}");
        }
        assert!(t.ends_with("[exit code 0]"), "{t}");
    }

    /// Collects what the progress hook saw.
    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<u8>>);

    impl BashProgress for Seen {
        fn output(&self, chunk: &[u8]) {
            self.0.lock().unwrap().extend_from_slice(chunk);
        }
    }

    #[tokio::test]
    async fn the_progress_hook_sees_both_streams_uncapped() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Seen::default());
        let mut ctx = context(dir.path());
        ctx.bash_progress = Some(seen.clone());
        let r = call(
            &BashTool::new(ctx),
            json!({"command": "echo out; echo err >&2; head -c 10000 /dev/zero | tr '\\0' x"}),
        )
        .await;
        assert!(text(&r).contains("4096 of 10008 bytes shown"), "{}", text(&r));
        let seen = String::from_utf8(seen.0.lock().unwrap().clone()).unwrap();
        assert!(seen.contains("out\n") && seen.contains("err\n"), "{seen}");
        assert_eq!(seen.len(), 10008, "{seen}");
    }

    #[tokio::test]
    async fn read_only_refuses_to_run() {
        let dir = tempfile::tempdir().unwrap();
        let t = crate::testing::guarded(Name::Bash, dir.path(), Approval::ReadOnly);
        let r = call(t.as_ref(), json!({"command": "touch made"})).await;
        assert!(r.is_error && text(&r).contains("read-only"));
        assert!(!dir.path().join("made").exists());
    }
}
