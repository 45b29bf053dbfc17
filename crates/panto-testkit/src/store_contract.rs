//! The [`SessionStore`] contract suite: the behaviour every store must show, written once and run
//! against every store (`MemoryStore` here, `FileSystemJSONLStore` in panto-store-fs, and any
//! store an embedder writes).
//!
//! Run it all with [`run_all`], giving it a function that makes a fresh, empty store per case:
//!
//! ```
//! use std::sync::Arc;
//! use panto_core::{MemoryStore, SessionStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! panto_testkit::store_contract::run_all(|| MemoryStore::new() as Arc<dyn SessionStore>).await;
//! # }
//! ```
//!
//! Every case is also public on its own, taking one fresh store, so a failing case can be run
//! alone. A case that finds the store misbehaving panics with a message naming the case and what
//! differed, as a test assertion does.
//!
//! Sessions are written the way the agent writes them: through [`Session::append`], with the
//! whole conversation, a realistic [`WireIdentity`] on every non-system message and the tools
//! offered.

use std::sync::Arc;
use std::time::Duration;

use panto_core::{
    ApiStyle, CompactionRecord, ContentBlock, Conversation, Error, Message, PersistentMessage, ReasoningEffort, Role,
    Session, SessionInfo, SessionStore, StopReason, SystemMode, ToolDecl, ToolResultContent, Usage, WireIdentity,
    LAST_USER_MESSAGE_CHARS,
};

/// Runs every case of the contract, each against a fresh store from `make`.
pub async fn run_all(make: impl Fn() -> Arc<dyn SessionStore>) {
    round_trip_every_content_kind(make()).await;
    conversation_metadata_is_fixed_at_creation(make()).await;
    list_orders_by_last_human_prompt(make()).await;
    synthetic_closer_does_not_move_a_session_up(make()).await;
    listing_info_is_exact(make()).await;
    resolve_by_id_and_prefix(make()).await;
    latest_is_the_most_recent(make()).await;
    unknown_sessions_load_as_none(make()).await;
    never_appended_session_is_not_found(make()).await;
    compaction_loads_the_compacted_view(make()).await;
    compaction_inside_a_batch(make()).await;
}

// ---------------------------------------------------------------------------------------------
// Building sessions the way the agent does.

/// A realistic Anthropic wire identity.
pub fn anthropic_wire() -> WireIdentity {
    WireIdentity {
        api_style: ApiStyle::AnthropicMessages,
        base_url: "https://api.anthropic.com".to_owned(),
        model: "claude-sonnet-4-5".to_owned(),
        reasoning: ReasoningEffort::Medium,
    }
}

/// A realistic OpenAI-compatible wire identity (a local llama.cpp server).
pub fn local_openai_wire() -> WireIdentity {
    WireIdentity {
        api_style: ApiStyle::OpenAiChat,
        base_url: "http://127.0.0.1:8080/v1".to_owned(),
        model: "qwen3-coder-30b".to_owned(),
        reasoning: ReasoningEffort::Off,
    }
}

/// The tools offered with every message: a realistic manifest of two tools.
pub fn tools() -> Vec<ToolDecl> {
    vec![
        ToolDecl {
            name: "read_file".to_owned(),
            description: "Read a UTF-8 text file and return its contents.".to_owned(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to the working directory"}},
                "required": ["path"]
            }),
        },
        ToolDecl {
            name: "bash".to_owned(),
            description: "Run a shell command and return its output.".to_owned(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout_ms": {"type": "integer", "minimum": 1}
                },
                "required": ["command"]
            }),
        },
    ]
}

/// A user message holding one text block.
pub fn user(text: &str) -> Message {
    Message::new(Role::User, vec![ContentBlock::text(text)])
}

/// An assistant message with usage and a stop reason, as a provider produces it.
pub fn assistant(blocks: Vec<ContentBlock>, stop_reason: StopReason) -> Message {
    let mut message = Message::new(Role::Assistant, blocks);
    message.usage = Some(Usage {
        input_tokens: 1_200,
        output_tokens: 85,
        cache_read_tokens: 3_400,
        cache_write_tokens: 0,
    });
    message.stop_reason = Some(stop_reason);
    message
}

/// An assistant message answering with one text block.
pub fn reply(text: &str) -> Message {
    assistant(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

/// A system message.
pub fn system(text: &str, mode: SystemMode) -> Message {
    Message::new(
        Role::System,
        vec![ContentBlock::System {
            text: text.to_owned(),
            mode,
        }],
    )
}

/// A user message holding only a tool result: what the agent appends after a tool call, and
/// the synthetic closer that resume appends for a call that never ran.
pub fn tool_result(tool_use_id: &str, text: &str, is_error: bool) -> Message {
    Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: tool_use_id.to_owned(),
            content: vec![ToolResultContent::Text { text: text.to_owned() }],
            is_error,
        }],
    )
}

/// A compaction summary message.
pub fn summary(text: &str) -> Message {
    Message::new(
        Role::User,
        vec![ContentBlock::CompactionSummary {
            summary: text.to_owned(),
        }],
    )
}

/// A 1×1 PNG, base64: a real image payload for image blocks.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// One session driven as the agent drives it: the model's conversation, kept current, and
/// every batch appended through [`Session::append`] with the wire identity and tools.
#[derive(Debug)]
pub struct Driver {
    /// The session (its info folded by `Session::append`).
    pub session: Session,
    /// The conversation as the model sees it (compactions applied).
    pub conversation: Conversation,
    /// The wire identity stamped on non-system messages from now on.
    pub wire: WireIdentity,
    /// The tools offered.
    pub tools: Vec<ToolDecl>,
}

impl Driver {
    /// A new session in `store` whose conversation carries `metadata`.
    pub fn new(store: &Arc<dyn SessionStore>, metadata: Option<&str>) -> Self {
        Driver {
            session: store.clone().create(),
            conversation: Conversation {
                messages: Vec::new(),
                metadata: metadata.map(str::to_owned),
            },
            wire: anthropic_wire(),
            tools: tools(),
        }
    }

    /// The session id.
    pub fn id(&self) -> String {
        self.session.id().to_owned()
    }

    /// Appends `messages` as one batch.
    pub async fn append(&mut self, messages: Vec<Message>) {
        self.append_batch(messages.into_iter().map(|m| (m, None)).collect())
            .await;
    }

    /// Appends a compaction: a summary replacing the messages before index `first_kept` of the
    /// current conversation.
    pub async fn compact(&mut self, first_kept: usize, text: &str) {
        let record = CompactionRecord {
            first_kept,
            tokens_before: 182_000,
            tokens_after: 9_500,
        };
        self.append_batch(vec![(summary(text), Some(record))]).await;
    }

    /// Appends one batch of messages, each with the compaction it records (if any), after
    /// applying them to the model's conversation as the agent does.
    pub async fn append_batch(&mut self, batch: Vec<(Message, Option<CompactionRecord>)>) {
        for (message, compaction) in &batch {
            match compaction {
                None => self.conversation.messages.push(message.clone()),
                Some(c) => {
                    let cut = c.first_kept.min(self.conversation.messages.len());
                    let tail = self.conversation.messages.split_off(cut);
                    self.conversation.messages.retain(|m| m.role == Role::System);
                    self.conversation.messages.push(message.clone());
                    self.conversation.messages.extend(tail);
                }
            }
        }
        let persistent: Vec<PersistentMessage<'_>> = batch
            .iter()
            .map(|(message, compaction)| PersistentMessage {
                message,
                usage: message.usage,
                wire: (message.role != Role::System).then_some(&self.wire),
                conversation: &self.conversation,
                tools_available: &self.tools,
                compaction: *compaction,
            })
            .collect();
        let id = self.session.id().to_owned();
        if let Err(e) = self.session.append(&persistent).await {
            panic!("appending {} message(s) to session {id} failed: {e}", persistent.len());
        }
    }
}

/// The store's listing, or a panic naming `case`.
pub async fn must_list(store: &Arc<dyn SessionStore>, case: &str) -> Vec<SessionInfo> {
    match store.list().await {
        Ok(list) => list,
        Err(e) => panic!("{case}: list failed: {e}"),
    }
}

/// The ids of a listing, in order.
pub fn ids(list: &[SessionInfo]) -> Vec<String> {
    list.iter().map(|i| i.id.clone()).collect()
}

/// The stored conversation of session `id`, or a panic naming `case`.
pub async fn must_load(store: &Arc<dyn SessionStore>, id: &str, case: &str) -> Conversation {
    match store.load(id).await {
        Ok(Some(c)) => c,
        Ok(None) => panic!("{case}: load({id}) found no session"),
        Err(e) => panic!("{case}: load({id}) failed: {e}"),
    }
}

/// The listing info of session `id`, or a panic naming `case`.
pub async fn info_of(store: &Arc<dyn SessionStore>, id: &str, case: &str) -> SessionInfo {
    must_list(store, case)
        .await
        .into_iter()
        .find(|i| i.id == id)
        .unwrap_or_else(|| panic!("{case}: session {id} is not listed"))
}

/// Waits long enough for the clock to move, so that events ordered in the test are ordered in
/// the timestamps the store records.
pub async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

// ---------------------------------------------------------------------------------------------
// The cases.

/// Every content block kind, message metadata, usage, stop reasons and the conversation
/// metadata come back from `load` exactly as appended, over several batches.
pub async fn round_trip_every_content_kind(store: Arc<dyn SessionStore>) {
    const CASE: &str = "round_trip_every_content_kind";
    let metadata = r#"{"project":"panto","tags":["a","b"],"nested":{"n":1.5}}"#;
    let mut d = Driver::new(&store, Some(metadata));

    let mut prompt = Message::new(
        Role::User,
        vec![
            ContentBlock::text("What is in this screenshot?\nSecond line with \"quotes\", a tab\tand ünïcödé ✓"),
            ContentBlock::Image {
                media_type: "image/png".to_owned(),
                data: PNG_1X1.to_owned(),
            },
        ],
    );
    prompt.metadata = Some(r#"{"source":"cli","attachments":1}"#.to_owned());
    d.append(vec![
        system("You are a careful assistant.", SystemMode::Append),
        system("You are terse.", SystemMode::Replace),
        prompt,
    ])
    .await;

    let mut thinking = assistant(
        vec![
            ContentBlock::Thinking {
                thinking: "The user wants the file list; I should call a tool.".to_owned(),
                signature: Some("EqQBCkYIBxgCKkBsig/+==".to_owned()),
            },
            ContentBlock::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".to_owned(),
            },
            ContentBlock::Thinking {
                thinking: "reasoning_content from an OpenAI-compatible server".to_owned(),
                signature: None,
            },
            ContentBlock::text("Let me look."),
            ContentBlock::ToolUse {
                id: "toolu_01A09q90qw90lq917835lq9".to_owned(),
                name: "bash".to_owned(),
                input: serde_json::json!({"command": "ls -la", "timeout_ms": 5000, "env": {"LANG": "C"}, "list": [1, null, true]}),
            },
        ],
        StopReason::ToolUse,
    );
    thinking.metadata = Some(r#"{"latency_ms":812}"#.to_owned());
    d.append(vec![thinking]).await;

    let results = Message::new(
        Role::User,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "toolu_01A09q90qw90lq917835lq9".to_owned(),
                content: vec![
                    ToolResultContent::Text {
                        text: "total 8\ndrwxr-xr-x  2 root root 4096 .\n".to_owned(),
                    },
                    ToolResultContent::Image {
                        media_type: "image/png".to_owned(),
                        data: PNG_1X1.to_owned(),
                    },
                ],
                is_error: true,
            },
            ContentBlock::ToolResult {
                tool_use_id: "toolu_02".to_owned(),
                content: vec![],
                is_error: false,
            },
        ],
    );
    let mut odd_stop = assistant(
        vec![ContentBlock::text("Done.")],
        StopReason::Other("weird_reason".to_owned()),
    );
    odd_stop.usage = Some(Usage {
        input_tokens: 7,
        output_tokens: 3,
        cache_read_tokens: 11,
        cache_write_tokens: 13,
    });
    d.append(vec![results, odd_stop]).await;
    d.append(vec![summary("Earlier, the user listed a directory."), user("thanks")])
        .await;

    let loaded = must_load(&store, &d.id(), CASE).await;
    assert_eq!(
        loaded.messages, d.conversation.messages,
        "{CASE}: the loaded messages differ from those appended"
    );
    assert_eq!(
        loaded.metadata.as_deref(),
        Some(metadata),
        "{CASE}: the conversation metadata did not round-trip"
    );
    assert_eq!(
        d.session.load().await.expect("Session::load"),
        loaded,
        "{CASE}: Session::load differs from SessionStore::load"
    );
}

/// The conversation metadata is the one the first append carried; later appends do not change
/// it. A conversation without metadata loads without.
pub async fn conversation_metadata_is_fixed_at_creation(store: Arc<dyn SessionStore>) {
    const CASE: &str = "conversation_metadata_is_fixed_at_creation";
    let mut with = Driver::new(&store, Some(r#"{"v":1}"#));
    with.append(vec![user("one")]).await;
    with.conversation.metadata = Some(r#"{"v":2}"#.to_owned());
    with.append(vec![reply("two")]).await;
    let loaded = must_load(&store, &with.id(), CASE).await;
    assert_eq!(loaded.metadata.as_deref(), Some(r#"{"v":1}"#), "{CASE}");
    assert_eq!(loaded.messages.len(), 2, "{CASE}");

    let mut without = Driver::new(&store, None);
    without.append(vec![user("one")]).await;
    assert_eq!(must_load(&store, &without.id(), CASE).await.metadata, None, "{CASE}");
}

/// Sessions list newest first by their last human prompt, else by creation; assistant replies
/// do not count as activity.
pub async fn list_orders_by_last_human_prompt(store: Arc<dyn SessionStore>) {
    const CASE: &str = "list_orders_by_last_human_prompt";
    let mut a = Driver::new(&store, None);
    a.append(vec![system("A's prompt", SystemMode::Append)]).await;
    tick().await;
    let mut b = Driver::new(&store, None);
    b.append(vec![system("B's prompt", SystemMode::Append)]).await;
    tick().await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![b.id(), a.id()],
        "{CASE}: without prompts, the later-created session comes first"
    );

    a.append(vec![user("a question in A")]).await;
    tick().await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![a.id(), b.id()],
        "{CASE}: a prompt in A moves it first"
    );

    b.append(vec![reply("an assistant message in B")]).await;
    tick().await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![a.id(), b.id()],
        "{CASE}: an assistant message is not a prompt and must not move B up"
    );

    b.append(vec![user("a question in B")]).await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![b.id(), a.id()],
        "{CASE}: a prompt in B moves it first"
    );
}

/// A resumed session that only gets the synthetic closer for an interrupted tool call keeps its
/// place, its last prompt and its prompt time; only its message count moves.
pub async fn synthetic_closer_does_not_move_a_session_up(store: Arc<dyn SessionStore>) {
    const CASE: &str = "synthetic_closer_does_not_move_a_session_up";
    let mut a = Driver::new(&store, None);
    a.append(vec![user("run the tests")]).await;
    a.append(vec![assistant(
        vec![ContentBlock::ToolUse {
            id: "toolu_interrupted".to_owned(),
            name: "bash".to_owned(),
            input: serde_json::json!({"command": "cargo test"}),
        }],
        StopReason::ToolUse,
    )])
    .await;
    tick().await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("meanwhile, other work")]).await;
    tick().await;
    let before = info_of(&store, &a.id(), CASE).await;
    assert_eq!(ids(&must_list(&store, CASE).await), vec![b.id(), a.id()], "{CASE}");

    let mut resumed = match store.clone().resolve(&a.id()).await {
        Ok(Some(s)) => s,
        other => panic!("{CASE}: resolve({}) gave {other:?}", a.id()),
    };
    let closer = tool_result("toolu_interrupted", "interrupted before the tool ran", true);
    let conversation = Conversation {
        messages: vec![closer.clone()],
        metadata: None,
    };
    let tools = tools();
    resumed
        .append(&[PersistentMessage {
            message: &closer,
            usage: None,
            wire: Some(&a.wire),
            conversation: &conversation,
            tools_available: &tools,
            compaction: None,
        }])
        .await
        .unwrap_or_else(|e| panic!("{CASE}: appending the closer failed: {e}"));

    let list = must_list(&store, CASE).await;
    assert_eq!(
        ids(&list),
        vec![b.id(), a.id()],
        "{CASE}: the closer moved the resumed session up"
    );
    let after = &list[1];
    assert_eq!(after.message_count, 3, "{CASE}: message_count");
    assert_eq!(
        after.last_prompt_at, before.last_prompt_at,
        "{CASE}: last_prompt_at changed"
    );
    assert_eq!(after.last_user_message.as_deref(), Some("run the tests"), "{CASE}");
    assert_eq!(after.recency(), before.recency(), "{CASE}: recency changed");
    assert_eq!(
        store.clone().latest().await.expect("latest").map(|s| s.id().to_owned()),
        Some(b.id()),
        "{CASE}: latest"
    );
}

/// The listing's message count, last prompt (cut to 200 characters), prompt time and wire
/// identity are exact, and agree with what `Session::append` folded into the session's info.
pub async fn listing_info_is_exact(store: Arc<dyn SessionStore>) {
    const CASE: &str = "listing_info_is_exact";
    let mut d = Driver::new(&store, None);
    d.append(vec![system("sys", SystemMode::Append)]).await;
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(
        (
            info.message_count,
            info.last_prompt_at,
            info.last_user_message.as_deref(),
            info.wire.as_ref()
        ),
        (1, None, None, None),
        "{CASE}: a session holding only a system message"
    );

    // A prompt longer than the limit, in characters that are two bytes each. `Session::append`
    // stamps its info after the store returns, so the store's prompt time lies between the
    // session's stamps of the batch before and of this one.
    let long: String = "é".repeat(LAST_USER_MESSAGE_CHARS + 50);
    let before = d.session.info.modified;
    d.append(vec![user(&long)]).await;
    let after = d.session.info.modified;
    d.append(vec![reply("ok")]).await;
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(info.message_count, 3, "{CASE}: message_count");
    assert_eq!(
        info.last_user_message.as_deref(),
        Some("é".repeat(LAST_USER_MESSAGE_CHARS).as_str()),
        "{CASE}: last_user_message must be the first {LAST_USER_MESSAGE_CHARS} characters"
    );
    let at = info
        .last_prompt_at
        .unwrap_or_else(|| panic!("{CASE}: no last_prompt_at"));
    assert!(
        before <= at && at <= after,
        "{CASE}: last_prompt_at {at} not within the append ({before}..{after})"
    );
    assert!(
        info.created <= at && at <= info.modified,
        "{CASE}: created/modified: {info:?}"
    );
    assert_eq!(info.wire, Some(anthropic_wire()), "{CASE}: wire");

    // A prompt of several text blocks and an image; then another provider; then a system
    // message (which has no wire identity and must not clear it) and a tool result.
    d.wire = local_openai_wire();
    d.append(vec![
        Message::new(
            Role::User,
            vec![
                ContentBlock::text("line one"),
                ContentBlock::Image {
                    media_type: "image/png".to_owned(),
                    data: PNG_1X1.to_owned(),
                },
                ContentBlock::text("line two"),
            ],
        ),
        reply("answer"),
    ])
    .await;
    d.append(vec![
        system("more rules", SystemMode::Append),
        tool_result("t1", "out", false),
    ])
    .await;
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(info.message_count, 7, "{CASE}: message_count");
    assert_eq!(info.last_user_message.as_deref(), Some("line one\nline two"), "{CASE}");
    assert_eq!(
        info.wire,
        Some(local_openai_wire()),
        "{CASE}: wire after switching provider"
    );
    assert_eq!(
        (info.message_count, &info.last_user_message, &info.wire),
        (
            d.session.info.message_count,
            &d.session.info.last_user_message,
            &d.session.info.wire
        ),
        "{CASE}: the listing disagrees with the info Session::append folded"
    );
}

/// `resolve` finds a session by full id and by unique prefix, reports an ambiguous prefix with
/// every candidate, finds nothing for unknown ids and rejects ids that are not ids.
pub async fn resolve_by_id_and_prefix(store: Arc<dyn SessionStore>) {
    const CASE: &str = "resolve_by_id_and_prefix";
    let mut a = Driver::new(&store, None);
    a.append(vec![user("first session")]).await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("second session"), reply("hello")]).await;
    let (a_id, b_id) = (a.id(), b.id());

    let found = match store.clone().resolve(&b_id).await {
        Ok(Some(s)) => s,
        other => panic!("{CASE}: resolve(full id) gave {other:?}"),
    };
    assert_eq!(found.id(), b_id, "{CASE}: resolve(full id)");
    assert_eq!(found.info.message_count, 2, "{CASE}: the resolved session's info");
    assert_eq!(
        found.info.last_user_message.as_deref(),
        Some("second session"),
        "{CASE}"
    );
    assert_eq!(
        found.load().await.expect("load the resolved session").messages,
        b.conversation.messages,
        "{CASE}: the resolved session loads"
    );

    // UUIDv7 ids minted moments apart share their leading (time) digits.
    let common: String = a_id
        .chars()
        .zip(b_id.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(!common.is_empty(), "{CASE}: {a_id} and {b_id} share no prefix");
    let unique = &a_id[..common.len() + 1];
    match store.clone().resolve(unique).await {
        Ok(Some(s)) => assert_eq!(s.id(), a_id, "{CASE}: resolve(unique prefix {unique})"),
        other => panic!("{CASE}: resolve(unique prefix {unique}) gave {other:?}"),
    }

    match store.clone().resolve(&common).await {
        Err(Error::AmbiguousSession { prefix, mut candidates }) => {
            candidates.sort();
            let mut both = vec![a_id.clone(), b_id.clone()];
            both.sort();
            assert_eq!(prefix, common, "{CASE}: the ambiguous prefix");
            assert_eq!(candidates, both, "{CASE}: the candidates must list both sessions");
        }
        other => panic!("{CASE}: resolve(shared prefix {common}) should be ambiguous, gave {other:?}"),
    }

    let never_appended = store.clone().create();
    for unknown in [panto_core::new_session_id(), never_appended.id().to_owned()] {
        match store.clone().resolve(&unknown).await {
            Ok(None) => {}
            other => panic!("{CASE}: resolve(unknown {unknown}) gave {other:?}"),
        }
    }
    for invalid in ["../x", "a/b", "", "ABC"] {
        match store.clone().resolve(invalid).await {
            Err(Error::InvalidSessionId(id)) => assert_eq!(id, invalid, "{CASE}"),
            other => panic!("{CASE}: resolve({invalid:?}) should be InvalidSessionId, gave {other:?}"),
        }
    }
}

/// `latest` is the first session of the listing: none in an empty store, then the session with
/// the most recent prompt.
pub async fn latest_is_the_most_recent(store: Arc<dyn SessionStore>) {
    const CASE: &str = "latest_is_the_most_recent";
    let latest = |store: Arc<dyn SessionStore>| async move {
        match store.latest().await {
            Ok(s) => s.map(|s| s.id().to_owned()),
            Err(e) => panic!("{CASE}: latest failed: {e}"),
        }
    };
    assert_eq!(latest(store.clone()).await, None, "{CASE}: an empty store");
    let _unsaved = store.clone().create();
    assert_eq!(
        latest(store.clone()).await,
        None,
        "{CASE}: a created, never appended session"
    );

    let mut a = Driver::new(&store, None);
    a.append(vec![user("a")]).await;
    tick().await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("b")]).await;
    tick().await;
    assert_eq!(latest(store.clone()).await, Some(b.id()), "{CASE}");
    a.append(vec![user("a again")]).await;
    assert_eq!(latest(store.clone()).await, Some(a.id()), "{CASE}: after a prompt in a");
}

/// `load` of an id no session has is `None`; of an id that is not an id, `InvalidSessionId`.
pub async fn unknown_sessions_load_as_none(store: Arc<dyn SessionStore>) {
    const CASE: &str = "unknown_sessions_load_as_none";
    let mut d = Driver::new(&store, None);
    d.append(vec![user("present")]).await;
    for unknown in [panto_core::new_session_id(), d.id()[..8].to_owned()] {
        match store.load(&unknown).await {
            Ok(None) => {}
            other => panic!("{CASE}: load({unknown}) gave {other:?}"),
        }
    }
    for invalid in ["../x", "a/b"] {
        match store.load(invalid).await {
            Err(Error::InvalidSessionId(_)) => {}
            other => panic!("{CASE}: load({invalid:?}) should be InvalidSessionId, gave {other:?}"),
        }
    }
}

/// A created session is not stored until its first append: not listed, and `Session::load`
/// says `SessionNotFound`.
pub async fn never_appended_session_is_not_found(store: Arc<dyn SessionStore>) {
    const CASE: &str = "never_appended_session_is_not_found";
    let session = store.clone().create();
    match session.load().await {
        Err(Error::SessionNotFound(id)) => assert_eq!(id, session.id(), "{CASE}"),
        other => panic!("{CASE}: Session::load of a never-appended session gave {other:?}"),
    }
    assert!(
        must_list(&store, CASE).await.is_empty(),
        "{CASE}: it must not be listed"
    );
}

/// After a compaction, `load` returns the system messages from before the cut, the summary and
/// the kept tail; later compactions count in the compacted view; the full history still counts
/// in the listing.
pub async fn compaction_loads_the_compacted_view(store: Arc<dyn SessionStore>) {
    const CASE: &str = "compaction_loads_the_compacted_view";
    let mut d = Driver::new(&store, Some(r#"{"k":"v"}"#));
    let sys0 = system("Be brief.", SystemMode::Append);
    let sys1 = system("Also be kind.", SystemMode::Append);
    let (u1, a1) = (user("first question"), reply("first answer"));
    let (u2, a2) = (user("second question"), reply("second answer"));
    let (u3, a3) = (user("third question"), reply("third answer"));
    d.append(vec![sys0.clone(), u1.clone(), a1.clone()]).await;
    d.append(vec![sys1.clone(), u2.clone(), a2.clone()]).await;
    d.append(vec![u3.clone(), a3.clone()]).await;

    // Keep from u3 (index 6 of [sys0, u1, a1, sys1, u2, a2, u3, a3]).
    d.compact(6, "Summary one.").await;
    let view = must_load(&store, &d.id(), CASE).await;
    assert_eq!(
        view.messages,
        vec![
            sys0.clone(),
            sys1.clone(),
            summary("Summary one."),
            u3.clone(),
            a3.clone()
        ],
        "{CASE}: first compaction"
    );
    assert_eq!(view.metadata.as_deref(), Some(r#"{"k":"v"}"#), "{CASE}: metadata");

    let (u4, a4) = (user("fourth question"), reply("fourth answer"));
    d.append(vec![u4.clone(), a4.clone()]).await;
    assert_eq!(
        must_load(&store, &d.id(), CASE).await.messages,
        vec![
            sys0.clone(),
            sys1.clone(),
            summary("Summary one."),
            u3,
            a3,
            u4.clone(),
            a4.clone()
        ],
        "{CASE}: appending after a compaction"
    );

    // Keep from u4: index 5 of the compacted view, not of the full log.
    d.compact(5, "Summary two.").await;
    assert_eq!(
        must_load(&store, &d.id(), CASE).await.messages,
        vec![sys0.clone(), sys1.clone(), summary("Summary two."), u4, a4],
        "{CASE}: a second compaction counts in the compacted view"
    );

    // Keep nothing: the index is the view's length.
    d.compact(5, "Summary three.").await;
    let u5 = user("fifth question");
    d.append(vec![u5.clone()]).await;
    assert_eq!(
        must_load(&store, &d.id(), CASE).await.messages,
        vec![sys0, sys1, summary("Summary three."), u5],
        "{CASE}: a compaction that keeps nothing"
    );
    assert_eq!(
        info_of(&store, &d.id(), CASE).await.message_count,
        14,
        "{CASE}: the listing counts the full history"
    );
}

/// A compaction in the middle of a batch counts the messages appended before it in the same
/// batch.
pub async fn compaction_inside_a_batch(store: Arc<dyn SessionStore>) {
    const CASE: &str = "compaction_inside_a_batch";
    let mut d = Driver::new(&store, None);
    let (u1, a1, u2, a2) = (user("q1"), reply("a1"), user("q2"), reply("a2"));
    d.append(vec![u1, a1, u2.clone(), a2.clone()]).await;
    let (u3, a3) = (user("q3"), reply("a3"));
    let record = CompactionRecord {
        first_kept: 2,
        tokens_before: 1_000,
        tokens_after: 200,
    };
    d.append_batch(vec![
        (u3.clone(), None),
        (a3.clone(), None),
        (summary("s"), Some(record)),
        (user("q4"), None),
    ])
    .await;
    assert_eq!(
        must_load(&store, &d.id(), CASE).await.messages,
        vec![summary("s"), u2, a2, u3, a3, user("q4")],
        "{CASE}"
    );
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(info.message_count, 8, "{CASE}: message_count");
    assert_eq!(info.last_user_message.as_deref(), Some("q4"), "{CASE}");
}
