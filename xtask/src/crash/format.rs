//! An independent check of a session file against docs/session-format.md, written from the
//! specification rather than from the store's code, so that a bug in the store's reader cannot
//! hide the same bug in its writer.
//!
//! [`check`] reads every line (a torn, unterminated last line is allowed and set aside), checks
//! the header (and a fork's `forked_from`), every entry's fields, that entry ids are unique, that
//! every new message follows the tip (the last message, or what the last `branch` line switched
//! to), that a `branch` line's `tip` names an earlier message and a checkpoint record keeps the
//! tip, and that each entry's running activity is that of its path. [`check_blobs`] checks that
//! every checkpoint names a blob that is there and whole. [`LogFile::view`] replays the active
//! branch with its compactions the way the specification says `load` must, so the harness can
//! compare it with what the store returns.

use std::collections::HashMap;

use panto_core::{ContentBlock, Message, Role, Usage};
use serde_json::Value;

/// One message entry of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The 1-based line number.
    pub line: usize,
    /// The entry id.
    pub id: String,
    /// The entry it follows (`None` for a first message).
    pub parent: Option<String>,
    /// The message.
    pub message: Message,
    /// For a compaction summary: the entry id of the first message kept (`None` when nothing
    /// was kept). `None` for every other entry.
    pub compaction: Option<Option<String>>,
}

/// A file checkpoint a `branch` line records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The file, an absolute path.
    pub path: String,
    /// The address of the content before the change (`None`: there was no file).
    pub before: Option<String>,
    /// The address of the content the change left (`None`: the change removed the file).
    pub after: Option<String>,
    /// Whether the change was a rewind putting the file back.
    pub restore: bool,
}

/// One `branch` line: a switch of the active branch, or (with a checkpoint) a file change
/// recorded at the tip.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The 1-based line number.
    pub line: usize,
    /// Its entry id.
    pub id: String,
    /// The tip before the switch.
    pub parent: Option<String>,
    /// The tip after it.
    pub tip: Option<String>,
    /// The file change it records, if any.
    pub checkpoint: Option<Checkpoint>,
}

/// A session file that passed [`check`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFile {
    /// Whether the file has a complete header line; a file without one holds no session.
    pub has_header: bool,
    /// The header's `forked_from` as `(session, entry)`, for a fork.
    pub forked_from: Option<(String, String)>,
    /// The message entries, in file order.
    pub entries: Vec<Entry>,
    /// The `branch` lines, in file order.
    pub branches: Vec<Branch>,
    /// The active tip: the entry the next message follows (`None`: the empty start).
    pub tip: Option<String>,
    /// Bytes up to and including the last line end: everything ever committed.
    pub committed_bytes: usize,
    /// Bytes after the last line end: a torn write that was never committed.
    pub torn_bytes: usize,
}

impl LogFile {
    /// The message entries of the active branch, oldest first: from the tip back by
    /// `parent_id`.
    pub fn path(&self) -> Vec<&Entry> {
        self.path_to(self.tip.as_deref())
    }

    /// The message entries of the path ending at entry `tip`, oldest first.
    pub fn path_to(&self, tip: Option<&str>) -> Vec<&Entry> {
        let mut path = Vec::new();
        let mut at = tip;
        while let Some(id) = at {
            // `check` made sure every parent is an earlier message entry.
            let Some(entry) = self.entries.iter().find(|e| e.id == id) else {
                break;
            };
            path.push(entry);
            at = entry.parent.as_deref();
        }
        path.reverse();
        path
    }

    /// The messages `load` must return: the active branch replayed oldest first, where a
    /// compaction entry replaces the view with the system messages before its `first_kept`,
    /// itself, and the view from `first_kept` on.
    pub fn view(&self) -> Result<Vec<&Message>, String> {
        Ok(self.view_entries()?.into_iter().map(|e| &e.message).collect())
    }

    /// [`LogFile::view`] as entries, so their ids are known.
    pub fn view_entries(&self) -> Result<Vec<&Entry>, String> {
        let mut view: Vec<&Entry> = Vec::new();
        for entry in self.path() {
            match &entry.compaction {
                None => view.push(entry),
                Some(first_kept) => {
                    let cut = match first_kept {
                        None => view.len(),
                        Some(id) => view.iter().position(|v| v.id == *id).ok_or_else(|| {
                            format!(
                                "line {}: compaction first_kept {id:?} is not in the view the model saw",
                                entry.line
                            )
                        })?,
                    };
                    let mut next: Vec<&Entry> = view[..cut]
                        .iter()
                        .copied()
                        .filter(|v| v.message.role == Role::System)
                        .collect();
                    next.push(entry);
                    next.extend_from_slice(&view[cut..]);
                    view = next;
                }
            }
        }
        Ok(view)
    }

    /// The full history, oldest first (what the file keeps, compactions and branches
    /// notwithstanding).
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().map(|e| &e.message)
    }

    /// The checkpoint records, in file order, with the entry each belongs to (its `tip`).
    pub fn checkpoints(&self) -> impl Iterator<Item = (Option<&str>, &Checkpoint)> {
        self.branches
            .iter()
            .filter_map(|b| b.checkpoint.as_ref().map(|c| (b.tip.as_deref(), c)))
    }
}

/// Checks the bytes of the session file of session `file_id`. The error names the line and
/// what is wrong with it.
pub fn check(bytes: &[u8], file_id: &str) -> Result<LogFile, String> {
    let committed_bytes = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut log = LogFile {
        committed_bytes,
        torn_bytes: bytes.len() - committed_bytes,
        ..LogFile::default()
    };
    let committed = std::str::from_utf8(&bytes[..committed_bytes])
        .map_err(|e| format!("the committed part of the file is not UTF-8: {e}"))?;
    let mut state = State::default();
    for (n, line) in committed.split_terminator('\n').enumerate() {
        let line_no = n + 1;
        let value: Value = serde_json::from_str(line).map_err(|e| format!("line {line_no}: not JSON: {e}"))?;
        let obj = value
            .as_object()
            .ok_or_else(|| format!("line {line_no}: not a JSON object"))?;
        if line_no == 1 {
            log.forked_from = check_header(obj, file_id)?;
            log.has_header = true;
            continue;
        }
        check_entry(obj, line_no, &mut log, &mut state)?;
    }
    Ok(log)
}

/// What the check keeps while it reads: every id by line, each message entry's activity as of
/// itself (the fold of its path), and the message entries' ids.
#[derive(Debug, Default)]
struct State {
    ids: HashMap<String, usize>,
    messages: HashMap<String, Activity>,
}

type Object = serde_json::Map<String, Value>;

fn check_header(obj: &Object, file_id: &str) -> Result<Option<(String, String)>, String> {
    let at = |m: String| format!("line 1 (header): {m}");
    if obj.get("type").and_then(Value::as_str) != Some("session") {
        return Err(at(format!("type must be \"session\", got {}", show(obj.get("type")))));
    }
    if obj.get("version").and_then(Value::as_u64) != Some(2) {
        return Err(at(format!("version must be 2, got {}", show(obj.get("version")))));
    }
    if obj.get("id").and_then(Value::as_str) != Some(file_id) {
        return Err(at(format!(
            "id must be the file's session id {file_id:?}, got {}",
            show(obj.get("id"))
        )));
    }
    let created = obj.get("created").and_then(Value::as_str).unwrap_or("");
    if !is_utc_timestamp(created) {
        return Err(at(format!(
            "created must be an RFC 3339 UTC timestamp, got {}",
            show(obj.get("created"))
        )));
    }
    for key in ["cwd", "metadata"] {
        if !matches!(obj.get(key), Some(Value::Null | Value::String(_))) {
            return Err(at(format!(
                "{key} must be a string or null, got {}",
                show(obj.get(key))
            )));
        }
    }
    match obj.get("forked_from") {
        None => Ok(None),
        Some(Value::Object(f)) => {
            let session = f.get("session").and_then(Value::as_str).unwrap_or("");
            let entry = f.get("entry").and_then(Value::as_str).unwrap_or("");
            if session.is_empty() || session == file_id {
                return Err(at(format!(
                    "forked_from.session must name another session, got {}",
                    show(f.get("session"))
                )));
            }
            if !is_entry_id(entry) {
                return Err(at(format!(
                    "forked_from.entry must be an entry id, got {}",
                    show(f.get("entry"))
                )));
            }
            Ok(Some((session.to_owned(), entry.to_owned())))
        }
        Some(other) => Err(at(format!("forked_from must be an object, got {other}"))),
    }
}

/// The running activity an entry must carry, folded over its path.
#[derive(Debug, Default, Clone)]
struct Activity {
    count: usize,
    last_prompt_at: Option<String>,
    last_user_message: Option<String>,
    wire: Option<Value>,
}

fn is_entry_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_address(a: &str) -> bool {
    a.len() == 64 && a.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `parent_id` or `tip`: null, or a message entry on an earlier line.
fn message_ref(obj: &Object, key: &str, state: &State) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if state.messages.contains_key(id) => Ok(Some(id.clone())),
        Some(Value::String(id)) if state.ids.contains_key(id) => Err(format!(
            "{key} {id:?} names a branch entry, not a message (line {})",
            state.ids[id]
        )),
        Some(other) => Err(format!("{key} {other} names no earlier entry")),
    }
}

fn check_entry(obj: &Object, line_no: usize, log: &mut LogFile, state: &mut State) -> Result<(), String> {
    let at = |m: String| format!("line {line_no}: {m}");
    let kind = obj.get("type").and_then(Value::as_str);
    if !matches!(kind, Some("message" | "branch")) {
        return Err(at(format!(
            "entry type must be \"message\" or \"branch\", got {}",
            show(obj.get("type"))
        )));
    }
    let id = obj.get("id").and_then(Value::as_str).unwrap_or("");
    if !is_entry_id(id) {
        return Err(at(format!(
            "id must be 8 lowercase hex digits, got {}",
            show(obj.get("id"))
        )));
    }
    if let Some(first) = state.ids.get(id) {
        return Err(at(format!("duplicate entry id {id:?} (first used on line {first})")));
    }
    let parent = message_ref(obj, "parent_id", state).map_err(at)?;
    if parent != log.tip {
        return Err(at(format!(
            "parent_id must be the tip {:?} (every entry follows the active tip), got {parent:?}",
            log.tip
        )));
    }
    let timestamp = obj.get("timestamp").and_then(Value::as_str).unwrap_or("");
    if !is_utc_timestamp(timestamp) {
        return Err(at(format!(
            "timestamp must be an RFC 3339 UTC timestamp, got {}",
            show(obj.get("timestamp"))
        )));
    }
    if kind == Some("branch") {
        let tip = message_ref(obj, "tip", state).map_err(at)?;
        let checkpoint = match obj.get("checkpoint") {
            None => None,
            Some(Value::Object(c)) => {
                if tip != parent {
                    return Err(at("a checkpoint record must keep the tip (tip == parent_id)".to_owned()));
                }
                Some(check_checkpoint(c).map_err(at)?)
            }
            Some(other) => return Err(at(format!("checkpoint must be an object, got {other}"))),
        };
        let activity = tip.as_ref().map(|t| state.messages[t].clone()).unwrap_or_default();
        check_activity(obj.get("activity"), &activity).map_err(at)?;
        state.ids.insert(id.to_owned(), line_no);
        log.branches.push(Branch {
            line: line_no,
            id: id.to_owned(),
            parent,
            tip: tip.clone(),
            checkpoint,
        });
        log.tip = tip;
        return Ok(());
    }
    let message: Message = serde_json::from_value(obj.get("message").cloned().unwrap_or(Value::Null))
        .map_err(|e| at(format!("message is not a panto message: {e}")))?;
    match obj.get("usage") {
        Some(Value::Null) => {}
        Some(u) => {
            serde_json::from_value::<Usage>(u.clone()).map_err(|e| at(format!("usage is not a usage object: {e}")))?;
        }
        None => return Err(at("usage is missing (null when absent)".to_owned())),
    }
    let wire = obj.get("wire").cloned().unwrap_or(Value::Null);
    match (&wire, message.role) {
        (Value::Null, Role::System) => {}
        (_, Role::System) => return Err(at(format!("a system message has wire {wire}; it must be null"))),
        (Value::Object(w), _) => check_wire(w).map_err(at)?,
        _ => return Err(at(format!("wire must name who produced the message, got {wire}"))),
    }
    let is_summary = message
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::CompactionSummary { .. }));
    let path: Vec<String> = log.path().iter().map(|e| e.id.clone()).collect();
    let compaction = match (obj.get("compaction"), is_summary) {
        (None, false) => None,
        (Some(Value::Object(c)), true) => {
            let first_kept = match c.get("first_kept") {
                Some(Value::Null) => None,
                Some(Value::String(k)) if path.contains(k) => Some(k.clone()),
                other => {
                    return Err(at(format!(
                        "compaction.first_kept must be null or an earlier entry of the active branch, got {}",
                        show(other)
                    )))
                }
            };
            for key in ["tokens_before", "tokens_after"] {
                if c.get(key).and_then(Value::as_u64).is_none() {
                    return Err(at(format!(
                        "compaction.{key} must be a count, got {}",
                        show(c.get(key))
                    )));
                }
            }
            Some(first_kept)
        }
        (None, true) => return Err(at("a compaction summary without its compaction record".to_owned())),
        (Some(c), _) => return Err(at(format!("compaction record {c} on a message that is not a summary"))),
    };

    let mut activity = parent.as_ref().map(|p| state.messages[p].clone()).unwrap_or_default();
    activity.count += 1;
    if message.is_human_prompt() {
        activity.last_prompt_at = Some(timestamp.to_owned());
        activity.last_user_message = Some(message.text().chars().take(200).collect());
    }
    if !wire.is_null() {
        activity.wire = Some(wire);
    }
    check_activity(obj.get("activity"), &activity).map_err(at)?;

    state.ids.insert(id.to_owned(), line_no);
    state.messages.insert(id.to_owned(), activity);
    log.entries.push(Entry {
        line: line_no,
        id: id.to_owned(),
        parent,
        message,
        compaction,
    });
    log.tip = Some(id.to_owned());
    Ok(())
}

fn check_checkpoint(c: &Object) -> Result<Checkpoint, String> {
    let path = match c.get("path") {
        Some(Value::String(p)) if p.starts_with('/') => p.clone(),
        other => return Err(format!("checkpoint.path must be an absolute path, got {}", show(other))),
    };
    let address = |key: &str| -> Result<Option<String>, String> {
        match c.get(key) {
            Some(Value::Null) => Ok(None),
            Some(Value::String(a)) if is_address(a) => Ok(Some(a.clone())),
            other => Err(format!(
                "checkpoint.{key} must be null or a SHA-256 address (64 lowercase hex digits), got {}",
                show(other)
            )),
        }
    };
    let (before, after) = (address("before")?, address("after")?);
    let restore = match c.get("restore") {
        None => false,
        Some(Value::Bool(true)) => true,
        other => {
            return Err(format!(
                "checkpoint.restore must be true or absent, got {}",
                show(other)
            ))
        }
    };
    Ok(Checkpoint {
        path,
        before,
        after,
        restore,
    })
}

/// Every checkpoint of `log` names, as its `before`, a blob in `blobs` (the session's
/// `<id>.blobs/` directory) whose content has that address: never a missing or torn one.
pub fn check_blobs(log: &LogFile, blobs: &std::path::Path) -> Result<usize, String> {
    let mut checked = 0;
    for branch in &log.branches {
        let Some(before) = branch.checkpoint.as_ref().and_then(|c| c.before.as_deref()) else {
            continue;
        };
        let file = blobs.join(before);
        let bytes = std::fs::read(&file).map_err(|e| {
            format!(
                "line {}: the checkpoint names blob {before}, but {} cannot be read: {e}",
                branch.line,
                file.display()
            )
        })?;
        let address = panto_core::store::checkpoint_address(&bytes);
        if address != before {
            return Err(format!(
                "line {}: blob {} holds {} bytes whose address is {address}: torn or damaged",
                branch.line,
                file.display(),
                bytes.len()
            ));
        }
        checked += 1;
    }
    Ok(checked)
}

fn check_wire(w: &Object) -> Result<(), String> {
    let style = w.get("api_style").and_then(Value::as_str);
    if !matches!(style, Some("anthropic-messages" | "openai-chat")) {
        return Err(format!("wire.api_style is {}", show(w.get("api_style"))));
    }
    for key in ["base_url", "model"] {
        if w.get(key).and_then(Value::as_str).is_none() {
            return Err(format!("wire.{key} must be a string, got {}", show(w.get(key))));
        }
    }
    let reasoning = w.get("reasoning").and_then(Value::as_str);
    if !matches!(reasoning, Some("off" | "low" | "medium" | "high")) {
        return Err(format!("wire.reasoning is {}", show(w.get("reasoning"))));
    }
    Ok(())
}

fn check_activity(found: Option<&Value>, expected: &Activity) -> Result<(), String> {
    let a = found
        .and_then(Value::as_object)
        .ok_or_else(|| format!("activity must be an object, got {}", show(found)))?;
    let count = a.get("message_count").and_then(Value::as_u64);
    if count != Some(expected.count as u64) {
        return Err(format!(
            "activity.message_count is {}, but this is message {}",
            show(a.get("message_count")),
            expected.count
        ));
    }
    let want = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
    for (key, value) in [
        ("last_prompt_at", want(&expected.last_prompt_at)),
        ("last_user_message", want(&expected.last_user_message)),
        ("wire", expected.wire.clone().unwrap_or(Value::Null)),
    ] {
        if a.get(key).unwrap_or(&Value::Null) != &value {
            return Err(format!("activity.{key} is {}, expected {value}", show(a.get(key))));
        }
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (or `+00:00`), the shape of a UTC RFC 3339 timestamp.
fn is_utc_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if !(digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && b.get(10) == Some(&b'T')
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19))
    {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    rest == "Z" || rest == "+00:00"
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "nothing".to_owned(), Value::to_string)
}

/// The tool calls of the last assistant message of `messages` that no later message answers:
/// the calls a crash left pending, which a resume must close.
pub fn unanswered_calls(messages: &[&Message]) -> Vec<String> {
    let Some(last) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[last + 1..]
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    messages[last]
        .tool_uses()
        .map(|(id, _, _)| id)
        .filter(|id| !answered.contains(id))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "01a22926-3366-756a-8624-63d343ece1ce";
    const WIRE: &str = r#"{"api_style":"anthropic-messages","base_url":"http://x","model":"m","reasoning":"off"}"#;

    fn header() -> String {
        format!(
            r#"{{"type":"session","version":2,"id":"{ID}","created":"2026-11-29T21:11:39.110488065Z","cwd":null,"metadata":null}}"#
        )
    }

    /// An entry line; `prompt` is the activity's last prompt as (timestamp, text), `n` the count.
    fn entry(
        id: &str,
        parent: Option<&str>,
        message: &str,
        n: usize,
        prompt: Option<(&str, &str)>,
        extra: &str,
    ) -> String {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        let wire = if message.contains(r#""role":"system""#) {
            "null"
        } else {
            WIRE
        };
        let (at, text) = prompt.map_or(("null".to_owned(), "null".to_owned()), |(t, m)| {
            (format!("\"{t}\""), format!("\"{m}\""))
        });
        let last_wire = if n == 1 && wire == "null" { "null" } else { WIRE };
        format!(
            r#"{{"type":"message","id":"{id}","parent_id":{parent},"timestamp":"2026-11-29T21:11:40Z","message":{message},"usage":null,"wire":{wire}{extra},"activity":{{"message_count":{n},"last_prompt_at":{at},"last_user_message":{text},"wire":{last_wire}}}}}"#
        )
    }

    const SYS: &str = r#"{"role":"system","content":[{"type":"system","text":"be brief","mode":"append"}]}"#;
    const HI: &str = r#"{"role":"user","content":[{"type":"text","text":"hi"}]}"#;
    const CALL: &str = r#"{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}],"stop_reason":"tool_use"}"#;
    const SUMMARY: &str = r#"{"role":"user","content":[{"type":"compaction_summary","summary":"s"}]}"#;
    const AT: &str = "2026-11-29T21:11:40Z";

    fn file(lines: &[String]) -> Vec<u8> {
        lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect()
    }

    fn good() -> Vec<String> {
        vec![
            header(),
            entry("00000001", None, SYS, 1, None, ""),
            entry("00000002", Some("00000001"), HI, 2, Some((AT, "hi")), ""),
            entry("00000003", Some("00000002"), CALL, 3, Some((AT, "hi")), ""),
        ]
    }

    #[test]
    fn a_good_file_passes_and_a_torn_tail_is_set_aside() {
        let mut bytes = file(&good());
        let log = check(&bytes, ID).unwrap();
        assert!(log.has_header);
        assert_eq!(log.entries.len(), 3);
        assert_eq!(log.torn_bytes, 0);
        let torn = br#"{"type":"message","id":"0000"#;
        bytes.extend_from_slice(torn);
        let log = check(&bytes, ID).unwrap();
        assert_eq!(log.entries.len(), 3);
        assert_eq!(log.torn_bytes, torn.len());
        assert_eq!(log.committed_bytes, bytes.len() - torn.len());
        let pending = unanswered_calls(&log.view().unwrap());
        assert_eq!(pending, vec!["t1".to_owned()]);
    }

    #[test]
    fn a_file_without_a_complete_line_holds_no_session() {
        let log = check(br#"{"type":"sess"#, ID).unwrap();
        assert!(!log.has_header && log.entries.is_empty());
    }

    #[test]
    fn broken_chains_and_fields_are_named_by_line() {
        let mut lines = good();
        lines[3] = entry("00000003", Some("00000001"), CALL, 3, Some((AT, "hi")), "");
        let err = check(&file(&lines), ID).unwrap_err();
        assert!(err.starts_with("line 4:") && err.contains("parent_id"), "{err}");

        let mut lines = good();
        lines[3] = entry("00000002", Some("00000002"), CALL, 3, Some((AT, "hi")), "");
        let err = check(&file(&lines), ID).unwrap_err();
        assert!(err.contains("duplicate entry id") && err.contains("line 3"), "{err}");

        let mut lines = good();
        lines[2] = entry("00000002", Some("00000001"), HI, 7, Some((AT, "hi")), "");
        let err = check(&file(&lines), ID).unwrap_err();
        assert!(err.starts_with("line 3:") && err.contains("message_count"), "{err}");

        let mut lines = good();
        lines[2] = entry("00000002", Some("00000001"), HI, 2, None, "");
        let err = check(&file(&lines), ID).unwrap_err();
        assert!(err.contains("last_prompt_at"), "{err}");

        let err = check(&file(&good()), "01a22926-0000-756a-8624-63d343ece1ce").unwrap_err();
        assert!(err.starts_with("line 1 (header)"), "{err}");

        let mut lines = good();
        lines.insert(2, "{not json".to_owned());
        let err = check(&file(&lines), ID).unwrap_err();
        assert!(err.starts_with("line 3: not JSON"), "{err}");
    }

    #[test]
    fn a_bad_line_before_the_end_is_an_error_even_when_the_last_is_fine() {
        let mut lines = good();
        lines[2] = lines[2].replace(r#""type":"message""#, r#""type":"bookmark""#);
        let err = check(&file(&lines), ID).unwrap_err();
        assert!(err.contains("line 3") && err.contains("bookmark"), "{err}");
    }

    #[test]
    fn the_view_replays_compaction_and_keeps_system_messages() {
        let answer =
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[],"is_error":true}]}"#;
        let mut lines = good();
        lines.push(entry("00000004", Some("00000003"), answer, 4, Some((AT, "hi")), ""));
        lines.push(entry(
            "00000005",
            Some("00000004"),
            SUMMARY,
            5,
            Some((AT, "hi")),
            r#","compaction":{"first_kept":"00000003","tokens_before":10,"tokens_after":3}"#,
        ));
        let log = check(&file(&lines), ID).unwrap();
        let view = log.view().unwrap();
        let roles: Vec<Role> = view.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::System, Role::User, Role::Assistant, Role::User]);
        assert!(matches!(view[1].content[0], ContentBlock::CompactionSummary { .. }));
        assert_eq!(log.messages().count(), 5, "the file keeps the whole history");
        assert!(unanswered_calls(&view).is_empty());

        // A summary without its record, and a record on a plain message, are both wrong.
        let mut bad = lines.clone();
        bad[5] = entry("00000005", Some("00000004"), SUMMARY, 5, Some((AT, "hi")), "");
        assert!(check(&file(&bad), ID)
            .unwrap_err()
            .contains("without its compaction record"));
        let mut bad = lines;
        bad[5] = bad[5].replace("\"00000003\"", "\"0000000f\"");
        assert!(check(&file(&bad), ID).unwrap_err().contains("first_kept"));
    }

    /// A branch line: `parent` the old tip, `tip` the new, `n` and `prompt` the new tip's
    /// activity, `extra` more fields.
    fn branch(
        id: &str,
        parent: &str,
        tip: Option<&str>,
        n: usize,
        prompt: Option<(&str, &str)>,
        extra: &str,
    ) -> String {
        let tip = tip.map_or("null".to_owned(), |t| format!("\"{t}\""));
        let (at, text) = prompt.map_or(("null".to_owned(), "null".to_owned()), |(t, m)| {
            (format!("\"{t}\""), format!("\"{m}\""))
        });
        let wire = if n >= 2 { WIRE } else { "null" };
        format!(
            r#"{{"type":"branch","id":"{id}","parent_id":"{parent}","tip":{tip}{extra},"timestamp":"2026-11-29T21:11:41Z","activity":{{"message_count":{n},"last_prompt_at":{at},"last_user_message":{text},"wire":{wire}}}}}"#
        )
    }

    const ADDRESS_A: &str = "4055596668af48dffce55460e7521e0460f42ee03c720ad6b4b4cbf6cb54df7c";

    #[test]
    fn branch_lines_move_the_tip_and_carry_the_activity_of_the_new_one() {
        // Back to before "hi" (the tip becomes the system message), then a new prompt there.
        let mut lines = good();
        lines.push(branch("0000000a", "00000003", Some("00000001"), 1, None, ""));
        lines.push(entry("00000004", Some("00000001"), HI, 2, Some((AT, "hi")), ""));
        let log = check(&file(&lines), ID).unwrap();
        assert_eq!(log.tip.as_deref(), Some("00000004"));
        let path: Vec<&str> = log.path().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(path, ["00000001", "00000004"], "the abandoned branch is off the path");
        assert_eq!(log.entries.len(), 4, "but still in the file");
        assert!(unanswered_calls(&log.view().unwrap()).is_empty());

        // A message that does not follow the new tip, a tip naming a branch line or nothing,
        // and a branch line with the old tip's activity are each named.
        let mut bad = lines.clone();
        bad[5] = entry("00000004", Some("00000003"), HI, 4, Some((AT, "hi")), "");
        assert!(check(&file(&bad), ID)
            .unwrap_err()
            .starts_with("line 6: parent_id must be the tip"));
        let mut bad = lines.clone();
        bad[4] = branch("0000000a", "00000003", Some("0000000f"), 1, None, "");
        assert!(check(&file(&bad), ID).unwrap_err().contains("names no earlier entry"));
        let mut bad = lines.clone();
        bad.insert(5, branch("0000000b", "00000001", Some("0000000a"), 1, None, ""));
        assert!(check(&file(&bad), ID)
            .unwrap_err()
            .contains("names a branch entry, not a message"));
        let mut bad = lines;
        bad[4] = branch("0000000a", "00000003", Some("00000001"), 3, Some((AT, "hi")), "");
        assert!(check(&file(&bad), ID)
            .unwrap_err()
            .contains("activity.message_count is 3"));

        // The empty start: tip null, everything zero.
        let mut lines = good();
        lines.push(branch("0000000a", "00000003", None, 0, None, ""));
        let log = check(&file(&lines), ID).unwrap();
        assert_eq!(log.tip, None);
        assert!(log.view().unwrap().is_empty());
    }

    #[test]
    fn checkpoints_keep_the_tip_and_name_whole_blobs() {
        let record = format!(r#","checkpoint":{{"path":"/w/out/plan.txt","before":"{ADDRESS_A}","after":null}}"#);
        let mut lines = good();
        lines.push(branch(
            "0000000c",
            "00000003",
            Some("00000003"),
            3,
            Some((AT, "hi")),
            &record,
        ));
        let log = check(&file(&lines), ID).unwrap();
        let records: Vec<_> = log.checkpoints().collect();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].0, Some("00000003"), "it belongs to the tip");
        assert_eq!(records[0].1.before.as_deref(), Some(ADDRESS_A));
        assert!(!records[0].1.restore);

        let dir = tempfile::tempdir().unwrap();
        let err = check_blobs(&log, dir.path()).unwrap_err();
        assert!(
            err.starts_with("line 5: the checkpoint names blob") && err.contains("cannot be read"),
            "{err}"
        );
        let content = b"whole content";
        let address = panto_core::store::checkpoint_address(content);
        let log = check(
            &file(&{
                let mut l = good();
                l.push(branch(
                    "0000000c",
                    "00000003",
                    Some("00000003"),
                    3,
                    Some((AT, "hi")),
                    &record.replace(ADDRESS_A, &address),
                ));
                l
            }),
            ID,
        )
        .unwrap();
        std::fs::write(dir.path().join(&address), &content[..5]).unwrap();
        assert!(check_blobs(&log, dir.path()).unwrap_err().contains("torn or damaged"));
        std::fs::write(dir.path().join(&address), content).unwrap();
        assert_eq!(check_blobs(&log, dir.path()), Ok(1));

        // A record must keep the tip, and its fields have their shapes.
        let mut bad = good();
        bad.push(branch(
            "0000000c",
            "00000003",
            Some("00000002"),
            2,
            Some((AT, "hi")),
            &record,
        ));
        assert!(check(&file(&bad), ID).unwrap_err().contains("must keep the tip"));
        for (field, wrong) in [
            (ADDRESS_A, "not-an-address"),
            ("/w/out/plan.txt", "relative.txt"),
            (r#""after":null"#, r#""after":null,"restore":false"#),
        ] {
            let mut bad = good();
            bad.push(branch(
                "0000000c",
                "00000003",
                Some("00000003"),
                3,
                Some((AT, "hi")),
                &record.replace(field, wrong),
            ));
            let err = check(&file(&bad), ID).unwrap_err();
            assert!(err.starts_with("line 5: checkpoint."), "{wrong}: {err}");
        }
    }

    #[test]
    fn a_fork_header_names_its_origin() {
        let mut lines = good();
        lines[0] = lines[0].replace(
            r#""metadata":null"#,
            r#""metadata":null,"forked_from":{"session":"01a22926-0000-756a-8624-63d343ece1ce","entry":"00000003"}"#,
        );
        let log = check(&file(&lines), ID).unwrap();
        assert_eq!(
            log.forked_from,
            Some(("01a22926-0000-756a-8624-63d343ece1ce".to_owned(), "00000003".to_owned()))
        );
        let mut bad = lines.clone();
        bad[0] = bad[0].replace(r#""entry":"00000003""#, r#""entry":3"#);
        assert!(check(&file(&bad), ID).unwrap_err().contains("forked_from.entry"));
        let mut bad = lines;
        bad[0] = bad[0].replace("01a22926-0000-756a-8624-63d343ece1ce", ID);
        assert!(check(&file(&bad), ID).unwrap_err().contains("another session"));
    }

    #[test]
    fn timestamps() {
        assert!(is_utc_timestamp("2026-11-29T21:11:39.110488065Z"));
        assert!(is_utc_timestamp("2026-11-29T21:11:39Z"));
        assert!(is_utc_timestamp("2026-11-29T21:11:39+00:00"));
        assert!(!is_utc_timestamp("2026-11-29 21:11:39Z"));
        assert!(!is_utc_timestamp("2026-11-29T21:11:39."));
        assert!(!is_utc_timestamp("2026-11-29T21:11:39+02:00"));
        assert!(!is_utc_timestamp(""));
    }
}
