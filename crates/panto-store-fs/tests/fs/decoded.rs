//! Loading is never stricter than writing: whatever a model streams, the assistant messages the
//! decoders make of it (with their tool results, as the agent adds them) are written through
//! the JSONL store and load back exactly, and every tool call in them is one a later request
//! can carry.

use std::collections::HashSet;
use std::sync::Arc;

use panto_core::__bench::decode_message;
use panto_core::store::PersistentMessage;
use panto_core::{is_tool_name, ApiStyle, ContentBlock, Conversation, Message, Role, SessionStore, ToolResultContent};
use panto_testkit::script::{AnthropicScript, OpenAiScript};
use panto_testkit::store_contract::anthropic_wire;
use proptest::prelude::*;
use serde_json::Value;

use super::common::fast_store;
use super::proptests::{json, runtime, text};

/// What a model puts into one block of its answer.
#[derive(Debug, Clone)]
enum Block {
    Text(String),
    Thinking(String),
    /// `(id, name, input as streamed)`.
    Tool(String, String, String),
}

/// `{"a":…}` or `[…]` nested `levels` deep.
fn nested(levels: usize, arrays: bool) -> String {
    let (open, close) = if arrays { ("[", "]") } else { ("{\"a\":", "}") };
    format!("{}0{}", open.repeat(levels), close.repeat(levels))
}

/// Tool call ids: well formed, repeated, minted-looking, empty, too long, with path and line-end
/// characters, or anything.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[A-Za-z0-9_-]{1,40}",
        2 => "call_[0-2]",
        1 => "(toolu|call)_panto_[0-3]",
        1 => Just(String::new()),
        1 => "[a-z]{41,70}",
        1 => "[a-z./\\\\\n\r ]{1,20}",
        1 => any::<String>(),
    ]
}

/// Tool names: offered names, or not.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z_]{1,16}",
        1 => Just(String::new()),
        1 => "[a-z]{65,70}",
        1 => any::<String>(),
    ]
}

/// Tool input as streamed: any JSON value (objects or not), nesting from shallow to past what
/// serde_json reads, cut-off JSON, and text that is not JSON.
fn input() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => json().prop_map(|v| v.to_string()),
        2 => (0usize..200, any::<bool>()).prop_map(|(levels, arrays)| format!("{{\"a\":{}}}", nested(levels, arrays))),
        1 => (json(), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
            let s = v.to_string();
            let at = cut.index(s.len() + 1);
            s.get(..at).unwrap_or("").to_owned()
        }),
        1 => text(),
    ]
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        1 => text().prop_map(Block::Text),
        1 => text().prop_map(Block::Thinking),
        3 => (id(), name(), input()).prop_map(|(id, name, input)| Block::Tool(id, name, input)),
    ]
}

/// A response of `blocks` as `style` streams it.
fn response(style: ApiStyle, blocks: &[Block]) -> Vec<u8> {
    if style == ApiStyle::AnthropicMessages {
        blocks
            .iter()
            .fold(AnthropicScript::new(), |s, b| match b {
                Block::Text(t) => s.text(t),
                Block::Thinking(t) => s.thinking(t, "c2ln"),
                Block::Tool(id, name, input) => s.tool_use(id, name, input),
            })
            .build()
    } else {
        blocks
            .iter()
            .fold(OpenAiScript::new(), |s, b| match b {
                Block::Text(t) => s.text(t),
                Block::Thinking(t) => s.reasoning(t),
                Block::Tool(id, name, input) => s.tool_call(id, name, input),
            })
            .build()
    }
}

/// The user message of tool results the agent adds after `message`: each rejected call's error,
/// and a plain result for the others.
fn results(message: &Message, rejected: &[(String, String)]) -> Option<Message> {
    let blocks: Vec<ContentBlock> = message
        .tool_uses()
        .map(|(id, _, _)| {
            let error = rejected.iter().find(|(r, _)| r == id);
            ContentBlock::ToolResult {
                tool_use_id: id.to_owned(),
                content: vec![ToolResultContent::Text {
                    text: error.map_or("ok", |(_, reason)| reason).to_owned(),
                }],
                is_error: error.is_some(),
            }
        })
        .collect();
    (!blocks.is_empty()).then(|| Message::new(Role::User, blocks))
}

/// How many levels of arrays and objects `value` nests.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Every tool call of `conversation` is one a request can carry: an id of 1 to 40 characters
/// of `[A-Za-z0-9_-]` used once in the conversation, a offered name, an object for input, nested
/// at most 64 levels deep.
fn check_calls(conversation: &Conversation) -> Result<(), TestCaseError> {
    let mut ids = HashSet::new();
    for (id, name, input) in conversation.messages.iter().flat_map(Message::tool_uses) {
        prop_assert!(
            (1..=40).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "id {:?}",
            id
        );
        prop_assert!(ids.insert(id.to_owned()), "id {:?} twice", id);
        prop_assert!(is_tool_name(name), "name {:?}", name);
        prop_assert!(input.is_object() && depth(input) <= 64, "input {}", input);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn decoded_messages_are_written_and_load_back_exactly(
        turns in prop::collection::vec((any::<bool>(), prop::collection::vec(block(), 0..5)), 1..4),
    ) {
        let rt = runtime();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = fast_store(dir.path());
        let mut conversation = Conversation::new();
        conversation.add_user_message("go");
        let mut batches = vec![(0, 1)];
        for (anthropic, blocks) in &turns {
            let style = if *anthropic { ApiStyle::AnthropicMessages } else { ApiStyle::OpenAiChat };
            let decoded = decode_message(style, &conversation.messages, &response(style, blocks))
                .map_err(|e| TestCaseError::fail(format!("{style}: a scripted response did not decode: {e}")))?;
            let start = conversation.messages.len();
            let tool_results = results(&decoded.message, &decoded.rejected);
            conversation.messages.push(decoded.message);
            batches.push((start, start + 1));
            if let Some(tool_results) = tool_results {
                conversation.messages.push(tool_results);
                batches.push((start + 1, start + 2));
            }
        }

        let wire = anthropic_wire();
        let id = rt.block_on(async {
            let mut session = panto_core::Session::create(store.clone());
            for (from, to) in batches {
                let entries: Vec<PersistentMessage<'_>> = conversation.messages[from..to]
                    .iter()
                    .map(|m| PersistentMessage {
                        message: m,
                        usage: m.usage,
                        wire: Some(&wire),
                        conversation: &conversation,
                        tools_available: &[],
                        compaction: None,
                    })
                    .collect();
                session.append(&entries).await.expect("append");
            }
            session.id().to_owned()
        });
        let loaded = rt.block_on(async {
            let fresh: Arc<dyn SessionStore> = fast_store(dir.path());
            fresh.load(&id).await
        });
        prop_assert_eq!(loaded.expect("the session loads"), Some(conversation.clone()));
        let listed = rt.block_on(fast_store(dir.path()).list_with_problems()).expect("list");
        prop_assert_eq!(listed.0.len(), 1);
        prop_assert!(listed.1.is_empty(), "problems listing: {:?}", listed.1);
        check_calls(&conversation)?;
    }
}
