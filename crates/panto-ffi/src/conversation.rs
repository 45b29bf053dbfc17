//! Conversations built and edited by the embedder: an agent started from a conversation given as
//! JSON, messages appended by hand, and a compaction with the embedder's own summary.
//!
//! The JSON is the shape `panto_agent_conversation_json` writes, read by panto-core's own
//! `Conversation` and `Message` deserializers, the ones the session stores read a session with;
//! an error names the argument and the path to the bad value.

use std::ffi::c_char;

use panto_core::{Conversation, Message};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::agent::{make_agent, panto_agent, Start};
use crate::config::panto_config;
use crate::error::{panto_error, Failure};
use crate::guard::{handle, ErrOut, HandOut};
use crate::session::panto_session;
use crate::status::{PANTO_ERR_INVALID_ARGUMENT, PANTO_OK};

/// The members a conversation object may have.
const CONVERSATION_FIELDS: &[&str] = &["messages", "metadata"];

/// `json` read as a `T` by its serde deserializer; the error names `argument` and where in it the
/// value is wrong (`conversation_json: messages[1].content[0]: unknown variant ...`).
fn parse<T: DeserializeOwned>(json: &str, argument: &str) -> Result<T, Failure> {
    from_value(json_value(json, argument)?, argument)
}

/// `json` read as JSON, or the error naming `argument`.
fn json_value(json: &str, argument: &str) -> Result<Value, Failure> {
    serde_json::from_str(json)
        .map_err(|e| Failure::new(PANTO_ERR_INVALID_ARGUMENT, format!("{argument}: invalid JSON: {e}")))
}

fn from_value<T: DeserializeOwned>(value: Value, argument: &str) -> Result<T, Failure> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." {
            format!("{argument}: {inner}")
        } else {
            format!("{argument}: {path}: {inner}")
        };
        Failure::new(PANTO_ERR_INVALID_ARGUMENT, message)
    })
}

/// A conversation object: only `messages` (required) and `metadata`, so that a misspelt member
/// is refused rather than dropped.
fn parse_conversation(json: &str) -> Result<Conversation, Failure> {
    const ARGUMENT: &str = "conversation_json";
    let value = json_value(json, ARGUMENT)?;
    let Value::Object(members) = &value else {
        return Err(Failure::new(
            PANTO_ERR_INVALID_ARGUMENT,
            format!("{ARGUMENT}: expected a JSON object with `messages`"),
        ));
    };
    if let Some(unknown) = members.keys().find(|k| !CONVERSATION_FIELDS.contains(&k.as_str())) {
        return Err(Failure::new(
            PANTO_ERR_INVALID_ARGUMENT,
            format!("{ARGUMENT}: unknown field `{unknown}`, expected `messages` or `metadata`"),
        ));
    }
    from_value(value, ARGUMENT)
}

/// Creates an agent on `session`, a session that holds no messages (a new one from
/// `panto_session_create`), starting from `conversation_json`: a conversation in the shape
/// `panto_agent_conversation_json` writes (`{"messages": [...], "metadata": "..."}`, docs/ffi.md).
/// Each message is read as a session store reads a stored one; an assistant message whose tool
/// calls have no results gets "interrupted" error results, as a resumed session does. The
/// conversation is written into the session: at once when it holds an assistant message,
/// otherwise together with the first turn (a new session is written from its first assistant
/// message on). The agent then runs, compacts and persists as one made by `panto_agent_new`.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_INVALID_ARGUMENT` (not JSON, an unknown
/// member, or a message that does not read; the message names the argument and the path, such
/// as ``conversation_json: messages[1].content[0]: unknown variant `txt`, expected one of
/// ...``), `PANTO_ERR_STATE` (the session holds messages: resume it with `panto_agent_new`),
/// `PANTO_ERR_SESSION_IN_USE`, `PANTO_ERR_STORE`, `PANTO_ERR_OTHER`. On failure nothing is
/// written.
///
/// Ownership: `config` and `session` are borrowed for the call (the agent copies them),
/// `conversation_json` is copied. `*out` receives an owned agent (only on success; on failure it
/// is left as it was), freed with `panto_agent_free`. Thread safety: callable from any thread;
/// blocks while the session is written. Not callable from inside a tool callback.
///
/// # Safety
/// `config` and `session` must be NULL or live handles; `conversation_json` NULL or
/// NUL-terminated; `out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_new_with_conversation(
    config: *const panto_config,
    session: *const panto_session,
    conversation_json: *const c_char,
    out: *mut *mut panto_agent,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes `config` and `session` NULL or live, and
        // `conversation_json` NULL or NUL-terminated.
        let (config, session, json) = unsafe {
            (
                handle(config, "config")?,
                handle(session, "session")?,
                crate::cstr::arg(conversation_json, "conversation_json")?,
            )
        };
        let conversation = parse_conversation(&json)?;
        let info = &session.session.info;
        if info.message_count > 0 {
            return Err(Failure::state(format!(
                "session {} already holds {} messages: resume it with panto_agent_new, or start \
                 the conversation on a new session",
                info.id, info.message_count
            )));
        }
        make_agent(
            config,
            session,
            Start::Given(conversation),
            "panto_agent_new_with_conversation",
        )
    })
}

/// Appends a message to the conversation: `message_json` is one element of the `messages` array
/// `panto_agent_conversation_json` writes, read as a session store reads a stored message, so any
/// message the agent itself could hold: a user message (text, images), an assistant message
/// (text, tool calls, with `usage` and `stop_reason` if you have them), tool results (a user
/// message of `tool_result` blocks). It is persisted as the agent persists its own messages: at
/// once, or, in a session not written yet, with its first assistant message. The model sees it
/// with the next request; `panto_agent_retry` asks the model to answer a conversation that now
/// ends with a user message.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_INVALID_ARGUMENT` (not JSON, or not a
/// message; the error names the path, such as ``message_json: role: unknown variant `bot`,
/// ...``), `PANTO_ERR_BUSY`, `PANTO_ERR_SESSION_IN_USE`, `PANTO_ERR_STORE`. On failure the
/// conversation is as it was.
///
/// Ownership: `message_json` is copied. Thread safety: callable from any thread; blocks while
/// the session is written. Not callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `message_json` NULL or NUL-terminated; `err` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_add_message_json(
    agent: *mut panto_agent,
    message_json: *const c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live and `message_json` NULL or
        // NUL-terminated.
        let (agent, json) = unsafe { (handle(agent, "agent")?, crate::cstr::arg(message_json, "message_json")?) };
        let message: Message = parse(&json, "message_json")?;
        agent.shared.with_idle(|a| {
            let len = a.conversation().messages.len();
            a.conversation_mut().messages.push(message);
            let written = agent
                .rt
                .block_on("panto_agent_add_message_json", a.flush())
                .and_then(|flushed| flushed.map_err(Failure::from));
            if let Err(failure) = written {
                a.conversation_mut().messages.truncate(len);
                return Err(failure);
            }
            Ok(PANTO_OK)
        })
    })
}

/// Compacts the conversation with a summary you wrote: the messages before index `first_kept`
/// (an index into the `messages` of `panto_agent_conversation_json`; system messages stay) are
/// replaced by one compaction summary holding `summary`, and the messages from `first_kept` on
/// are kept. It is persisted as `panto_agent_compact` persists its own: the session keeps the
/// full history and records the compaction, so an agent that resumes the session starts from
/// the system prompt, the summary and the kept messages, and the model sees nothing older. No
/// request is made.
///
/// `*result_json` (if `result_json` is not NULL) receives an owned JSON object as
/// `panto_agent_compact` gives (`usage` is null), freed with `panto_string_free`.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_INVALID_ARGUMENT` (an empty summary,
/// `first_kept` past the end, or on a message of tool results whose calls would be summarised
/// away), `PANTO_ERR_STATE` (nothing but system messages before `first_kept`), `PANTO_ERR_BUSY`,
/// `PANTO_ERR_SESSION_IN_USE`, `PANTO_ERR_STORE`. On failure nothing changes.
///
/// Ownership: `summary` is copied. Thread safety: callable from any thread; blocks while the
/// session is written. Not callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `summary` NULL or NUL-terminated; `result_json` and
/// `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_compact_with_summary(
    agent: *mut panto_agent,
    summary: *const c_char,
    first_kept: usize,
    result_json: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `result_json` and `err` NULL or writable.
    unsafe { HandOut::optional(result_json, "result_json", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live and `summary` NULL or NUL-terminated.
        let (agent, summary) = unsafe { (handle(agent, "agent")?, crate::cstr::arg(summary, "summary")?) };
        let result = agent.shared.with_idle(|a| {
            Ok(agent.rt.block_on(
                "panto_agent_compact_with_summary",
                a.compact_with_summary(summary, first_kept),
            )??)
        })?;
        Ok(json!({
            "summary": result.summary,
            "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after,
            "messages_summarized": result.messages_summarized,
            "messages_kept": result.messages_kept,
            "usage": result.usage,
        })
        .to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message_of(json: &str) -> String {
        match parse_conversation(json) {
            Ok(c) => panic!("accepted {json}: {c:?}"),
            Err(f) => {
                assert_eq!(f.code, PANTO_ERR_INVALID_ARGUMENT, "{}", f.message);
                f.message
            }
        }
    }

    #[test]
    fn a_conversation_reads_as_the_agent_writes_it() {
        let json = r#"{"messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}],
             "stop_reason": "tool_use"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                "content": [{"type": "text", "text": "sunny"}], "is_error": false}]}],
            "metadata": "{\"app\": 1}"}"#;
        let conversation = parse_conversation(json).unwrap();
        assert_eq!(conversation.messages.len(), 3);
        assert_eq!(conversation.metadata.as_deref(), Some("{\"app\": 1}"));
        let written = serde_json::to_string(&conversation).unwrap();
        assert_eq!(parse_conversation(&written).unwrap(), conversation);
    }

    #[test]
    fn errors_name_the_argument_and_the_path() {
        let bad_block = message_of(r#"{"messages": [{"role": "user", "content": [{"type": "txt", "text": "x"}]}]}"#);
        assert!(
            bad_block.starts_with("conversation_json: messages[0].content[0]") && bad_block.contains("`txt`"),
            "{bad_block}"
        );
        let bad_role = message_of(r#"{"messages": [{"role": "bot", "content": []}]}"#);
        assert!(
            bad_role.starts_with("conversation_json: messages[0].role") && bad_role.contains("`bot`"),
            "{bad_role}"
        );
        let missing = message_of(r#"{"messages": [{"role": "user"}]}"#);
        assert!(
            missing.starts_with("conversation_json: messages[0]") && missing.contains("`content`"),
            "{missing}"
        );
        let misspelt = message_of(r#"{"mesages": []}"#);
        assert!(misspelt.contains("unknown field `mesages`"), "{misspelt}");
        assert!(message_of("[]").contains("expected a JSON object"));
        let syntax = message_of(r#"{"messages": [}"#);
        assert!(
            syntax.starts_with("conversation_json: invalid JSON") && syntax.contains("column"),
            "{syntax}"
        );
    }

    #[test]
    fn a_message_error_names_the_path() {
        let err = parse::<Message>(
            r#"{"role": "user", "content": [{"type": "image", "media_type": "image/png"}]}"#,
            "message_json",
        )
        .unwrap_err();
        assert_eq!(err.code, PANTO_ERR_INVALID_ARGUMENT);
        assert!(
            err.message.starts_with("message_json: content[0]") && err.message.contains("`data`"),
            "{}",
            err.message
        );
    }
}
