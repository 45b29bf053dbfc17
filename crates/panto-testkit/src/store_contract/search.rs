//! Search: a word said once is found in the right session and entry, whatever its case; tool
//! inputs and outputs only when asked; hits off the active branch say so; regular expressions;
//! newest first.

use std::sync::Arc;

use panto_core::store::{MatchSource, SearchHit, SearchQuery};
use panto_core::{ContentBlock, Error, Role, SessionStore, StopReason};

use super::driver::{tick, Driver};
use super::messages::{assistant, reply, tool_result, user};

/// The store's hits for `query`, or a panic naming `case`.
pub async fn must_search(store: &Arc<dyn SessionStore>, query: &SearchQuery, case: &str) -> Vec<SearchHit> {
    match store.search(query).await {
        Ok(hits) => hits,
        Err(e) => panic!("{case}: search({query:?}) failed: {e}"),
    }
}

/// What a hit shows: session, entry, role, whether on the active branch, and the matched text.
fn shown(hit: &SearchHit) -> (String, String, Role, bool, String) {
    let m = &hit.matched;
    let matched = m.snippet.get(m.matched.clone()).unwrap_or_else(|| {
        panic!(
            "the match's range {:?} is not on the snippet's char boundaries: {:?}",
            m.matched, m.snippet
        )
    });
    (
        hit.session.id.clone(),
        hit.entry.clone(),
        hit.role,
        hit.on_active_branch,
        matched.to_owned(),
    )
}

/// A word said once, in one answer among several sessions, is found there whatever its case,
/// with the session's listing and the answer's entry; a word of a prompt is found at the prompt
/// alone (stores that copy the last prompt beside later entries must not count the copies); and
/// text holding characters JSON escapes is found as typed.
pub async fn search_finds_a_word_said_once(store: Arc<dyn SessionStore>) {
    const CASE: &str = "search_finds_a_word_said_once";
    let mut a = Driver::new(&store, None);
    a.append(vec![user("what is a parser?"), reply("a program that reads text")])
        .await;
    let mut b = Driver::new(&store, None);
    let b_ids = b
        .append(vec![
            user("name an island"),
            reply("Zanzibar, off the coast; he said \"see C:\\maps\" twice"),
        ])
        .await;
    let mut c = Driver::new(&store, None);
    let c_ids = c.append(vec![user("tell me about quokkas")]).await;
    c.append(vec![reply("small marsupials"), user("and more?"), reply("that is all")])
        .await;

    let hits = must_search(&store, &SearchQuery::text("zanZIBAR"), CASE).await;
    assert_eq!(
        hits.iter().map(shown).collect::<Vec<_>>(),
        vec![(b.id(), b_ids[1].clone(), Role::Assistant, true, "Zanzibar".to_owned())],
        "{CASE}: the one answer that says it"
    );
    assert_eq!(
        hits[0].session.message_count, 2,
        "{CASE}: the hit's session is listed whole"
    );
    assert_eq!(hits[0].matched.source, MatchSource::Text, "{CASE}");

    let hits = must_search(&store, &SearchQuery::text("Quokkas"), CASE).await;
    assert_eq!(
        hits.iter().map(shown).collect::<Vec<_>>(),
        vec![(c.id(), c_ids[0].clone(), Role::User, true, "quokkas".to_owned())],
        "{CASE}: the prompt that says it, once"
    );

    let hits = must_search(&store, &SearchQuery::text("\"see c:\\maps\""), CASE).await;
    assert_eq!(
        hits.iter().map(shown).collect::<Vec<_>>(),
        vec![(
            b.id(),
            b_ids[1].clone(),
            Role::Assistant,
            true,
            "\"see C:\\maps\"".to_owned()
        )],
        "{CASE}: quotes and backslashes as typed"
    );
    assert!(
        must_search(&store, &SearchQuery::text("wombat"), CASE).await.is_empty(),
        "{CASE}: a word never said"
    );
    // Words of the store's own records (keys, ids, roles, the model) are not what was said.
    for word in ["assistant", "claude-sonnet", "parent", &b_ids[0]] {
        assert!(
            must_search(&store, &SearchQuery::text(word), CASE).await.is_empty(),
            "{CASE}: {word:?} is only in the records, not in what was said"
        );
    }
}

/// Tool calls' inputs and tool results are searched only with `tools`.
pub async fn search_finds_tool_text_only_when_asked(store: Arc<dyn SessionStore>) {
    const CASE: &str = "search_finds_tool_text_only_when_asked";
    let mut d = Driver::new(&store, None);
    let call = assistant(
        vec![ContentBlock::ToolUse {
            id: "toolu_1".to_owned(),
            name: "bash".to_owned(),
            input: serde_json::json!({"command": "ls marmoset/"}),
        }],
        StopReason::ToolUse,
    );
    let ids = d
        .append(vec![
            user("list the directory"),
            call,
            tool_result("toolu_1", "Marmoset.txt", false),
            reply("one file"),
        ])
        .await;
    assert!(
        must_search(&store, &SearchQuery::text("marmoset"), CASE)
            .await
            .is_empty(),
        "{CASE}: not without tools"
    );
    let hits = must_search(&store, &SearchQuery::text("marmoset").with_tools(true), CASE).await;
    let found: Vec<(String, MatchSource, String)> = hits
        .iter()
        .map(|h| (h.entry.clone(), h.matched.source, shown(h).4))
        .collect();
    assert_eq!(
        found,
        vec![
            (ids[2].clone(), MatchSource::ToolOutput, "Marmoset".to_owned()),
            (ids[1].clone(), MatchSource::ToolInput, "marmoset".to_owned()),
        ],
        "{CASE}: the result, then the call (newest first)"
    );
    // A tool's name and a call's id are not its input.
    assert!(
        must_search(&store, &SearchQuery::text("toolu_1").with_tools(true), CASE)
            .await
            .is_empty(),
        "{CASE}: a call id"
    );
}

/// A hit on an entry a rewind left says it is off the active branch.
pub async fn search_says_which_branch(store: Arc<dyn SessionStore>) {
    const CASE: &str = "search_says_which_branch";
    let mut d = Driver::new(&store, None);
    let ids = d.append(vec![user("first"), reply("the ocelot answer")]).await;
    if let Err(e) = store.switch_branch(&d.id(), Some(&ids[0])).await {
        panic!("{CASE}: switch_branch failed: {e}");
    }
    d.reload().await;
    let new = d.append(vec![reply("another answer")]).await;
    let hits = must_search(&store, &SearchQuery::text("ocelot"), CASE).await;
    assert_eq!(
        hits.iter().map(shown).collect::<Vec<_>>(),
        vec![(d.id(), ids[1].clone(), Role::Assistant, false, "ocelot".to_owned())],
        "{CASE}: the left branch's answer"
    );
    let hits = must_search(&store, &SearchQuery::text("answer"), CASE).await;
    let branches: Vec<(String, bool)> = hits.iter().map(|h| (h.entry.clone(), h.on_active_branch)).collect();
    assert!(branches.contains(&(new[0].clone(), true)), "{CASE}: {branches:?}");
    assert!(branches.contains(&(ids[1].clone(), false)), "{CASE}: {branches:?}");
    let hits = must_search(&store, &SearchQuery::text("first"), CASE).await;
    assert_eq!(hits.len(), 1, "{CASE}: {hits:?}");
    assert!(
        hits[0].on_active_branch,
        "{CASE}: the shared prompt is on the active branch"
    );
}

/// A regular expression matches as a pattern (ignoring case); literal text does not; a
/// malformed pattern is an error naming it.
pub async fn search_by_regex(store: Arc<dyn SessionStore>) {
    const CASE: &str = "search_by_regex";
    let mut d = Driver::new(&store, None);
    let ids = d
        .append(vec![user("error E1234 in build"), reply("try a.b instead")])
        .await;
    let hits = must_search(&store, &SearchQuery::regex(r"e\d{4}\b"), CASE).await;
    assert_eq!(
        hits.iter().map(shown).collect::<Vec<_>>(),
        vec![(d.id(), ids[0].clone(), Role::User, true, "E1234".to_owned())],
        "{CASE}"
    );
    assert!(
        must_search(&store, &SearchQuery::text(r"e\d{4}"), CASE)
            .await
            .is_empty(),
        "{CASE}: text is literal"
    );
    assert!(
        must_search(&store, &SearchQuery::text("y a.B"), CASE).await.len() == 1,
        "{CASE}: a dot in text is a dot"
    );
    match store.search(&SearchQuery::regex("(unclosed")).await {
        Err(Error::InvalidSearchPattern { pattern, .. }) => assert_eq!(pattern, "(unclosed", "{CASE}"),
        other => panic!("{CASE}: a malformed pattern gave {other:?}"),
    }
}

/// Hits come newest first, the limit keeps the newest, and a query kept to one directory finds
/// only the sessions started there.
pub async fn search_is_newest_first(store: Arc<dyn SessionStore>) {
    const CASE: &str = "search_is_newest_first";
    let mut older = Driver::new(&store, None);
    older.append(vec![user("the kestrel flew")]).await;
    tick().await;
    let mut newer = Driver::new(&store, None);
    newer.append(vec![user("a kestrel again")]).await;
    tick().await;
    newer.append(vec![reply("kestrels hover")]).await;
    let hits = must_search(&store, &SearchQuery::text("kestrel"), CASE).await;
    let sessions: Vec<(String, Role)> = hits.iter().map(|h| (h.session.id.clone(), h.role)).collect();
    assert_eq!(
        sessions,
        vec![
            (newer.id(), Role::Assistant),
            (newer.id(), Role::User),
            (older.id(), Role::User)
        ],
        "{CASE}: newest first"
    );
    let hits = must_search(&store, &SearchQuery::text("kestrel").with_limit(1), CASE).await;
    assert_eq!(hits.len(), 1, "{CASE}: the limit");
    assert_eq!(hits[0].session.id, newer.id(), "{CASE}: the limit keeps the newest");
    let here = std::env::current_dir().unwrap_or_else(|e| panic!("{CASE}: no working directory: {e}"));
    let hits = must_search(&store, &SearchQuery::text("kestrel").in_dir(&here), CASE).await;
    assert_eq!(hits.len(), 3, "{CASE}: sessions started here");
    let hits = must_search(
        &store,
        &SearchQuery::text("kestrel").in_dir("/nonexistent/elsewhere"),
        CASE,
    )
    .await;
    assert!(hits.is_empty(), "{CASE}: no session was started elsewhere: {hits:?}");
}
