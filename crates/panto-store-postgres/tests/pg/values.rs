//! Values PostgreSQL treats specially: U+0000 (which `text` and `jsonb` cannot hold), metadata
//! that is not JSON, JSON numbers; and the metadata bag as queryable `jsonb`.

use panto_core::{ContentBlock, Message, Role, SessionStore, ToolResultContent};
use panto_testkit::store_contract::{reply, user, Driver};
use serde_json::json;

use super::common::{as_dyn, fresh_store};
use panto_testkit::postgres::connect;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_character_round_trips_and_only_the_listing_preview_replaces_it() {
    let (store, _) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    let prompt = user("before\0after");
    let output = Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: "t1".to_owned(),
            content: vec![ToolResultContent::Text {
                text: "binary\0output\u{1}".to_owned(),
            }],
            is_error: false,
        }],
    );
    d.append(vec![prompt.clone(), reply("ok"), output.clone()]).await;
    let loaded = store.load(&d.id()).await.unwrap().unwrap();
    assert_eq!(loaded.messages, vec![prompt, reply("ok"), output]);
    let info = &store.list().await.unwrap()[0];
    assert_eq!(info.last_user_message.as_deref(), Some("before\u{FFFD}after"));
    assert_eq!(info.message_count, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_is_kept_verbatim_and_is_queryable_when_it_is_json() {
    let (store, url) = fresh_store().await;
    // Key order and spacing that jsonb would not keep.
    let json_bag = r#"{ "tenant": "acme",  "a": [1, 2] }"#;
    let mut with_json = Driver::new(&as_dyn(&store), Some(json_bag));
    with_json.append(vec![user("one")]).await;
    let not_json = "not { json";
    let mut with_text = Driver::new(&as_dyn(&store), Some(not_json));
    with_text.append(vec![user("two")]).await;

    assert_eq!(
        store.load(&with_json.id()).await.unwrap().unwrap().metadata.as_deref(),
        Some(json_bag)
    );
    assert_eq!(
        store.load(&with_text.id()).await.unwrap().unwrap().metadata.as_deref(),
        Some(not_json)
    );
    let client = connect(&url).await;
    let rows = client
        .query(
            "select id from panto.sessions where metadata_json ->> 'tenant' = 'acme'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>(),
        [with_json.id()]
    );
    let text_json: Option<serde_json::Value> = client
        .query_one(
            "select metadata_json from panto.sessions where id = $1",
            &[&with_text.id()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(text_json, None, "metadata that is not JSON has no jsonb form");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_in_tool_inputs_keep_their_values() {
    let (store, _) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    let input = json!({"max": u64::MAX, "neg": -5, "frac": 0.1, "big": 1e16, "tiny": 1e-7, "one": 1.0});
    let call = panto_testkit::store_contract::assistant(
        vec![ContentBlock::ToolUse {
            id: "t".to_owned(),
            name: "bash".to_owned(),
            input: input.clone(),
        }],
        panto_core::StopReason::ToolUse,
    );
    d.append(vec![user("go"), call]).await;
    let loaded = store.load(&d.id()).await.unwrap().unwrap();
    let Some((_, _, got)) = loaded.messages[1].tool_uses().next() else {
        panic!("the tool call is missing: {:?}", loaded.messages[1]);
    };
    assert_eq!(got["max"].as_u64(), Some(u64::MAX));
    assert_eq!(got["neg"].as_i64(), Some(-5));
    for key in ["frac", "big", "tiny", "one"] {
        assert_eq!(got[key].as_f64(), input[key].as_f64(), "{key}");
    }
}

/// A session row whose directory is not known (NULL, as a row written by another program may
/// have it) lists with no directory; the others keep theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_a_directory_lists_none() {
    let (store, url) = fresh_store().await;
    let mut known = Driver::new(&as_dyn(&store), None);
    known.append(vec![user("here")]).await;
    let mut unknown = Driver::new(&as_dyn(&store), None);
    unknown.append(vec![user("nowhere")]).await;
    let client = connect(&url).await;
    client
        .execute("update panto.sessions set cwd = null where id = $1", &[&unknown.id()])
        .await
        .unwrap();
    let list = store.list().await.unwrap();
    let cwd_of = |id: String| list.iter().find(|i| i.id == id).unwrap().cwd.clone();
    assert_eq!(cwd_of(unknown.id()), None);
    assert_eq!(cwd_of(known.id()), std::env::current_dir().ok());
    assert_eq!(store.info(&unknown.id()).await.unwrap().unwrap().cwd, None);
}
