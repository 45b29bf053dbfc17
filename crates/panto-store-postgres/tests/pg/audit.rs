//! Provenance: every entry records the tools offered with it, content-addressed, and the
//! documented audit query reconstructs them; the full history keeps what compaction hid.

use panto_core::{SessionStore, ToolDecl};
use panto_store_postgres::{ToolHash, ToolManifest, AUDIT_QUERY};
use panto_testkit::store_contract::{reply, summary, tools, user, Driver};
use serde_json::json;

use super::common::{as_dyn, fresh_store};
use panto_testkit::postgres::connect;

fn grep_tool() -> ToolDecl {
    ToolDecl {
        name: "grep".to_owned(),
        description: "Search files for a pattern.".to_owned(),
        input_schema: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
    }
}

/// The contract's tools, with `bash` described differently: a new version of one tool.
fn tools_v2() -> Vec<ToolDecl> {
    let mut t = tools();
    t[1].description = "Run a shell command in a sandbox and return its output.".to_owned();
    t.push(grep_tool());
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_query_answers_which_tools_the_model_saw_at_each_entry() {
    let (store, url) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("first"), reply("one")]).await;
    d.tools = tools_v2();
    d.append(vec![user("second"), reply("two")]).await;
    d.tools = Vec::new();
    d.append(vec![user("third")]).await;
    // A second session offered the same tools adds no tool rows.
    let mut other = Driver::new(&as_dyn(&store), None);
    other.append(vec![user("elsewhere")]).await;
    other.tools = tools_v2();
    other.append(vec![reply("again")]).await;

    let history = store.history(&d.id()).await.unwrap().expect("the session's history");
    let entry_ids: Vec<&str> = history.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(entry_ids.len(), 5);
    let expected = [tools(), tools(), tools_v2(), tools_v2(), Vec::new()];
    for (entry, want) in entry_ids.iter().zip(&expected) {
        match store.tools_offered(&d.id(), entry).await.unwrap() {
            Some(ToolManifest::Recorded(got)) => assert_eq!(&got, want, "entry {entry}"),
            other => panic!("entry {entry}: {other:?}"),
        }
    }
    // The history names the same tools by address.
    let addresses: Vec<ToolHash> = tools_v2().iter().map(ToolHash::of).collect();
    assert_eq!(history[2].tools.as_deref(), Some(addresses.as_slice()));

    // The documented query, run as an operator would run it, gives the same answer.
    let client = connect(&url).await;
    let rows = client.query(AUDIT_QUERY, &[&d.id(), &entry_ids[2]]).await.unwrap();
    let got: Vec<ToolDecl> = rows
        .iter()
        .map(|r| ToolDecl {
            name: r.get(0),
            description: r.get(1),
            input_schema: r.get(2),
        })
        .collect();
    assert_eq!(got, tools_v2());

    // One row per distinct tool: read_file, bash, the new bash, grep.
    let count: i64 = client
        .query_one("select count(*) from panto.tools", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 4);
    let stored: Vec<u8> = client
        .query_one("select hash from panto.tools where name = 'grep'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        stored,
        ToolHash::of(&grep_tool()).0,
        "tools are keyed by their content address"
    );

    assert_eq!(store.tools_offered(&d.id(), "ffffffff").await.unwrap(), None);
}

#[test]
fn the_documented_audit_query_is_the_one_tested() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/stores.md")).expect("docs/stores.md");
    assert!(
        docs.contains(AUDIT_QUERY),
        "docs/stores.md must show the audit query exactly as panto runs it:\n{AUDIT_QUERY}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_keeps_what_compaction_hid() {
    let (store, _) = fresh_store().await;
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("q1"), reply("a1")]).await;
    d.append(vec![user("q2"), reply("a2")]).await;
    d.compact(2, "The user asked q1.").await;
    assert_eq!(
        store.load(&d.id()).await.unwrap().unwrap().messages,
        vec![summary("The user asked q1."), user("q2"), reply("a2")]
    );

    let history = store.history(&d.id()).await.unwrap().unwrap();
    let texts: Vec<String> = history.iter().map(|e| e.message.text()).collect();
    assert_eq!(texts, ["q1", "a1", "q2", "a2", ""]);
    assert_eq!(history[1].usage, reply("a1").usage, "usage is kept per entry");
    assert_eq!(history[1].wire, Some(d.wire.clone()));
    let compaction = history[4]
        .compaction
        .as_ref()
        .expect("the summary records the compaction");
    assert_eq!(compaction.first_kept.as_deref(), Some(history[2].id.as_str()));
    // The token estimates `Driver::compact` records.
    assert_eq!((compaction.tokens_before, compaction.tokens_after), (182_000, 9_500));
    assert!(history
        .windows(2)
        .all(|w| w[1].parent_id.as_deref() == Some(w[0].id.as_str())));
    assert_eq!(store.history(&panto_core::store::new_session_id()).await.unwrap(), None);
}
