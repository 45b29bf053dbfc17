//! Property tests of the JSONL store: any conversation round-trips exactly, and no file content
//! (random bytes, or a real log cut, flipped, spliced or reordered) makes reading or reopening
//! it panic; it is read or it is an error.

use std::path::Path;
use std::sync::Arc;

use panto_core::store::new_session_id;
use panto_core::store::PersistentMessage;
use panto_core::{
    ContentBlock, Conversation, Error, Message, Result, Role, Session, SessionStore, StopReason, SystemMode,
    ToolResultContent, Usage,
};
use panto_store_fs::JsonlStore;
use panto_testkit::store_contract::{anthropic_wire, tools};
use proptest::prelude::*;
use serde_json::Value;

use super::common::fast_store;

/// Text of every kind a conversation holds: plain, Unicode, JSON-hostile (quotes, backslashes,
/// control characters, `\u2028`).
pub(super) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 .,]{0,24}",
        2 => any::<String>(),
        1 => "[\"\\\\\n\t\u{0}\u{1f}\u{2028}é日🦀]{0,12}",
    ]
}

/// A JSON value, including integers at the edges and floats that print exactly.
pub(super) fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1_000_000i32..1_000_000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn block() -> impl Strategy<Value = ContentBlock> {
    let part = prop_oneof![
        text().prop_map(|text| ToolResultContent::Text { text }),
        (text(), "[A-Za-z0-9+/=]{0,16}").prop_map(|(media_type, data)| ToolResultContent::Image { media_type, data }),
    ];
    prop_oneof![
        text().prop_map(|text| ContentBlock::Text { text }),
        (text(), prop::option::of(text()))
            .prop_map(|(thinking, signature)| ContentBlock::Thinking { thinking, signature }),
        text().prop_map(|data| ContentBlock::RedactedThinking { data }),
        (text(), text(), json()).prop_map(|(id, name, input)| ContentBlock::ToolUse { id, name, input }),
        (text(), prop::collection::vec(part, 0..3), any::<bool>()).prop_map(|(tool_use_id, content, is_error)| {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            }
        }),
        (text(), any::<bool>()).prop_map(|(text, replace)| ContentBlock::System {
            text,
            mode: if replace {
                SystemMode::Replace
            } else {
                SystemMode::Append
            },
        }),
        text().prop_map(|summary| ContentBlock::CompactionSummary { summary }),
        (text(), text()).prop_map(|(media_type, data)| ContentBlock::Image { media_type, data }),
    ]
}

/// A stop reason: a named one, or any other string (which is kept verbatim unless it is the
/// wire spelling of a named one).
fn stop_reason() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        Just(StopReason::EndTurn),
        Just(StopReason::ToolUse),
        Just(StopReason::MaxTokens),
        Just(StopReason::StopSequence),
        Just(StopReason::Refusal),
        Just(StopReason::ContentFilter),
        Just(StopReason::PauseTurn),
        text()
            .prop_map(|s| StopReason::from_wire(&s))
            .prop_filter("an Other spelling of its own", |r| matches!(r, StopReason::Other(_))),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::System)];
    let usage = (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(a, b, c, d)| Usage {
        input_tokens: a,
        output_tokens: b,
        cache_read_tokens: c,
        cache_write_tokens: d,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    });
    (
        role,
        prop::collection::vec(block(), 0..4),
        prop::option::of(usage),
        prop::option::of(stop_reason()),
        prop::option::of(prop_oneof![json().prop_map(|v| v.to_string()), text()]),
    )
        .prop_map(|(role, content, usage, stop_reason, metadata)| Message {
            role,
            content,
            usage,
            stop_reason,
            metadata,
        })
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (
        prop::collection::vec(message(), 1..8),
        prop::option::of(prop_oneof![json().prop_map(|v| v.to_string()), text()]),
    )
        .prop_map(|(messages, metadata)| Conversation { messages, metadata })
}

pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Appends `conversation`'s messages in batches of the given sizes (cycled), as the agent does.
async fn append_all(store: &Arc<JsonlStore>, conversation: &Conversation, batches: &[usize]) -> String {
    let mut session = Session::create(store.clone());
    let wire = anthropic_wire();
    let tools = tools();
    let mut start = 0;
    for size in batches.iter().cycle() {
        if start >= conversation.messages.len() {
            break;
        }
        let end = (start + size).min(conversation.messages.len());
        let entries: Vec<PersistentMessage<'_>> = conversation.messages[start..end]
            .iter()
            .map(|m| PersistentMessage {
                message: m,
                usage: m.usage,
                wire: (m.role != Role::System).then_some(&wire),
                conversation,
                tools_available: &tools,
                compaction: None,
            })
            .collect();
        session.append(&entries).await.expect("append");
        start = end;
    }
    session.id().to_owned()
}

/// Fails the property when a store call panicked: the store runs its I/O on a blocking thread,
/// so a panic there comes back as an error instead of unwinding into the test.
fn no_panic<T>(what: &str, result: &Result<T>) -> std::result::Result<(), TestCaseError> {
    if let Err(Error::Store { context, source }) = result {
        if context == "session store worker" {
            return Err(TestCaseError::fail(format!("{what} panicked: {source}")));
        }
    }
    Ok(())
}

/// Every read of the session file in `dir`, then a reopen for appending: each must return,
/// whatever the file holds.
async fn read_everything(dir: &Path, id: &str) -> std::result::Result<(), TestCaseError> {
    let store = fast_store(dir);
    let as_dyn: Arc<dyn SessionStore> = store.clone();
    let before = as_dyn.load(id).await;
    no_panic("load", &before)?;
    no_panic("list", &store.list_with_problems().await)?;
    no_panic(
        "resolve",
        &Session::resolve(as_dyn.clone(), &id[..13]).await.map(|_| ()),
    )?;
    let message = Message::new(Role::User, vec![ContentBlock::text("after")]);
    let conversation = Conversation::new();
    let entry = PersistentMessage {
        message: &message,
        usage: None,
        wire: None,
        conversation: &conversation,
        tools_available: &[],
        compaction: None,
    };
    let appended = as_dyn.append(id, &[entry]).await;
    no_panic("append", &appended)?;
    let after = as_dyn.load(id).await;
    no_panic("load after append", &after)?;
    if appended.is_ok() && matches!(before, Ok(Some(_))) {
        // An append never breaks a session that loaded: it reads back with the new message last.
        let loaded = after.map_err(|e| TestCaseError::fail(format!("load after a good append: {e}")))?;
        prop_assert_eq!(loaded.and_then(|c| c.messages.last().cloned()), Some(message));
    }
    Ok(())
}

/// A small real log to damage: a few messages of every kind, one of them a compaction.
fn real_log(rt: &tokio::runtime::Runtime, dir: &Path) -> (String, Vec<u8>) {
    let store = fast_store(dir);
    let mut conversation = Conversation::with_metadata(r#"{"k":"v"}"#);
    conversation.add_system_message("be brief");
    conversation.add_user_message("héllo \"world\"");
    conversation.add_assistant_message(
        vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: "read".into(),
            input: serde_json::json!({"path": "a\nb"}),
        }],
        None,
    );
    conversation.messages.push(Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: "t1".into(),
            content: vec![ToolResultContent::Text { text: "x".repeat(300) }],
            is_error: false,
        }],
    ));
    conversation.add_assistant_message(vec![ContentBlock::text("done")], None);
    let id = rt.block_on(append_all(&store, &conversation, &[1, 2]));
    let summary = Message::new(
        Role::User,
        vec![ContentBlock::CompactionSummary { summary: "s".into() }],
    );
    let entry = PersistentMessage {
        message: &summary,
        usage: None,
        wire: None,
        conversation: &conversation,
        tools_available: &[],
        compaction: Some(panto_core::store::CompactionRecord {
            first_kept: 3,
            tokens_before: 10,
            tokens_after: 2,
        }),
    };
    rt.block_on(store.append(&id, &[entry])).expect("compaction append");
    let bytes = std::fs::read(store.session_path(&id).expect("path")).expect("read");
    (id, bytes)
}

/// A way to damage a log.
#[derive(Debug, Clone)]
enum Damage {
    Truncate(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    DropLine(prop::sample::Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        index().prop_map(Damage::Truncate),
        (index(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        (
            index(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 1..8),
                Just(b"\n".to_vec()),
                Just(b"{}\n".to_vec()),
                Just(b"\"".to_vec()),
                Just(b"\\".to_vec()),
            ]
        )
            .prop_map(|(i, bytes)| Damage::Insert(i, bytes)),
        index().prop_map(Damage::DuplicateLine),
        (index(), index()).prop_map(|(a, b)| Damage::SwapLines(a, b)),
        index().prop_map(Damage::DropLine),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let mut lines: Vec<Vec<u8>> = bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    match damage {
        Damage::Truncate(i) => bytes.truncate(i.index(bytes.len() + 1)),
        Damage::Flip(i, b) if !bytes.is_empty() => {
            let at = i.index(bytes.len());
            bytes[at] ^= b | 1;
        }
        Damage::Flip(..) => {}
        Damage::Insert(i, more) => {
            let at = i.index(bytes.len() + 1);
            bytes.splice(at..at, more.iter().copied());
        }
        Damage::DuplicateLine(i) if !lines.is_empty() => {
            let at = i.index(lines.len());
            lines.insert(at, lines[at].clone());
            *bytes = lines.concat();
        }
        Damage::SwapLines(a, b) if !lines.is_empty() => {
            let (a, b) = (a.index(lines.len()), b.index(lines.len()));
            lines.swap(a, b);
            *bytes = lines.concat();
        }
        Damage::DropLine(i) if !lines.is_empty() => {
            lines.remove(i.index(lines.len()));
            *bytes = lines.concat();
        }
        Damage::DuplicateLine(_) | Damage::SwapLines(..) | Damage::DropLine(_) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_conversation_round_trips_exactly(
        conversation in conversation(),
        batches in prop::collection::vec(1usize..4, 1..4),
    ) {
        let rt = runtime();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = fast_store(dir.path());
        let id = rt.block_on(append_all(&store, &conversation, &batches));
        // A fresh store reads the file, not anything cached.
        let loaded = rt.block_on(async {
            let fresh: Arc<dyn SessionStore> = fast_store(dir.path());
            fresh.load(&id).await
        });
        prop_assert_eq!(loaded.expect("load"), Some(conversation.clone()));
        let listed = rt.block_on(fast_store(dir.path()).list_with_problems()).expect("list");
        prop_assert_eq!(listed.0.len(), 1);
        prop_assert_eq!(listed.0[0].message_count, conversation.messages.len());
    }

    #[test]
    fn arbitrary_bytes_are_read_or_refused_never_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let rt = runtime();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let id = new_session_id();
        std::fs::write(dir.path().join(format!("{id}.jsonl")), &bytes).expect("write");
        rt.block_on(read_everything(dir.path(), &id))?;
    }

    #[test]
    fn a_damaged_log_is_read_or_refused_never_a_panic(damages in prop::collection::vec(damage(), 1..4)) {
        let rt = runtime();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (id, mut bytes) = real_log(&rt, dir.path());
        for d in &damages {
            apply(&mut bytes, d);
        }
        // A fresh directory, so no writer of the original is still open.
        let damaged = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(damaged.path().join(format!("{id}.jsonl")), &bytes).expect("write");
        rt.block_on(read_everything(damaged.path(), &id))?;
    }
}
