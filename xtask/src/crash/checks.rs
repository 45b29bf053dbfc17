//! The checks a trial makes on what a run left: requests, the load, committed messages, and
//! the interrupted-turn closer.

use std::sync::Arc;

use anyhow::{anyhow, Result};
use panto_core::{ContentBlock, Message, Role, SessionStore, ToolResultContent};
use panto_store_fs::JsonlStore;
use serde_json::Value;

use super::format::LogFile;
use super::script::{self, Style};
use super::stream::Transcript;
use super::trial::Harness;

/// The text every interrupted-turn closer starts with (panto-core's `INTERRUPTED_RESULT`).
const CLOSER_PREFIX: &str = "interrupted:";

/// The run tag a request carries in its [`script::RUN_HEADER`].
pub fn run_tag(request: &Value) -> Option<&str> {
    request["headers"]
        .as_array()?
        .iter()
        .find(|h| h[0].as_str() == Some(script::RUN_HEADER))
        .and_then(|h| h[1].as_str())
}

/// Every request panto sent must be one the real API would accept.
pub fn check_requests_valid(requests: &[Value]) -> Result<()> {
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
pub fn check_load(ctx: &Harness<'_>, store: &Arc<JsonlStore>, id: &str, log: &LogFile) -> Result<()> {
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

pub fn json(m: &Message) -> String {
    serde_json::to_string(m).unwrap_or_else(|e| format!("(unserialisable: {e})"))
}

/// Every message the run reported as committed is in the log, by content, and every compaction
/// summary it wrote is `summary`. `killed` allows one
/// message (or compaction) more in the log than reported: one persisted just before the kill.
/// Returns how many assistant messages were reported.
pub fn check_committed(t: &Transcript, log: &LogFile, prompt: &str, summary: &str, killed: bool) -> Result<usize> {
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
    // The run's messages: from its prompt to the next human prompt of a later run (the steer the
    // first run took is a human prompt too, but its own).
    let end = history[start + 1..]
        .iter()
        .position(|m| m.is_human_prompt() && m.text() != script::STEER)
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
pub fn check_closer_sent(style: Style, requests: &[&Value], pending: &[String]) -> Result<()> {
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
/// pending calls (the last of the active branch before the resume), on the new active branch,
/// as an error result for each.
pub fn check_closer_logged(before: &LogFile, after: &LogFile, pending: &[String]) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let view = before.view_entries().map_err(|e| anyhow!(e))?;
    let holder = view
        .iter()
        .rev()
        .find(|e| e.message.role == Role::Assistant)
        .ok_or_else(|| anyhow!("pending calls without an assistant message"))?;
    let path = after.path();
    let at = path
        .iter()
        .position(|e| e.id == holder.id)
        .ok_or_else(|| anyhow!("the message with the pending calls is no longer on the active branch"))?;
    let closer = path
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
pub fn all_text(v: &Value) -> String {
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
