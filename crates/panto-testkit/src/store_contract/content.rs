//! Cases about what `load` returns: every kind of content, the metadata, the compacted view.

use std::sync::Arc;

use panto_core::store::CompactionRecord;
use panto_core::{ContentBlock, Message, Role, SessionStore, StopReason, SystemMode, ToolResultContent, Usage};

use super::driver::{info_of, must_load, Driver};
use super::messages::{assistant, reply, summary, system, user, PNG_1X1};

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
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
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
