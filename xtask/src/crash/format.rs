//! An independent check of a session file against docs/session-format.md, written from the
//! specification rather than from the store's code, so that a bug in the store's reader cannot
//! hide the same bug in its writer.
//!
//! [`check`] reads every line (a torn, unterminated last line is allowed and set aside), checks
//! the header, every entry's fields, that entry ids are unique and chain by `parent_id`, and that
//! each entry's running activity is right. [`LogFile::view`] replays compactions the way the
//! specification says `load` must, so the harness can compare it with what the store returns.

use std::collections::HashMap;

use panto_core::{ContentBlock, Message, Role, Usage};
use serde_json::Value;

/// One entry (a line after the header) of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The 1-based line number.
    pub line: usize,
    /// The entry id.
    pub id: String,
    /// The message.
    pub message: Message,
    /// For a compaction summary: the entry id of the first message kept (`None` when nothing
    /// was kept). `None` for every other entry.
    pub compaction: Option<Option<String>>,
}

/// A session file that passed [`check`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFile {
    /// Whether the file has a complete header line; a file without one holds no session.
    pub has_header: bool,
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// Bytes up to and including the last line end: everything ever committed.
    pub committed_bytes: usize,
    /// Bytes after the last line end: a torn write that was never committed.
    pub torn_bytes: usize,
}

impl LogFile {
    /// The messages `load` must return: the chain replayed oldest first, where a compaction entry
    /// replaces the view with the system messages before its `first_kept`, itself, and the view
    /// from `first_kept` on.
    pub fn view(&self) -> Result<Vec<&Message>, String> {
        let mut view: Vec<usize> = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            match &entry.compaction {
                None => view.push(i),
                Some(first_kept) => {
                    let cut = match first_kept {
                        None => view.len(),
                        Some(id) => view.iter().position(|&v| self.entries[v].id == *id).ok_or_else(|| {
                            format!(
                                "line {}: compaction first_kept {id:?} is not in the view the model saw",
                                entry.line
                            )
                        })?,
                    };
                    let mut next: Vec<usize> = view[..cut]
                        .iter()
                        .copied()
                        .filter(|&v| self.entries[v].message.role == Role::System)
                        .collect();
                    next.push(i);
                    next.extend_from_slice(&view[cut..]);
                    view = next;
                }
            }
        }
        Ok(view.into_iter().map(|i| &self.entries[i].message).collect())
    }

    /// The full history, oldest first (what the file keeps, compactions notwithstanding).
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().map(|e| &e.message)
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
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut activity = Activity::default();
    for (n, line) in committed.split_terminator('\n').enumerate() {
        let line_no = n + 1;
        let value: Value = serde_json::from_str(line).map_err(|e| format!("line {line_no}: not JSON: {e}"))?;
        let obj = value
            .as_object()
            .ok_or_else(|| format!("line {line_no}: not a JSON object"))?;
        if line_no == 1 {
            check_header(obj, file_id)?;
            log.has_header = true;
            continue;
        }
        let entry = check_entry(obj, line_no, &log.entries, &ids, &mut activity)?;
        ids.insert(entry.id.clone(), line_no);
        log.entries.push(entry);
    }
    Ok(log)
}

type Object = serde_json::Map<String, Value>;

fn check_header(obj: &Object, file_id: &str) -> Result<(), String> {
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
    Ok(())
}

/// The running activity an entry must carry, folded over the entries before it.
#[derive(Debug, Default)]
struct Activity {
    count: usize,
    last_prompt_at: Option<String>,
    last_user_message: Option<String>,
    wire: Option<Value>,
}

fn check_entry(
    obj: &Object,
    line_no: usize,
    before: &[Entry],
    ids: &HashMap<String, usize>,
    activity: &mut Activity,
) -> Result<Entry, String> {
    let at = |m: String| format!("line {line_no}: {m}");
    if obj.get("type").and_then(Value::as_str) != Some("message") {
        return Err(at(format!(
            "entry type must be \"message\", got {}",
            show(obj.get("type"))
        )));
    }
    let id = obj.get("id").and_then(Value::as_str).unwrap_or("");
    if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(at(format!(
            "id must be 8 lowercase hex digits, got {}",
            show(obj.get("id"))
        )));
    }
    if let Some(first) = ids.get(id) {
        return Err(at(format!("duplicate entry id {id:?} (first used on line {first})")));
    }
    let expected_parent = before
        .last()
        .map(|e| Value::String(e.id.clone()))
        .unwrap_or(Value::Null);
    let parent = obj.get("parent_id").cloned().unwrap_or(Value::Null);
    if parent != expected_parent {
        return Err(at(format!(
            "parent_id must be {expected_parent} (the writer appends to the newest entry), got {parent}"
        )));
    }
    let timestamp = obj.get("timestamp").and_then(Value::as_str).unwrap_or("");
    if !is_utc_timestamp(timestamp) {
        return Err(at(format!(
            "timestamp must be an RFC 3339 UTC timestamp, got {}",
            show(obj.get("timestamp"))
        )));
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
    let compaction = match (obj.get("compaction"), is_summary) {
        (None, false) => None,
        (Some(Value::Object(c)), true) => {
            let first_kept = match c.get("first_kept") {
                Some(Value::Null) => None,
                Some(Value::String(k)) if ids.contains_key(k) => Some(k.clone()),
                other => {
                    return Err(at(format!(
                        "compaction.first_kept must be null or an earlier entry id, got {}",
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

    activity.count += 1;
    if message.is_human_prompt() {
        activity.last_prompt_at = Some(timestamp.to_owned());
        activity.last_user_message = Some(message.text().chars().take(200).collect());
    }
    if !wire.is_null() {
        activity.wire = Some(wire);
    }
    check_activity(obj.get("activity"), activity).map_err(at)?;

    Ok(Entry {
        line: line_no,
        id: id.to_owned(),
        message,
        compaction,
    })
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
