//! Reading a `panto -p … --output-format stream-json` run: which messages it reported as
//! committed to the session, and what else it promised.
//!
//! docs/cli.md defines the lines. The harness leans on three promises:
//!
//! - a `message_complete` line means the assistant message (the `block_complete` blocks since the
//!   previous message) is persisted;
//! - a `compaction_complete` line means the compaction summary is persisted (the agent appends it
//!   before it reports the event);
//! - the tool-result message of a batch of tool calls is persisted before the next request, so
//!   once every `tool_start` of a batch has its `tool_complete`, any later progress line proves
//!   the results are in the log.
//!
//! A killed process may leave a torn last line: it is kept aside, never parsed.

use std::collections::BTreeMap;

use panto_core::{ContentBlock, Event, Message, Role, StopReason, ToolResultContent, Usage};
use serde_json::Value;

/// One tool call's outcome as the run reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The call id.
    pub id: String,
    /// The result content.
    pub content: Vec<ToolResultContent>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// Whether a later line proves the result message is persisted.
    pub committed: bool,
}

/// What one stream-json run reported.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Transcript {
    /// The `session_id` of the `session` line.
    pub session_id: Option<String>,
    /// Whether the `session` line said the session was resumed.
    pub resumed: bool,
    /// Every assistant message a `message_complete` line reported, rebuilt from its blocks.
    pub committed: Vec<Message>,
    /// Every `tool_complete`, in the order reported.
    pub tools: Vec<ToolOutcome>,
    /// The ids of every `tool_start`.
    pub tool_starts: Vec<String>,
    /// How many `compaction_complete` lines there were.
    pub compactions: usize,
    /// How many `compaction_start` lines there were.
    pub compaction_starts: usize,
    /// Whether a `turn_complete` line arrived.
    pub turn_complete: bool,
    /// The closing `result` object, if it arrived.
    pub result: Option<Value>,
    /// Complete lines read.
    pub lines: usize,
    /// The `type` of the last complete line.
    pub last_type: Option<String>,
    /// How many lines of each `type` there were.
    pub counts: BTreeMap<String, usize>,
    /// The bytes of an unterminated last line, if the run was killed while writing one.
    pub torn_tail: Option<String>,
    /// The texts of the `steer` and `follow_up_start` lines: messages sent on stdin that joined.
    pub steers: Vec<String>,
    /// Whether a `message_complete` came after the first of them: the message that carries it
    /// was persisted before that request was sent.
    pub steer_committed: bool,
    /// The `rewind` line, if the run rewound.
    pub rewind: Option<Value>,
}

impl Transcript {
    /// Whether the run reported anything as committed to the session.
    pub fn committed_anything(&self) -> bool {
        !self.committed.is_empty() || self.compactions > 0 || self.tools.iter().any(|t| t.committed)
    }

    /// Where in the turn the output stopped, for a run that was killed: the coarse phase the
    /// kill landed in.
    pub fn phase(&self) -> &'static str {
        if self.session_id.is_none() {
            return "starting up";
        }
        match self.last_type.as_deref() {
            Some("block_start" | "text_delta" | "thinking_delta" | "tool_input_delta" | "block_complete" | "retry") => {
                "streaming a reply"
            }
            Some("message_complete") => match self.committed.last().and_then(|m| m.stop_reason.as_ref()) {
                Some(StopReason::ToolUse) => "between a message and its tools",
                _ => "after the last message",
            },
            Some("tool_start" | "tool_complete") => "running tools",
            Some("steer" | "follow_up_start") => "as the steer joined",
            Some("compaction_start") => "compacting",
            Some("compaction_complete") => "after a compaction",
            Some("turn_complete" | "result") => "after the turn",
            _ => "waiting for the first reply",
        }
    }

    /// Whether the `result` line arrived and reports success.
    pub fn succeeded(&self) -> bool {
        self.result
            .as_ref()
            .is_some_and(|r| r["is_error"] == Value::Bool(false))
    }
}

/// Every line type docs/cli.md and docs/events.md define.
pub const EVENT_TYPES: &[&str] = &[
    "session",
    "block_start",
    "text_delta",
    "thinking_delta",
    "tool_input_delta",
    "block_complete",
    "message_complete",
    "tool_start",
    "tool_complete",
    "retry",
    "compaction_start",
    "compaction_complete",
    "turn_complete",
    "steer",
    "follow_up_start",
    "rewind",
    "input_error",
    "result",
];

/// Lines print mode writes itself rather than panto-core's event JSON.
const CLI_LINES: &[&str] = &["session", "rewind", "input_error", "result"];

/// Lines that can only appear once the turn has moved past a batch of tool calls, which means
/// the batch's result message was persisted first.
const PROGRESS: &[&str] = &[
    "block_start",
    "text_delta",
    "thinking_delta",
    "tool_input_delta",
    "block_complete",
    "message_complete",
    "retry",
    "compaction_start",
    "compaction_complete",
    "turn_complete",
];

/// Parses the stdout of a stream-json run. Every complete line must be a JSON object with a
/// `type`; the error names the line and what was wrong. An unterminated last line is kept in
/// [`Transcript::torn_tail`].
pub fn parse(stdout: &[u8]) -> Result<Transcript, String> {
    let text = String::from_utf8_lossy(stdout);
    let (complete, tail) = match text.rfind('\n') {
        Some(end) => (&text[..end + 1], &text[end + 1..]),
        None => ("", &text[..]),
    };
    let mut t = Transcript {
        torn_tail: (!tail.is_empty()).then(|| tail.to_owned()),
        ..Transcript::default()
    };
    // Blocks of the assistant message being streamed, by index.
    let mut blocks: BTreeMap<usize, ContentBlock> = BTreeMap::new();
    // Indices into `t.tools` of the current batch, and how many calls it started.
    let mut batch: Vec<usize> = Vec::new();
    let mut batch_starts = 0usize;
    for (n, line) in complete.lines().enumerate() {
        let line_no = n + 1;
        t.lines = line_no;
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("stream-json line {line_no} is not JSON ({e}): {line}"))?;
        let kind = value["type"]
            .as_str()
            .ok_or_else(|| format!("stream-json line {line_no} has no \"type\": {line}"))?
            .to_owned();
        t.last_type = Some(kind.clone());
        *t.counts.entry(kind.clone()).or_default() += 1;
        if PROGRESS.contains(&kind.as_str()) && batch_starts > 0 && batch.len() == batch_starts {
            for &i in &batch {
                t.tools[i].committed = true;
            }
            batch.clear();
            batch_starts = 0;
        }
        let field = |name: &str| -> Result<&Value, String> {
            value
                .get(name)
                .ok_or_else(|| format!("stream-json line {line_no} ({kind}) lacks \"{name}\": {line}"))
        };
        if !CLI_LINES.contains(&kind.as_str()) {
            // Every event line must read as panto-core's Event (docs/events.md, this version).
            serde_json::from_value::<Event>(value.clone())
                .map_err(|e| format!("stream-json line {line_no} is not an event of this version ({e}): {line}"))?;
        }
        match kind.as_str() {
            "session" => {
                if line_no != 1 {
                    return Err(format!("stream-json line {line_no}: the session line must come first"));
                }
                let version = field("version")?;
                if version.as_u64() != Some(u64::from(panto_core::EVENT_SCHEMA_VERSION)) {
                    return Err(format!(
                        "stream-json version {version}, but this harness reads version {}",
                        panto_core::EVENT_SCHEMA_VERSION
                    ));
                }
                t.session_id = Some(
                    field("session_id")?
                        .as_str()
                        .ok_or_else(|| format!("stream-json line {line_no}: session_id is not a string"))?
                        .to_owned(),
                );
                t.resumed = field("resumed")?.as_bool().unwrap_or(false);
            }
            "block_complete" => {
                let index = index_of(field("index")?, line_no)?;
                let block: ContentBlock = serde_json::from_value(field("block")?.clone())
                    .map_err(|e| format!("stream-json line {line_no}: block is not a content block: {e}"))?;
                blocks.insert(index, block);
            }
            "retry" => {
                // The failed attempt is redone from scratch; what it streamed is never stored.
                blocks.clear();
            }
            "message_complete" => {
                let usage = match field("usage")? {
                    Value::Null => None,
                    u => Some(
                        serde_json::from_value::<Usage>(u.clone())
                            .map_err(|e| format!("stream-json line {line_no}: bad usage: {e}"))?,
                    ),
                };
                let stop_reason = field("stop_reason")?
                    .as_str()
                    .map(StopReason::from_wire)
                    .ok_or_else(|| format!("stream-json line {line_no}: stop_reason is not a string"))?;
                let mut message = Message::new(Role::Assistant, std::mem::take(&mut blocks).into_values().collect());
                message.usage = usage;
                message.stop_reason = Some(stop_reason);
                t.committed.push(message);
                if !t.steers.is_empty() {
                    t.steer_committed = true;
                }
            }
            "tool_start" => {
                let id = str_field(field("id")?, line_no, "id")?;
                if batch_starts > 0 && batch.len() == batch_starts {
                    // A finished batch followed directly by new calls (no progress line between
                    // them) proves nothing; start counting the new batch.
                    batch.clear();
                    batch_starts = 0;
                }
                batch_starts += 1;
                t.tool_starts.push(id);
            }
            "tool_complete" => {
                let id = str_field(field("id")?, line_no, "id")?;
                let content: Vec<ToolResultContent> = serde_json::from_value(field("content")?.clone())
                    .map_err(|e| format!("stream-json line {line_no}: bad tool content: {e}"))?;
                let is_error = field("is_error")?
                    .as_bool()
                    .ok_or_else(|| format!("stream-json line {line_no}: is_error is not a boolean"))?;
                batch.push(t.tools.len());
                t.tools.push(ToolOutcome {
                    id,
                    content,
                    is_error,
                    committed: false,
                });
            }
            "steer" | "follow_up_start" => t.steers.push(str_field(field("text")?, line_no, "text")?),
            "rewind" => t.rewind = Some(value.clone()),
            "compaction_start" => t.compaction_starts += 1,
            "compaction_complete" => t.compactions += 1,
            "turn_complete" => t.turn_complete = true,
            "result" => {
                // A successful result also proves a finished batch was persisted.
                if value["is_error"] == Value::Bool(false) && batch_starts > 0 && batch.len() == batch_starts {
                    for &i in &batch {
                        t.tools[i].committed = true;
                    }
                }
                t.result = Some(value.clone());
            }
            // Deltas and block starts carry nothing the log keeps; unknown types are skipped as
            // docs/cli.md asks.
            _ => {}
        }
    }
    Ok(t)
}

fn index_of(v: &Value, line_no: usize) -> Result<usize, String> {
    v.as_u64()
        .and_then(|i| usize::try_from(i).ok())
        .ok_or_else(|| format!("stream-json line {line_no}: index is not a number"))
}

fn str_field(v: &Value, line_no: usize, name: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("stream-json line {line_no}: {name} is not a string"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = r#"{"type":"session","version":2,"session_id":"01a2","persisted":true,"resumed":false,"model":"m","alias":null,"api_style":"anthropic-messages"}"#;

    fn lines(ls: &[&str]) -> Vec<u8> {
        let mut out = String::new();
        for l in ls {
            out.push_str(l);
            out.push('\n');
        }
        out.into_bytes()
    }

    #[test]
    fn message_complete_rebuilds_the_message_from_its_blocks() {
        let out = lines(&[
            SESSION,
            r#"{"type":"block_start","index":0,"kind":"text","tool":null}"#,
            r#"{"type":"text_delta","index":0,"text":"Hi"}"#,
            r#"{"type":"block_complete","index":1,"block":{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls"}}}"#,
            r#"{"type":"block_complete","index":0,"block":{"type":"text","text":"Hi"}}"#,
            r#"{"type":"message_complete","usage":{"input_tokens":5,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0},"stop_reason":"tool_use"}"#,
        ]);
        let t = parse(&out).unwrap();
        assert_eq!(t.session_id.as_deref(), Some("01a2"));
        assert_eq!(t.committed.len(), 1);
        let m = &t.committed[0];
        assert_eq!(m.content[0], ContentBlock::text("Hi"), "blocks are ordered by index");
        assert!(matches!(&m.content[1], ContentBlock::ToolUse { id, .. } if id == "t1"));
        assert_eq!(m.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(m.usage.map(|u| u.input_tokens), Some(5));
        assert!(t.committed_anything());
    }

    #[test]
    fn a_retry_discards_the_blocks_of_the_failed_attempt() {
        let out = lines(&[
            SESSION,
            r#"{"type":"block_complete","index":0,"block":{"type":"text","text":"partial"}}"#,
            r#"{"type":"retry","attempt":2,"delay_ms":0,"reason":"x","discard_partial":true}"#,
            r#"{"type":"block_complete","index":0,"block":{"type":"text","text":"whole"}}"#,
            r#"{"type":"message_complete","usage":null,"stop_reason":"end_turn"}"#,
        ]);
        let t = parse(&out).unwrap();
        assert_eq!(t.committed[0].content, vec![ContentBlock::text("whole")]);
        assert_eq!(t.committed[0].usage, None);
    }

    #[test]
    fn tool_results_count_as_committed_only_after_later_progress() {
        let start = |id: &str| format!(r#"{{"type":"tool_start","id":"{id}","name":"bash","input":{{}}}}"#);
        let done = |id: &str| {
            format!(
                r#"{{"type":"tool_complete","id":"{id}","name":"bash","content":[{{"type":"text","text":"ok {id}"}}],"is_error":false}}"#
            )
        };
        let (s1, s2, d1, d2) = (start("a"), start("b"), done("a"), done("b"));
        // Both finished, but nothing after them: not yet provably persisted.
        let t = parse(&lines(&[SESSION, &s1, &s2, &d2, &d1])).unwrap();
        assert_eq!(t.tools.len(), 2);
        assert!(t.tools.iter().all(|o| !o.committed));
        assert!(!t.committed_anything());
        // A compaction start after both completes proves the flush.
        let t = parse(&lines(&[
            SESSION,
            &s1,
            &s2,
            &d2,
            &d1,
            r#"{"type":"compaction_start","tokens_before":9}"#,
        ]))
        .unwrap();
        assert!(t.tools.iter().all(|o| o.committed));
        assert_eq!(
            t.tools[0].content,
            vec![ToolResultContent::Text { text: "ok b".into() }]
        );
        assert_eq!(t.compaction_starts, 1);
        // Half a batch done: nothing committed even if a line follows.
        let t = parse(&lines(&[SESSION, &s1, &s2, &d1])).unwrap();
        assert!(!t.tools[0].committed);
    }

    #[test]
    fn a_torn_last_line_is_set_aside() {
        let mut out = lines(&[
            SESSION,
            r#"{"type":"compaction_complete","tokens_before":9,"tokens_after":2,"usage":null}"#,
        ]);
        out.extend_from_slice(br#"{"type":"message_compl"#);
        let t = parse(&out).unwrap();
        assert_eq!(t.lines, 2);
        assert_eq!(t.compactions, 1);
        assert_eq!(t.torn_tail.as_deref(), Some(r#"{"type":"message_compl"#));
        assert!(t.committed_anything(), "a finished compaction is committed");
    }

    #[test]
    fn the_phase_names_where_the_output_stopped() {
        let at = |ls: &[&str]| parse(&lines(ls)).unwrap().phase();
        assert_eq!(at(&[]), "starting up");
        assert_eq!(at(&[SESSION]), "waiting for the first reply");
        assert_eq!(
            at(&[SESSION, r#"{"type":"text_delta","index":0,"text":"a"}"#]),
            "streaming a reply"
        );
        let tool_use = r#"{"type":"message_complete","usage":null,"stop_reason":"tool_use"}"#;
        assert_eq!(at(&[SESSION, tool_use]), "between a message and its tools");
        assert_eq!(
            at(&[
                SESSION,
                tool_use,
                r#"{"type":"tool_start","id":"a","name":"bash","input":{}}"#
            ]),
            "running tools"
        );
        assert_eq!(
            at(&[SESSION, r#"{"type":"compaction_start","tokens_before":9}"#]),
            "compacting"
        );
        assert_eq!(
            at(&[SESSION, r#"{"type":"result","is_error":false}"#]),
            "after the turn"
        );
    }

    #[test]
    fn the_result_line_is_kept() {
        let t = parse(&lines(&[
            SESSION,
            r#"{"type":"turn_complete","usage":{},"steps":1,"stop_reason":"end_turn"}"#,
            r#"{"type":"result","is_error":false,"error":null}"#,
        ]))
        .unwrap();
        assert!(t.turn_complete && t.succeeded());
    }

    #[test]
    fn bad_lines_are_named() {
        let err = parse(&lines(&[SESSION, "not json"])).unwrap_err();
        assert!(err.contains("line 2") && err.contains("not JSON"), "{err}");
        let err = parse(&lines(&[SESSION, r#"{"index":0}"#])).unwrap_err();
        assert!(err.contains("line 2") && err.contains("type"), "{err}");
        let err = parse(&lines(&[r#"{"type":"message_complete","stop_reason":"end_turn"}"#])).unwrap_err();
        assert!(err.contains("lacks \"usage\""), "{err}");
        // An event line of another version (stream-json 1's `delta`) is named.
        let err = parse(&lines(&[
            SESSION,
            r#"{"type":"delta","index":0,"kind":"text","text":"a"}"#,
        ]))
        .unwrap_err();
        assert!(
            err.contains("line 2 is not an event of this version") && err.contains("`delta`"),
            "{err}"
        );
        let err = parse(&lines(&[r#"{"type":"text_delta","index":0,"text":"a"}"#, SESSION])).unwrap_err();
        assert!(err.contains("must come first"), "{err}");
        let old = SESSION.replace(r#""version":2,"#, "");
        let err = parse(&lines(&[&old])).unwrap_err();
        assert!(err.contains("lacks \"version\""), "{err}");
        let later = SESSION.replace(r#""version":2"#, r#""version":3"#);
        let err = parse(&lines(&[&later])).unwrap_err();
        assert!(err.contains("stream-json version 3"), "{err}");
    }
}
