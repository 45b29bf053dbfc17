//! All or nothing: a batch that fails inside its transaction leaves nothing behind (no entries,
//! no listing change, no tool rows), and the store goes on writing correctly afterwards.

use panto_core::store::PersistentMessage;
use panto_core::wire::ProviderIdentity;
use panto_core::{ApiStyle, Conversation, Error, ReasoningEffort, Session, SessionStore};
use panto_testkit::store_contract::{append_one, reply, tools, user, Driver};
use serde_json::json;

use super::common::{as_dyn, fresh_store, texts, FAILING_TRIGGER};
use panto_testkit::postgres::connect;

fn tools_with_grep() -> Vec<panto_core::ToolDecl> {
    let mut t = tools();
    t.push(panto_core::ToolDecl {
        name: "grep".to_owned(),
        description: "Search.".to_owned(),
        input_schema: json!({"type": "object"}),
    });
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_fails_inside_its_transaction_stores_nothing() {
    let (store, url) = fresh_store().await;
    let admin = connect(&url).await;
    admin.batch_execute(FAILING_TRIGGER).await.unwrap();
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("u0")]).await;
    let id = d.id();
    let before = store.list().await.unwrap();

    // Three messages and a tool never offered before; the third message is refused.
    let batch = [user("q1"), reply("a1"), user("FAIL")];
    let conversation = Conversation {
        messages: batch.to_vec(),
        metadata: None,
    };
    let new_tools = tools_with_grep();
    let persistent: Vec<PersistentMessage<'_>> = batch
        .iter()
        .map(|m| PersistentMessage {
            message: m,
            usage: m.usage,
            wire: Some(&d.wire),
            conversation: &conversation,
            tools_available: &new_tools,
            compaction: None,
        })
        .collect();
    match store.append(&id, &persistent).await {
        Err(e @ Error::Store { .. }) => {
            let message = e.to_string();
            assert!(message.contains(&format!("appending to session {id}")), "{message}");
            assert!(message.contains("refused by the test trigger"), "{message}");
        }
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(texts(&store, &id).await, ["u0"]);
    assert_eq!(store.list().await.unwrap(), before, "the listing must not change");
    let count = |sql: &'static str| {
        let admin = &admin;
        async move { admin.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert_eq!(count("select count(*) from panto.entries").await, 1);
    assert_eq!(count("select count(*) from panto.tools where name = 'grep'").await, 0);

    // The store goes on: positions and the parent chain continue from the committed entry, and
    // the tool the failed batch offered is recorded when a batch that offers it commits.
    d.tools = tools_with_grep();
    d.append(vec![user("q2")]).await;
    let history = store.history(&id).await.unwrap().unwrap();
    assert_eq!(history.iter().map(|e| e.seq).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(history[1].parent_id.as_deref(), Some(history[0].id.as_str()));
    assert_eq!(texts(&store, &id).await, ["u0", "q2"]);
    assert_eq!(store.list().await.unwrap()[0].message_count, 2);
    assert_eq!(count("select count(*) from panto.tools where name = 'grep'").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_batch_that_fails_creates_no_session() {
    let (store, url) = fresh_store().await;
    connect(&url).await.batch_execute(FAILING_TRIGGER).await.unwrap();
    let id = Session::create(as_dyn(&store)).id().to_owned();
    let batch = [user("hello"), user("FAIL")];
    let conversation = Conversation {
        messages: batch.to_vec(),
        metadata: Some(r#"{"k":1}"#.to_owned()),
    };
    let tools = tools();
    let persistent: Vec<PersistentMessage<'_>> = batch
        .iter()
        .map(|m| PersistentMessage {
            message: m,
            usage: None,
            wire: None,
            conversation: &conversation,
            tools_available: &tools,
            compaction: None,
        })
        .collect();
    assert!(store.append(&id, &persistent).await.is_err());
    assert!(store.list().await.unwrap().is_empty(), "nothing may be listed");
    assert_eq!(store.load(&id).await.unwrap(), None);
    // The session can still be created by a batch that commits.
    append_one(&*store, &id, &user("again")).await.unwrap();
    assert_eq!(texts(&store, &id).await, ["again"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_postgres_cannot_hold_is_refused_by_name_before_anything_is_written() {
    let (store, _) = fresh_store().await;
    let id = panto_core::store::new_session_id();
    let message = user("hello");
    let conversation = Conversation {
        messages: vec![message.clone()],
        metadata: None,
    };
    let wire = ProviderIdentity {
        api_style: ApiStyle::OpenAiChat,
        base_url: "http://127.0.0.1:8080/v1".to_owned(),
        model: "bad\0model".to_owned(),
        reasoning: ReasoningEffort::Off,
    };
    let result = store
        .append(
            &id,
            &[PersistentMessage {
                message: &message,
                usage: None,
                wire: Some(&wire),
                conversation: &conversation,
                tools_available: &[],
                compaction: None,
            }],
        )
        .await;
    let message_text = result.expect_err("a NUL in the model name must be refused").to_string();
    assert!(
        message_text.contains(&format!("appending to session {id}"))
            && message_text.contains("the provider identity's model contains a NUL character"),
        "{message_text}"
    );
    assert!(store.list().await.unwrap().is_empty());
    // The same session takes a good batch afterwards.
    append_one(&*store, &id, &user("fine")).await.unwrap();
    assert_eq!(texts(&store, &id).await, ["fine"]);
}
