//! The fuzz targets' bodies, shared by the libFuzzer binaries (`fuzz_targets/`) and the plain
//! driver (`src/bin/drive.rs`).
//!
//! Each function takes one input and panics only on a real bug: a panic inside panto, or a
//! property that must hold for every input (the SSE parser giving different events for two
//! chunkings of the same bytes, a decoded message that does not load back). Errors returned for
//! bad input are the expected outcome.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use panto_core::__bench::{decode, decode_message, sse_events};
use panto_core::store::PersistentMessage;
use panto_core::{
    is_tool_name, ApiStyle, ContentBlock, Conversation, Error, Message, Role, Session, SessionStore, ToolResultContent,
};
use panto_store_fs::{Durability, JsonlStore};

/// The session id every `jsonl` input is stored under; seeds carry it in their header.
pub const FUZZ_SESSION_ID: &str = "019ad0a0-0000-7000-8000-00000000f022";

/// The session id `decoded_roundtrip` writes its conversations under.
pub const ROUNDTRIP_SESSION_ID: &str = "019ad0a0-0000-7000-8000-00000000d0de";

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The fuzz targets by name, for the driver.
pub const TARGETS: &[(&str, Target)] = &[
    ("sse_parser", sse),
    ("jsonl_loader", jsonl),
    ("decoded_roundtrip", decoded_roundtrip),
];

/// The SSE parser and both decoders on `data`.
///
/// The first byte picks where the body (the rest) is cut into chunks; the parser must dispatch
/// the same events and stop at the same error either way, and one byte at a time too. Then the
/// body is decoded as an Anthropic and as an OpenAI stream, whole and cut, which may fail but
/// must not panic.
pub fn sse(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let chunks = cut(body, seed);
    let whole = sse_events([body]);
    let chunked = sse_events(chunks.iter().copied());
    assert_eq!(whole, chunked, "chunking at {seed} changed the events");
    let bytes = sse_events(body.chunks(1));
    assert_eq!(whole, bytes, "byte-at-a-time feeding changed the events");
    for style in [ApiStyle::AnthropicMessages, ApiStyle::OpenAiChat] {
        let a = decode(style, [body]).map_err(|e| e.to_string());
        let b = decode(style, chunks.iter().copied()).map_err(|e| e.to_string());
        assert_eq!(a, b, "{style:?}: chunking at {seed} changed the decoded result");
    }
}

/// Cuts `body` into pieces whose sizes follow from `seed`, so every input also tries its own
/// chunking.
fn cut(body: &[u8], seed: u8) -> Vec<&[u8]> {
    let step = usize::from(seed % 17) + 1;
    let mut out = Vec::new();
    let mut at = 0;
    let mut n = 0;
    while at < body.len() {
        let len = (step + n % 3).min(body.len() - at);
        out.push(&body[at..at + len]);
        at += len;
        n += 1;
    }
    out
}

struct Env {
    rt: tokio::runtime::Runtime,
    dir: PathBuf,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("panto-fuzz-jsonl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("a runtime: {e}"));
        Env { rt, dir }
    })
}

/// Panics when a store call panicked inside its worker thread (the store turns that into an
/// error, which would otherwise hide the bug from the fuzzer).
fn check<T>(what: &str, result: &Result<T, Error>) {
    if let Err(Error::Store { context, source }) = result {
        if context == "session store worker" {
            panic!("{what} panicked in the store: {source}");
        }
    }
}

/// The JSONL store on `data` as the whole content of a session file: load, list, resolve by
/// prefix, then an append (which reopens the file for writing). Each may refuse the file; none
/// may panic, and an append to a session that loaded must leave it loading with the new message
/// last.
pub fn jsonl(data: &[u8]) {
    let env = env();
    let path = env.dir.join(format!("{FUZZ_SESSION_ID}.jsonl"));
    std::fs::write(&path, data).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    env.rt.block_on(async {
        let store: Arc<JsonlStore> = JsonlStore::with_durability(&env.dir, Durability::None);
        let as_dyn: Arc<dyn SessionStore> = store.clone();
        let before = as_dyn.load(FUZZ_SESSION_ID).await;
        check("load", &before);
        check("list", &store.list_with_problems().await);
        check(
            "resolve",
            &Session::resolve(as_dyn.clone(), &FUZZ_SESSION_ID[..13])
                .await
                .map(|_| ()),
        );
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
        let appended = as_dyn.append(FUZZ_SESSION_ID, &[entry]).await;
        check("append", &appended);
        drop(as_dyn);
        drop(store);
        if appended.is_ok() && matches!(before, Ok(Some(_))) {
            let fresh: Arc<dyn SessionStore> = JsonlStore::with_durability(&env.dir, Durability::None);
            let after = fresh.load(FUZZ_SESSION_ID).await;
            check("load after append", &after);
            match after {
                Ok(Some(c)) => assert_eq!(c.messages.last(), Some(&message), "the appended message is last"),
                other => panic!("a session that loaded no longer loads after an append: {other:?}"),
            }
        }
    });
}

/// The decoders' output through the JSONL store, on `data` as a response body.
///
/// The body is decoded as an Anthropic stream answering a prompt, then as an OpenAI stream
/// answering the conversation so far (so the second decoder sees the first one's tool call ids
/// as taken). Each message a decoder completes joins the conversation with the tool results the
/// agent would add (a rejected call's error, "ok" for the others). Every tool call must be one a
/// later request can carry (an id of 1 to 40 characters of `[A-Za-z0-9_-]`, unique in the
/// conversation; a wire name; an object for input, at most 64 levels deep), and the
/// conversation, written through the JSONL store, must load back exactly.
pub fn decoded_roundtrip(data: &[u8]) {
    let mut conversation = Conversation::new();
    conversation.add_user_message("go");
    for style in [ApiStyle::AnthropicMessages, ApiStyle::OpenAiChat] {
        let Ok(decoded) = decode_message(style, &conversation.messages, data) else {
            continue;
        };
        let results: Vec<ContentBlock> = decoded
            .message
            .tool_uses()
            .map(|(id, _, _)| {
                let error = decoded.rejected.iter().find(|(r, _)| r == id);
                ContentBlock::ToolResult {
                    tool_use_id: id.to_owned(),
                    content: vec![ToolResultContent::Text {
                        text: error.map_or("ok", |(_, reason)| reason).to_owned(),
                    }],
                    is_error: error.is_some(),
                }
            })
            .collect();
        conversation.messages.push(decoded.message);
        if !results.is_empty() {
            conversation.messages.push(Message::new(Role::User, results));
        }
    }
    if conversation.messages.len() == 1 {
        return;
    }
    check_tool_calls(&conversation);

    let env = env();
    let path = env.dir.join(format!("{ROUNDTRIP_SESSION_ID}.jsonl"));
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("removing {}: {e}", path.display()),
    }
    env.rt.block_on(async {
        let store: Arc<dyn SessionStore> = JsonlStore::with_durability(&env.dir, Durability::None);
        for message in &conversation.messages {
            let entry = PersistentMessage {
                message,
                usage: message.usage,
                wire: None,
                conversation: &conversation,
                tools_available: &[],
                compaction: None,
            };
            let appended = store.append(ROUNDTRIP_SESSION_ID, &[entry]).await;
            check("append", &appended);
            if let Err(e) = appended {
                panic!("a decoded message could not be written: {e}");
            }
        }
        drop(store);
        let fresh: Arc<dyn SessionStore> = JsonlStore::with_durability(&env.dir, Durability::None);
        let loaded = fresh.load(ROUNDTRIP_SESSION_ID).await;
        check("load", &loaded);
        match loaded {
            Ok(Some(loaded)) => assert_eq!(loaded, conversation, "the session loads back as written"),
            other => panic!("a session of decoded messages does not load: {other:?}"),
        }
    });
}

/// Panics unless every tool call of `conversation` is one a later request can carry.
fn check_tool_calls(conversation: &Conversation) {
    let mut ids = std::collections::HashSet::new();
    for (id, name, input) in conversation.messages.iter().flat_map(Message::tool_uses) {
        assert!(
            (1..=40).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "tool call id {id:?} is not one a request can carry"
        );
        assert!(ids.insert(id), "tool call id {id:?} twice in the conversation");
        assert!(is_tool_name(name), "tool name {name:?} is not a wire name");
        assert!(
            input.is_object() && depth(input) <= 64,
            "tool input {input} is not an object at most 64 levels deep"
        );
    }
}

/// How many levels of arrays and objects `value` nests.
fn depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
