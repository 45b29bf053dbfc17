//! Cases about finding sessions: by id or prefix, unknown ones, never appended ones.

use std::sync::Arc;

use panto_core::{Error, Session, SessionStore};

use super::driver::{must_list, Driver};
use super::messages::{reply, user};

/// `resolve` finds a session by full id and by unique prefix, reports an ambiguous prefix with
/// every candidate, finds nothing for unknown ids and rejects ids that are not ids.
pub async fn resolve_by_id_and_prefix(store: Arc<dyn SessionStore>) {
    const CASE: &str = "resolve_by_id_and_prefix";
    let mut a = Driver::new(&store, None);
    a.append(vec![user("first session")]).await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("second session"), reply("hello")]).await;
    let (a_id, b_id) = (a.id(), b.id());

    let found = match Session::resolve(store.clone(), &b_id).await {
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
    match Session::resolve(store.clone(), unique).await {
        Ok(Some(s)) => assert_eq!(s.id(), a_id, "{CASE}: resolve(unique prefix {unique})"),
        other => panic!("{CASE}: resolve(unique prefix {unique}) gave {other:?}"),
    }

    match Session::resolve(store.clone(), &common).await {
        Err(Error::AmbiguousSession { prefix, mut candidates }) => {
            candidates.sort();
            let mut both = vec![a_id.clone(), b_id.clone()];
            both.sort();
            assert_eq!(prefix, common, "{CASE}: the ambiguous prefix");
            assert_eq!(candidates, both, "{CASE}: the candidates must list both sessions");
        }
        other => panic!("{CASE}: resolve(shared prefix {common}) should be ambiguous, gave {other:?}"),
    }

    let never_appended = Session::create(store.clone());
    for unknown in [panto_core::store::new_session_id(), never_appended.id().to_owned()] {
        match Session::resolve(store.clone(), &unknown).await {
            Ok(None) => {}
            other => panic!("{CASE}: resolve(unknown {unknown}) gave {other:?}"),
        }
    }
    for invalid in ["../x", "a/b", "", "ABC"] {
        match Session::resolve(store.clone(), invalid).await {
            Err(Error::InvalidSessionId(id)) => assert_eq!(id, invalid, "{CASE}"),
            other => panic!("{CASE}: resolve({invalid:?}) should be InvalidSessionId, gave {other:?}"),
        }
    }
}

/// `load` of an id no session has is `None`; of an id that is not an id, `InvalidSessionId`.
pub async fn unknown_sessions_load_as_none(store: Arc<dyn SessionStore>) {
    const CASE: &str = "unknown_sessions_load_as_none";
    let mut d = Driver::new(&store, None);
    d.append(vec![user("present")]).await;
    for unknown in [panto_core::store::new_session_id(), d.id()[..8].to_owned()] {
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
    let session = Session::create(store.clone());
    match session.load().await {
        Err(Error::SessionNotFound(id)) => assert_eq!(id, session.id(), "{CASE}"),
        other => panic!("{CASE}: Session::load of a never-appended session gave {other:?}"),
    }
    assert!(
        must_list(&store, CASE).await.is_empty(),
        "{CASE}: it must not be listed"
    );
}
