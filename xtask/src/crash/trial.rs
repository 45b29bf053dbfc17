//! One trial: a run killed at a random moment, the checks on what it left, and the resume.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use panto_core::{ContentBlock, Message, Role, Session, SessionStore, ToolResultContent};
use panto_store_fs::JsonlStore;
use serde_json::Value;

use super::format::{self, LogFile};
use super::mock::Mock;
use super::run::{Kill, Launcher, Outcome};
use super::script::{self, Style};
use super::stream::{self, Transcript};

/// The text every interrupted-turn closer starts with (panto-core's `INTERRUPTED_RESULT`).
const CLOSER_PREFIX: &str = "interrupted:";

/// What the harness shares between trials.
pub struct Harness<'a> {
    /// The `panto` binary.
    pub panto: &'a Path,
    /// The mock server.
    pub mock: &'a Mock,
    /// Loads sessions with the real store.
    pub runtime: &'a tokio::runtime::Runtime,
}

/// One trial's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The trial number (0 for the calibration runs).
    pub n: u64,
    /// The API style.
    pub style: Style,
    /// When the first run is killed.
    pub kill: Kill,
    /// The trial's directory (created fresh).
    pub dir: PathBuf,
}

/// What a passing trial found.
#[derive(Debug, Clone)]
pub struct Passed {
    /// One line for the log.
    pub summary: String,
    /// The first run, for calibration.
    pub first: Transcript,
    /// How long the first run lived.
    pub first_elapsed: std::time::Duration,
    /// How many provider requests the first run made.
    pub first_requests: usize,
    /// Where the kill landed ([`Transcript::phase`]), or `None` when the run finished first.
    pub phase: Option<&'static str>,
    /// How many tool calls the kill left pending (closed by the resume).
    pub pending: usize,
}

/// A failed trial: what was wrong, and everything needed to see why.
#[derive(Debug)]
pub struct Failed {
    /// The first problem found.
    pub problem: String,
    /// The session file, the stream-json and stderr of each run, and the requests.
    pub evidence: String,
}

/// Everything a trial collects, for the failure report.
#[derive(Default)]
struct Evidence {
    session_file: Option<PathBuf>,
    first_session_bytes: Option<Vec<u8>>,
    runs: Vec<(&'static str, Outcome)>,
    requests: Vec<Value>,
}

impl Evidence {
    fn render(&self) -> String {
        let mut out = String::new();
        for (name, run) in &self.runs {
            out.push_str(&format!(
                "--- {name} run: exit {:?}, killed {:?}, {} ms; stream-json:\n{}",
                run.code,
                run.killed
                    .map(|(at, lines)| format!("at {} ms after {lines} lines", at.as_millis())),
                run.elapsed.as_millis(),
                String::from_utf8_lossy(&run.stdout)
            ));
            if !run.stdout.ends_with(b"\n") {
                out.push_str("\n(no line end: torn last line)\n");
            }
            out.push_str(&format!("--- {name} run stderr:\n{}\n", run.stderr));
        }
        if let Some(bytes) = &self.first_session_bytes {
            out.push_str(&format!(
                "--- session file after the killed run:\n{}\n",
                String::from_utf8_lossy(bytes)
            ));
        }
        if let Some(path) = &self.session_file {
            match std::fs::read(path) {
                Ok(bytes) => out.push_str(&format!(
                    "--- session file now ({}):\n{}\n",
                    path.display(),
                    String::from_utf8_lossy(&bytes)
                )),
                Err(e) => out.push_str(&format!("--- session file {}: {e}\n", path.display())),
            }
        }
        for r in &self.requests {
            out.push_str(&format!(
                "--- request {} {} ({}): validation {}\n",
                r["index"],
                r["path"],
                run_tag(r).unwrap_or("untagged"),
                r["validation"]
            ));
        }
        out
    }
}

/// Runs trial `plan`.
pub fn run(ctx: &Harness<'_>, plan: &Plan) -> Result<Passed, Failed> {
    let mut evidence = Evidence::default();
    match run_inner(ctx, plan, &mut evidence) {
        Ok(passed) => Ok(passed),
        Err(e) => Err(Failed {
            problem: format!("{e:#}"),
            evidence: evidence.render(),
        }),
    }
}

fn run_inner(ctx: &Harness<'_>, plan: &Plan, ev: &mut Evidence) -> Result<Passed> {
    let dir = &plan.dir;
    let (work, sessions, home) = (dir.join("work"), dir.join("sessions"), dir.join("home"));
    for d in [&work, &sessions, &home] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(work.join("notes.txt"), script::NOTES).context("writing notes.txt")?;
    let first_tag = format!("t{}-first", plan.n);
    let resume_tag = format!("t{}-resume", plan.n);
    let first_config = dir.join("first.toml");
    let resume_config = dir.join("resume.toml");
    std::fs::write(&first_config, script::config(plan.style, ctx.mock.port(), &first_tag))?;
    std::fs::write(&resume_config, script::config(plan.style, ctx.mock.port(), &resume_tag))?;
    let launcher = Launcher {
        binary: ctx.panto.to_path_buf(),
        cwd: work,
        home,
    };
    let path_str = |p: &Path| p.display().to_string();
    let (first_config, resume_config, sessions_arg) =
        (path_str(&first_config), path_str(&resume_config), path_str(&sessions));

    // The killed run.
    ctx.mock.reset()?;
    ctx.mock.push(&script::first_run(plan.style))?;
    let common = [
        "--session-dir",
        &sessions_arg,
        "--output-format",
        "stream-json",
        "--approve",
        "auto",
    ];
    let mut args = vec!["--config", &first_config, "-p", script::PROMPT];
    args.extend(common);
    let first = launcher.run(&args, plan.kill, &dir.join("first.stderr"))?;
    ev.runs.push(("first", first.clone()));
    let first_requests = ctx.mock.requests()?;
    ev.requests.clone_from(&first_requests);
    check_requests_valid(&first_requests)?;
    let t1 = stream::parse(&first.stdout).map_err(|e| anyhow!("the killed run: {e}"))?;
    let kill_text = match first.killed {
        Some((at, lines)) => format!("killed at {} ms after {lines} lines, {}", at.as_millis(), t1.phase()),
        None => format!("finished in {} ms", first.elapsed.as_millis()),
    };
    if first.killed.is_none() {
        if first.code != Some(0) || !t1.succeeded() || !t1.turn_complete {
            return Err(anyhow!(
                "the run was not killed but did not succeed (exit {:?})",
                first.code
            ));
        }
        if t1.torn_tail.is_some() {
            return Err(anyhow!("a run that exited by itself left a torn stream-json line"));
        }
    }
    let phase = first.killed.map(|_| t1.phase());
    let passed = |summary: String, pending: usize| Passed {
        summary,
        first: t1.clone(),
        first_elapsed: first.elapsed,
        first_requests: first_requests.len(),
        phase,
        pending,
    };

    let Some(id) = t1.session_id.clone() else {
        let files = std::fs::read_dir(&sessions).map(Iterator::count).unwrap_or(0);
        if files > 0 {
            return Err(anyhow!(
                "killed before the session line, yet {files} session files exist"
            ));
        }
        return Ok(passed(
            format!("{kill_text}: before the session line; nothing written"),
            0,
        ));
    };
    let file = sessions.join(format!("{id}.jsonl"));
    ev.session_file = Some(file.clone());
    if !file.exists() {
        if t1.committed_anything() {
            return Err(anyhow!(
                "the run reported committed messages but left no session file {}",
                file.display()
            ));
        }
        return Ok(passed(
            format!("{kill_text}: before the first commit; no session file"),
            0,
        ));
    }
    let bytes1 = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    ev.first_session_bytes = Some(bytes1.clone());
    let log1 = format::check(&bytes1, &id).map_err(|e| anyhow!("{}: format check: {e}", file.display()))?;
    let store = JsonlStore::new(&sessions);
    if !log1.has_header {
        // Killed between creating the file and writing its first batch: nothing was
        // committed, and listing must go on working without listing a session. An empty file
        // (the only kind a kill can leave: a batch is one `write`) is no session at all, so it
        // is not reported either, and resolving its id finds nothing.
        if t1.committed_anything() {
            return Err(anyhow!(
                "the run reported committed messages but the session file has no header"
            ));
        }
        let (listed, problems) = ctx
            .runtime
            .block_on(store.list_with_problems())
            .map_err(|e| anyhow!("listing fails over a session file without a header: {e}"))?;
        if listed.iter().any(|info| info.id == id) {
            return Err(anyhow!("a session file without a header is listed as a session"));
        }
        if bytes1.is_empty() {
            if let Some((path, e)) = problems.first() {
                return Err(anyhow!(
                    "an empty session file is reported as a problem: {}: {e}",
                    path.display()
                ));
            }
            let resolved = ctx
                .runtime
                .block_on(Session::resolve(store.clone(), &id))
                .map_err(|e| anyhow!("resolving the id of an empty session file: {e}"))?;
            if resolved.is_some() {
                return Err(anyhow!("an empty session file resolves as a session"));
            }
        }
        return Ok(passed(
            format!(
                "{kill_text}: killed inside the first write; {} byte(s), nothing committed",
                bytes1.len()
            ),
            0,
        ));
    }
    check_load(ctx, &store, &id, &log1)?;
    let committed = check_committed(&t1, &log1, script::PROMPT, script::SUMMARY, first.killed.is_some())?;
    let view1 = log1.view().map_err(|e| anyhow!(e))?;
    let pending = format::unanswered_calls(&view1);

    // The resume.
    ctx.mock.reset()?;
    ctx.mock.push(&script::resume(plan.style))?;
    let mut args = vec!["--config", &resume_config, "-r", &id, "-p", script::RESUME_PROMPT];
    args.extend(common);
    let second = launcher.run(&args, Kill::Never, &dir.join("resume.stderr"))?;
    ev.runs.push(("resume", second.clone()));
    let all_requests = ctx.mock.requests()?;
    ev.requests.extend(all_requests.iter().cloned());
    check_requests_valid(&all_requests)?;
    let t2 = stream::parse(&second.stdout).map_err(|e| anyhow!("the resume: {e}"))?;
    if second.code != Some(0) || !t2.succeeded() {
        return Err(anyhow!("the resume failed (exit {:?})", second.code));
    }
    if t2.session_id.as_deref() != Some(id.as_str()) || !t2.resumed {
        return Err(anyhow!("the resume did not report session {id} as resumed"));
    }
    let resume_requests: Vec<&Value> = all_requests
        .iter()
        .filter(|r| run_tag(r) == Some(resume_tag.as_str()))
        .collect();
    check_closer_sent(plan.style, &resume_requests, &pending)?;

    let bytes2 = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    if !bytes2.starts_with(&bytes1[..log1.committed_bytes]) {
        return Err(anyhow!("the resume rewrote committed bytes of the session file"));
    }
    let log2 =
        format::check(&bytes2, &id).map_err(|e| anyhow!("{} after the resume: format check: {e}", file.display()))?;
    if log2.torn_bytes > 0 {
        return Err(anyhow!("the session file ends in a torn line after a clean resume"));
    }
    check_load(ctx, &store, &id, &log2)?;
    check_committed(&t1, &log2, script::PROMPT, script::SUMMARY, true)
        .context("after the resume, the killed run's messages")?;
    check_committed(&t2, &log2, script::RESUME_PROMPT, script::RESUME_ANSWER, false)
        .context("the resume's own messages")?;
    check_closer_logged(&log1, &log2, &pending)?;

    let pending_text = if pending.is_empty() {
        String::new()
    } else {
        format!("; closed {} pending call(s)", pending.len())
    };
    Ok(passed(
        format!(
            "{kill_text}: {} entries, {committed} committed message(s){pending_text}; resume ok ({} request(s))",
            log1.entries.len(),
            resume_requests.len()
        ),
        pending.len(),
    ))
}

/// The run tag a request carries in its [`script::RUN_HEADER`].
fn run_tag(request: &Value) -> Option<&str> {
    request["headers"]
        .as_array()?
        .iter()
        .find(|h| h[0].as_str() == Some(script::RUN_HEADER))
        .and_then(|h| h[1].as_str())
}

/// Every request panto sent must be one the real API would accept.
fn check_requests_valid(requests: &[Value]) -> Result<()> {
    for r in requests {
        if !r["validation"].is_null() {
            return Err(anyhow!(
                "request {} ({}) is not valid for the API: {}",
                r["index"],
                run_tag(r).unwrap_or("untagged"),
                r["validation"]
            ));
        }
    }
    Ok(())
}

/// The store must load the session, and return exactly the view the specification's replay
/// gives.
fn check_load(ctx: &Harness<'_>, store: &Arc<JsonlStore>, id: &str, log: &LogFile) -> Result<()> {
    let loaded = ctx
        .runtime
        .block_on(store.load(id))
        .map_err(|e| anyhow!("the session does not load: {e}"))?
        .ok_or_else(|| anyhow!("the store does not find session {id}"))?;
    let view = log.view().map_err(|e| anyhow!(e))?;
    if loaded.messages.len() != view.len() {
        return Err(anyhow!(
            "load returned {} messages, the replayed log {}",
            loaded.messages.len(),
            view.len()
        ));
    }
    for (i, (got, want)) in loaded.messages.iter().zip(&view).enumerate() {
        if got != *want {
            return Err(anyhow!(
                "load's message {i} differs from the replayed log:\n  load: {}\n  log:  {}",
                json(got),
                json(want)
            ));
        }
    }
    Ok(())
}

fn json(m: &Message) -> String {
    serde_json::to_string(m).unwrap_or_else(|e| format!("(unserialisable: {e})"))
}

/// Every message the run reported as committed is in the log, by content, and every compaction
/// summary it wrote is `summary`. `killed` allows one
/// message (or compaction) more in the log than reported: one persisted just before the kill.
/// Returns how many assistant messages were reported.
fn check_committed(t: &Transcript, log: &LogFile, prompt: &str, summary: &str, killed: bool) -> Result<usize> {
    let history: Vec<&Message> = log.messages().collect();
    let start = history.iter().rposition(|m| m.is_human_prompt() && m.text() == prompt);
    let Some(start) = start else {
        if t.committed_anything() {
            return Err(anyhow!(
                "the run committed messages but its prompt {prompt:?} is not in the log"
            ));
        }
        return Ok(0);
    };
    // The run's messages: from its prompt to the next human prompt (a later run's).
    let end = history[start + 1..]
        .iter()
        .position(|m| m.is_human_prompt())
        .map_or(history.len(), |i| start + 1 + i);
    let after = &history[start + 1..end];
    let assistants: Vec<&Message> = after.iter().copied().filter(|m| m.role == Role::Assistant).collect();
    let extra = usize::from(killed);
    if assistants.len() < t.committed.len() || assistants.len() > t.committed.len() + extra {
        return Err(anyhow!(
            "the run reported {} committed assistant message(s); the log holds {}",
            t.committed.len(),
            assistants.len()
        ));
    }
    for (i, (reported, logged)) in t.committed.iter().zip(&assistants).enumerate() {
        if reported != *logged {
            return Err(anyhow!(
                "committed assistant message {} differs from the log:\n  reported: {}\n  logged:   {}",
                i + 1,
                json(reported),
                json(logged)
            ));
        }
    }
    let results: Vec<(&str, &Vec<ToolResultContent>, bool)> = after
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.as_str(), content, *is_error)),
            _ => None,
        })
        .collect();
    for outcome in &t.tools {
        match results.iter().find(|(id, _, _)| *id == outcome.id) {
            Some((_, content, is_error)) => {
                // A result that finished but was not persisted before the kill is closed as
                // interrupted by the resume instead.
                let closed_later = !outcome.committed
                    && *is_error
                    && matches!(content.first(), Some(ToolResultContent::Text { text }) if text.starts_with(CLOSER_PREFIX));
                if !closed_later && (**content != outcome.content || *is_error != outcome.is_error) {
                    return Err(anyhow!(
                        "the result of tool call {} differs from what the run reported",
                        outcome.id
                    ));
                }
            }
            None if outcome.committed => {
                return Err(anyhow!(
                    "the run went on past tool call {} but its result is not in the log",
                    outcome.id
                ))
            }
            None => {}
        }
    }
    let summaries: Vec<&str> = after
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::CompactionSummary { summary } => Some(summary.as_str()),
            _ => None,
        })
        .collect();
    if summaries.len() < t.compactions || summaries.len() > t.compactions + extra {
        return Err(anyhow!(
            "the run reported {} finished compaction(s); the log holds {}",
            t.compactions,
            summaries.len()
        ));
    }
    if let Some(bad) = summaries.iter().find(|s| **s != summary) {
        return Err(anyhow!(
            "a compaction summary in the log is {bad:?}, not the scripted {summary:?}"
        ));
    }
    Ok(t.committed.len())
}

/// The resume's first model request must close each pending call with the interrupted result.
/// When the resume compacted the call away first, its summary request must carry the closer.
fn check_closer_sent(style: Style, requests: &[&Value], pending: &[String]) -> Result<()> {
    let is_main = |r: &&&Value| r["body"]["tools"].as_array().is_some_and(|t| !t.is_empty());
    let main = requests.iter().find(is_main).ok_or_else(|| {
        anyhow!(
            "the resume sent no model request with tools ({} requests)",
            requests.len()
        )
    })?;
    let messages = main["body"]["messages"]
        .as_array()
        .ok_or_else(|| anyhow!("the resume's request has no messages"))?;
    for id in pending {
        match closer_in(style, messages, id) {
            Closer::Present => {}
            Closer::Missing => {
                return Err(anyhow!(
                    "the resume's request carries pending call {id} without the interrupted-turn closer"
                ))
            }
            Closer::CallAbsent => {
                let summarised = requests
                    .iter()
                    .filter(|r| !is_main(r))
                    .any(|r| all_text(&r["body"]).contains(CLOSER_PREFIX));
                if !summarised {
                    return Err(anyhow!(
                        "pending call {id} is neither in the resume's request nor in a compaction of it"
                    ));
                }
            }
        }
    }
    Ok(())
}

enum Closer {
    Present,
    Missing,
    CallAbsent,
}

/// Whether `messages` (a request body's) hold call `id` and, right after it, its closer.
fn closer_in(style: Style, messages: &[Value], id: &str) -> Closer {
    let calls = |m: &Value| -> bool {
        match style {
            Style::Anthropic => m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_use" && b["id"] == id)),
            Style::OpenAi => m["tool_calls"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["id"] == id)),
        }
    };
    let Some(at) = messages.iter().position(calls) else {
        return Closer::CallAbsent;
    };
    let closed = match style {
        Style::Anthropic => messages.get(at + 1).is_some_and(|m| {
            m["role"] == "user"
                && m["content"].as_array().is_some_and(|c| {
                    c.iter().any(|b| {
                        b["type"] == "tool_result"
                            && b["tool_use_id"] == id
                            && b["is_error"] == true
                            && all_text(&b["content"]).starts_with(CLOSER_PREFIX)
                    })
                })
        }),
        // OpenAI answers each call with its own `tool` message right after the assistant's;
        // panto marks an error result's text with an `Error: ` prefix.
        Style::OpenAi => messages[at + 1..]
            .iter()
            .take_while(|m| m["role"] == "tool")
            .any(|m| m["tool_call_id"] == id && all_text(&m["content"]).contains(CLOSER_PREFIX)),
    };
    if closed {
        Closer::Present
    } else {
        Closer::Missing
    }
}

/// After the resume, the log holds the closer right after the assistant message with the
/// pending calls, as an error result for each.
fn check_closer_logged(before: &LogFile, after: &LogFile, pending: &[String]) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let at = before
        .entries
        .iter()
        .rposition(|e| e.message.role == Role::Assistant)
        .ok_or_else(|| anyhow!("pending calls without an assistant message"))?;
    let closer = after
        .entries
        .get(at + 1)
        .ok_or_else(|| anyhow!("the resume did not persist the interrupted-turn closer"))?;
    for id in pending {
        let ok = closer.message.role == Role::User
            && closer.message.content.iter().any(|b| {
                matches!(b, ContentBlock::ToolResult { tool_use_id, content, is_error: true }
                    if tool_use_id == id
                        && matches!(content.first(), Some(ToolResultContent::Text { text }) if text.starts_with(CLOSER_PREFIX)))
            });
        if !ok {
            return Err(anyhow!(
                "line {} of the session after the resume is not the closer of pending call {id}",
                closer.line
            ));
        }
    }
    Ok(())
}

/// Every string inside a JSON value, joined.
fn all_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(all_text).collect::<Vec<_>>().join("\n"),
        Value::Object(map) => map.values().map(all_text).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn closers_are_found_in_both_request_shapes() {
        let anthropic = vec![
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                "content": [{"type": "text", "text": "interrupted: the tool call did not complete"}]}]}),
        ];
        assert!(matches!(closer_in(Style::Anthropic, &anthropic, "t1"), Closer::Present));
        assert!(matches!(
            closer_in(Style::Anthropic, &anthropic[..1], "t1"),
            Closer::Missing
        ));
        assert!(matches!(
            closer_in(Style::Anthropic, &anthropic, "t2"),
            Closer::CallAbsent
        ));

        let openai = vec![
            json!({"role": "assistant", "tool_calls": [{"id": "c1"}, {"id": "c2"}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "slow-done"}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "Error: interrupted: the tool call did not complete"}),
            json!({"role": "user", "content": "continue"}),
        ];
        assert!(matches!(closer_in(Style::OpenAi, &openai, "c2"), Closer::Present));
        assert!(matches!(closer_in(Style::OpenAi, &openai, "c1"), Closer::Missing));
    }

    #[test]
    fn requests_are_told_apart_by_their_run_tag() {
        let r = json!({"headers": [["content-type", "application/json"], ["x-crash-run", "t3-resume"]]});
        assert_eq!(run_tag(&r), Some("t3-resume"));
        assert_eq!(run_tag(&json!({"headers": []})), None);
        let bad = json!([{"index": 2, "headers": [], "validation": "messages.1: bad"}]);
        let err = check_requests_valid(bad.as_array().unwrap()).unwrap_err().to_string();
        assert!(err.contains("request 2") && err.contains("messages.1: bad"), "{err}");
    }
}
