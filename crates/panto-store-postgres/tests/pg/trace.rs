//! The `panto.store.append` span (docs/observability.md) times the whole append, not only the
//! commit: an append refused before its transaction (another writer holds the session) is still
//! traced, and a committed one records bytes, the commit and the whole duration.

use panto_core::Error;
use panto_store_postgres::PostgresStore;
use panto_testkit::store_contract::{append_one, user};
use panto_testkit::trace::{Capture, CapturedSpan};

use super::common::fresh_store;

fn number(span: &CapturedSpan, field: &str) -> f64 {
    span.field(field)
        .unwrap_or_else(|| panic!("{field} not recorded on {span:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{field} of {span:?}: {e}"))
}

// A current-thread runtime: the capture is this thread's default subscriber.
#[tokio::test]
async fn the_append_span_covers_the_whole_append_and_refused_appends() {
    let (first, url) = fresh_store().await;
    let second = PostgresStore::connect(&url).await.unwrap();
    let id = panto_core::store::new_session_id();
    let capture = Capture::new();
    let _guard = capture.set_default();

    append_one(&*first, &id, &user("hello there")).await.unwrap();
    let refused = append_one(&*second, &id, &user("mine?")).await;
    assert!(matches!(refused, Err(Error::SessionInUse { .. })), "{refused:?}");

    let appends = capture.spans_named("panto.store.append");
    assert_eq!(
        appends.len(),
        2,
        "one span per append, the refused one too: {appends:?}"
    );
    let (ok, failed) = (&appends[0], &appends[1]);
    for span in [ok, failed] {
        assert_eq!(span.field("panto.store.kind"), Some("postgres"));
        assert_eq!(span.field("gen_ai.conversation.id"), Some(id.as_str()));
        assert_eq!(span.field("panto.store.messages"), Some("1"));
        assert!(span.closed, "{span:?}");
    }
    assert!(number(ok, "panto.store.bytes") > 20.0, "{ok:?}");
    let commit = number(ok, "panto.store.commit_ms");
    let whole = number(ok, "panto.duration_ms");
    assert!(
        whole >= commit,
        "the whole append ({whole} ms) includes its commit ({commit} ms)"
    );
    assert_eq!(ok.field("error.type"), None);

    assert_eq!(failed.field("error.type"), Some("store"), "{failed:?}");
    number(failed, "panto.duration_ms");
    assert_eq!(
        failed.field("panto.store.commit_ms"),
        None,
        "no transaction ran: {failed:?}"
    );
}
