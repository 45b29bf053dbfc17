//! What a trial does after the killed run: a rewind with files (`-r ID --rewind N
//! --rewind-files`) or a fork (`-r ID --fork`), each killed at a random moment, and the resume
//! that must then work.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{anyhow, Result};
use panto_core::Role;
use serde_json::Value;

use super::checks::{check_closer_logged, check_closer_sent, check_committed, run_tag};
use super::format::{self, LogFile};
use super::run::{Feed, Kill};
use super::script;
use super::stream::Transcript;
use super::trial::{Evidence, TrialRuns};

/// An operation after the killed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `-r ID --rewind N --rewind-files -p …`, back to before the oldest prompt the session
    /// shows.
    Rewind,
    /// `-r ID --fork -p …`.
    Fork,
}

impl Op {
    /// A short name for tags and output.
    pub fn name(self) -> &'static str {
        match self {
            Op::Rewind => "rewind",
            Op::Fork => "fork",
        }
    }
}

/// A session as the harness last checked it.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its id.
    pub id: String,
    /// Its file's bytes.
    pub bytes: Vec<u8>,
    /// The checked log.
    pub log: LogFile,
    /// Whether a rewind moved its active branch away from the first run's messages.
    pub rewound: bool,
}

/// What an operation did.
#[derive(Debug, Clone)]
pub struct Done {
    /// How long its run lived.
    pub elapsed: Duration,
    /// Whether the kill landed (the run had not exited yet).
    pub killed: bool,
    /// Where the kill landed, or what happened.
    pub phase: &'static str,
    /// One note for the trial's line.
    pub note: String,
    /// How many checkpoint blobs were checked.
    pub blobs: usize,
    /// The fork it left, if any.
    pub fork: Option<Session>,
}

/// What `--rewind N --rewind-files` to before `target` must leave in `out/plan.txt`: the
/// content before the first change recorded on the active path from `target` on; `None` when
/// nothing changed it there (the file stays as it is).
fn expected_plan(runs: &TrialRuns<'_>, log: &LogFile, id: &str, target: &str) -> Result<Option<Option<Vec<u8>>>> {
    let path = log.path();
    let from = path
        .iter()
        .position(|e| e.id == target)
        .ok_or_else(|| anyhow!("the rewind target {target} is not on the active branch"))?;
    let since: HashSet<&str> = path[from..].iter().map(|e| e.id.as_str()).collect();
    let first = log
        .checkpoints()
        .find(|(tip, c)| tip.is_some_and(|t| since.contains(t)) && c.path.ends_with(script::PLAN_PATH));
    let Some((_, record)) = first else {
        return Ok(None);
    };
    Ok(Some(match &record.before {
        None => None,
        Some(address) => {
            let blob = runs.sessions.join(format!("{id}.blobs")).join(address);
            Some(std::fs::read(&blob).map_err(|e| anyhow!("reading {}: {e}", blob.display()))?)
        }
    }))
}

/// The outcomes of a `rewind` line's files.
fn outcomes(line: &Value) -> Vec<String> {
    line["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["outcome"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// Rewinds to before the oldest prompt the session shows, with files, killed as `kill` says;
/// checks what the kill left and, where the rewind did not switch the branch yet, does it again.
pub fn rewind(
    runs: &TrialRuns<'_>,
    ev: &mut Evidence,
    tag: &str,
    session: &mut Session,
    kill: Kill,
    first: &Transcript,
) -> Result<Done> {
    let id = session.id.clone();
    let replies = script::op_run(runs.plan.style);
    let view = session.log.view_entries().map_err(|e| anyhow!(e))?;
    let prompts: Vec<(String, Option<String>)> = view
        .iter()
        .filter(|e| e.message.is_human_prompt())
        .map(|e| (e.id.clone(), e.parent.clone()))
        .collect();
    if prompts.is_empty() {
        // Compaction can hide every prompt: then there is nothing to rewind to, and the refusal
        // must change nothing.
        let args = [
            "-r",
            &id,
            "--rewind",
            "1",
            "--rewind-files",
            "-p",
            script::REWIND_PROMPT,
        ];
        let (out, _, _) = runs.run(ev, tag, &replies, &args, Kill::Never, &Feed::Nothing)?;
        if out.code != Some(2) || !out.stderr.contains("no earlier prompt") {
            return Err(anyhow!(
                "--rewind 1 with no prompt to go back to exited {:?} without saying so: {}",
                out.code,
                out.stderr
            ));
        }
        let (bytes, _, blobs) = runs.inspect(&id)?;
        if bytes != session.bytes {
            return Err(anyhow!("a refused rewind changed the session file"));
        }
        return Ok(Done {
            elapsed: out.elapsed,
            killed: false,
            phase: "refused: no prompt left to rewind to",
            note: "no prompt to rewind to: refused, nothing written".to_owned(),
            blobs,
            fork: None,
        });
    }
    let (target, target_parent) = prompts[0].clone();
    let plan_before = runs.plan_file()?;
    let want = expected_plan(runs, &session.log, &id, &target)?.unwrap_or_else(|| plan_before.clone());
    let n = prompts.len().to_string();
    let args = ["-r", &id, "--rewind", &n, "--rewind-files", "-p", script::REWIND_PROMPT];
    let (out, t, _) = runs.run(ev, tag, &replies, &args, kill, &Feed::Nothing)?;
    if out.killed.is_none() && (out.code != Some(0) || !t.succeeded()) {
        return Err(anyhow!(
            "the rewind run was not killed but failed (exit {:?})",
            out.code
        ));
    }
    let (bytes, log, mut blobs) = runs.inspect(&id)?;
    if !bytes.starts_with(&session.bytes[..session.log.committed_bytes]) {
        return Err(anyhow!("the rewind run rewrote committed bytes of the session file"));
    }
    check_committed(first, &log, script::PROMPT, script::SUMMARY, true)
        .map_err(|e| anyhow!("after the rewind run, the first run's messages: {e:#}"))?;
    let switch_of = |log: &LogFile| {
        log.branches[session.log.branches.len()..]
            .iter()
            .any(|b| b.checkpoint.is_none() && b.tip == target_parent)
    };
    let switched = switch_of(&log);
    let now = runs.plan_file()?;
    let restored_text = |now: &Option<Vec<u8>>| if *now == want { "restored" } else { "not restored" };
    // A rewind with files puts the files back first (each restore recorded before its write)
    // and switches the branch last: whatever the kill, the file holds its old content or the
    // restored one, and holds the restored one once the switch is in the log. Where the switch
    // is not, the same command again must restore the file byte for byte: no file is ever left
    // as "changed outside panto" for what panto itself wrote or only recorded (the first run's
    // kill may have landed between recording its last change and making it).
    let left_alone = |outcomes: &[String]| outcomes.iter().any(|o| o == "changed_outside" || o == "failed");
    let (phase, note, log, bytes) = if let Some(line) = &t.rewind {
        if !switched {
            return Err(anyhow!(
                "the run reported its rewind, but the log has no switch to before the prompt"
            ));
        }
        let outcomes = outcomes(line);
        if now != want || left_alone(&outcomes) {
            return Err(anyhow!(
                "the rewind reported {outcomes:?} and left {} as {:?}, want it restored byte for byte: {:?}",
                script::PLAN_PATH,
                now.as_deref().map(String::from_utf8_lossy),
                want.as_deref().map(String::from_utf8_lossy)
            ));
        }
        check_committed(&t, &log, script::REWIND_PROMPT, script::OP_ANSWER, out.killed.is_some())?;
        let phase = if out.killed.is_some() {
            "after the rewind"
        } else {
            "not killed"
        };
        (
            phase,
            format!("rewound {n} prompt(s), file {}", restored_text(&now)),
            log,
            bytes,
        )
    } else if !switched {
        if now != plan_before && now != want {
            return Err(anyhow!(
                "a rewind killed before its branch switch left {} holding neither its old nor its restored content",
                script::PLAN_PATH
            ));
        }
        let restored_first = if now == want && now != plan_before {
            "file already restored"
        } else {
            "file not restored yet"
        };
        // The branch did not move: the same command, not killed, must do the rest.
        let again = format!("{tag}-again");
        let (out2, t2, _) = runs.run(ev, &again, &replies, &args, Kill::Never, &Feed::Nothing)?;
        if out2.code != Some(0) || !t2.succeeded() || t2.rewind.is_none() {
            return Err(anyhow!(
                "the rewind, run again after a kill before its switch, failed (exit {:?}): {}",
                out2.code,
                out2.stderr
            ));
        }
        let now2 = runs.plan_file()?;
        let (bytes2, log2, blobs2) = runs.inspect(&id)?;
        blobs += blobs2;
        let outcomes = outcomes(t2.rewind.as_ref().unwrap_or(&Value::Null));
        if now2 != want || left_alone(&outcomes) {
            return Err(anyhow!(
                "the rewind run again reported {outcomes:?} and left {} as {:?}, want it restored byte for byte: {:?}",
                script::PLAN_PATH,
                now2.as_deref().map(String::from_utf8_lossy),
                want.as_deref().map(String::from_utf8_lossy)
            ));
        }
        if !switch_of(&log2) {
            return Err(anyhow!("the rewind run again left no branch switch in the log"));
        }
        check_committed(&t2, &log2, script::REWIND_PROMPT, script::OP_ANSWER, false)?;
        let note = format!("rewind killed before its switch ({restored_first}); run again: file restored");
        ("before the rewind's branch switch", note, log2, bytes2)
    } else {
        // Killed after the switch, before the run reported it: the restores came first.
        if now != want {
            return Err(anyhow!(
                "a rewind killed after its branch switch left {} not restored: {:?}, want {:?}",
                script::PLAN_PATH,
                now.as_deref().map(String::from_utf8_lossy),
                want.as_deref().map(String::from_utf8_lossy)
            ));
        }
        (
            "inside the rewind, after its branch switch",
            "rewind killed after its switch; file restored".to_owned(),
            log,
            bytes,
        )
    };
    session.bytes = bytes;
    session.log = log;
    session.rewound = true;
    Ok(Done {
        elapsed: out.elapsed,
        killed: out.killed.is_some(),
        phase,
        note,
        blobs,
        fork: None,
    })
}

/// The `*.jsonl` files in the session directory other than `except`'s, and the leftover
/// temporary files of forks.
fn other_sessions(runs: &TrialRuns<'_>, except: &str) -> Result<(Vec<String>, usize)> {
    let mut ids = Vec::new();
    let mut temporary = 0;
    for entry in std::fs::read_dir(&runs.sessions)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".jsonl") {
            if id != except {
                ids.push(id.to_owned());
            }
        } else if name.ends_with(".tmp") {
            temporary += 1;
        }
    }
    Ok((ids, temporary))
}

/// Forks the session, killed as `kill` says: the original must be untouched, and the fork
/// absent or whole, loading and resumable.
pub fn fork(
    runs: &TrialRuns<'_>,
    ev: &mut Evidence,
    tag: &str,
    session: &Session,
    kill: Kill,
    first: &Transcript,
) -> Result<Done> {
    let id = &session.id;
    let args = ["-r", id, "--fork", "-p", script::FORK_PROMPT];
    let (out, t, _) = runs.run(ev, tag, &script::op_run(runs.plan.style), &args, kill, &Feed::Nothing)?;
    if out.killed.is_none() && (out.code != Some(0) || !t.succeeded()) {
        return Err(anyhow!("the fork run was not killed but failed (exit {:?})", out.code));
    }
    let original = std::fs::read(runs.file(id))?;
    if original != session.bytes {
        return Err(anyhow!("forking changed the original session's file"));
    }
    let (forks, temporary) = other_sessions(runs, id)?;
    if forks.len() > 1 {
        return Err(anyhow!(
            "one fork run left {} new session files: {forks:?}",
            forks.len()
        ));
    }
    if let Some(reported) = &t.session_id {
        if forks.first() != Some(reported) {
            return Err(anyhow!(
                "the fork run reported session {reported}, but the new session files are {forks:?}"
            ));
        }
    }
    let Some(fork_id) = forks.into_iter().next() else {
        return Ok(Done {
            elapsed: out.elapsed,
            killed: out.killed.is_some(),
            phase: "before the fork appeared",
            note: format!("killed before the fork appeared ({temporary} temporary file(s) left)"),
            blobs: 0,
            fork: None,
        });
    };
    let (bytes, log, blobs) = runs.inspect(&fork_id)?;
    if !log.has_header || bytes.is_empty() {
        return Err(anyhow!(
            "the fork {fork_id} is a file of {} byte(s) without a whole header: a torn fork",
            bytes.len()
        ));
    }
    // The fork is the source's active path, line for line, after its own header.
    let path = session.log.path();
    let source_lines: Vec<&[u8]> = session.bytes.split(|&b| b == b'\n').collect();
    let fork_lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let at = path.last().map(|e| e.id.clone()).unwrap_or_default();
    if log.forked_from != Some((id.clone(), at.clone())) {
        return Err(anyhow!(
            "the fork's header says forked_from {:?}, want ({id}, {at})",
            log.forked_from
        ));
    }
    for (i, entry) in path.iter().enumerate() {
        if fork_lines.get(i + 1) != source_lines.get(entry.line - 1) {
            return Err(anyhow!(
                "line {} of the fork is not line {} of the original byte for byte",
                i + 2,
                entry.line
            ));
        }
    }
    if !session.rewound {
        check_committed(first, &log, script::PROMPT, script::SUMMARY, true)
            .map_err(|e| anyhow!("in the fork, the first run's messages: {e:#}"))?;
    }
    check_committed(&t, &log, script::FORK_PROMPT, script::OP_ANSWER, out.killed.is_some())?;
    let phase = match (out.killed.is_some(), t.session_id.is_some()) {
        (false, _) => "not killed",
        (true, false) => "after the fork was written, before it was reported",
        (true, true) => "after the fork",
    };
    Ok(Done {
        elapsed: out.elapsed,
        killed: out.killed.is_some(),
        phase,
        note: format!("fork whole ({} lines)", log.entries.len() + log.branches.len()),
        blobs,
        fork: Some(Session {
            id: fork_id,
            bytes,
            log,
            rewound: session.rewound,
        }),
    })
}

/// What a resume found.
#[derive(Debug, Clone)]
pub struct Resumed {
    /// How many tool calls it closed.
    pub pending: usize,
    /// How many requests it sent.
    pub requests: usize,
    /// How many checkpoint blobs were checked.
    pub blobs: usize,
}

/// `panto -r ID -p continue`, not killed: it must succeed, close what was left pending, rewrite
/// no committed byte, and keep every earlier run's committed messages (`earlier`: the run, its
/// prompt and its summary text).
pub fn resume(
    runs: &TrialRuns<'_>,
    ev: &mut Evidence,
    tag: &str,
    session: &Session,
    earlier: &[(&Transcript, &str, &str)],
) -> Result<Resumed> {
    let id = &session.id;
    let view = session.log.view().map_err(|e| anyhow!(e))?;
    let pending = format::unanswered_calls(&view);
    let args = ["-r", id, "-p", script::RESUME_PROMPT];
    let (out, t, requests) = runs.run(
        ev,
        tag,
        &script::resume(runs.plan.style),
        &args,
        Kill::Never,
        &Feed::Nothing,
    )?;
    if out.code != Some(0) || !t.succeeded() {
        return Err(anyhow!("the resume of {id} failed (exit {:?})", out.code));
    }
    if t.session_id.as_deref() != Some(id.as_str()) || !t.resumed {
        return Err(anyhow!("the resume did not report session {id} as resumed"));
    }
    let own: Vec<&Value> = requests.iter().filter(|r| run_tag(r) == Some(tag)).collect();
    check_closer_sent(runs.plan.style, &own, &pending)?;
    let (bytes, log, blobs) = runs.inspect(id)?;
    if !bytes.starts_with(&session.bytes[..session.log.committed_bytes]) {
        return Err(anyhow!("the resume rewrote committed bytes of the session file"));
    }
    if log.torn_bytes > 0 {
        return Err(anyhow!("the session file ends in a torn line after a clean resume"));
    }
    for (run, prompt, summary) in earlier {
        check_committed(run, &log, prompt, summary, true)
            .map_err(|e| anyhow!("after the resume, an earlier run's messages: {e:#}"))?;
    }
    check_committed(&t, &log, script::RESUME_PROMPT, script::RESUME_ANSWER, false)
        .map_err(|e| anyhow!("the resume's own messages: {e:#}"))?;
    check_closer_logged(&session.log, &log, &pending)?;
    if log.path().last().is_some_and(|e| e.message.role != Role::Assistant) {
        return Err(anyhow!(
            "after a clean resume the active branch does not end with an answer"
        ));
    }
    Ok(Resumed {
        pending: pending.len(),
        requests: own.len(),
        blobs,
    })
}
