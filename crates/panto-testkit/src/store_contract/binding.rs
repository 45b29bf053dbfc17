//! Cases about the seam itself: the primitives a store implements agree with its listing, and
//! sessions are bound to the store they were asked of, a wrapper store included.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use panto_core::store::{PersistentMessage, StoreWrapper};
use panto_core::{Conversation, Error, Result, Session, SessionStore};

use super::driver::{info_of, must_list, must_load, Driver};
use super::messages::{reply, user};

/// `info`, `ids_with_prefix` and `latest_info`, which `Session::resolve` and `Session::latest`
/// are built on, agree with `list`; they find nothing of unknown or never appended sessions and
/// reject ids that are not ids.
pub async fn primitives_agree_with_the_listing(store: Arc<dyn SessionStore>) {
    const CASE: &str = "primitives_agree_with_the_listing";
    let mut a = Driver::new(&store, None);
    a.append(vec![user("first"), reply("one")]).await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("second")]).await;
    let never_appended = Session::create(store.clone());

    for d in [&a, &b] {
        let listed = info_of(&store, &d.id(), CASE).await;
        match store.info(&d.id()).await {
            Ok(Some(info)) => assert_eq!(info, listed, "{CASE}: info({}) differs from the listing", d.id()),
            other => panic!("{CASE}: info({}) gave {other:?}", d.id()),
        }
    }
    for unknown in [panto_core::store::new_session_id(), never_appended.id().to_owned()] {
        match store.info(&unknown).await {
            Ok(None) => {}
            other => panic!("{CASE}: info(unknown {unknown}) gave {other:?}"),
        }
    }

    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let ids_with = |prefix: String| {
        let store = store.clone();
        async move {
            match store.ids_with_prefix(&prefix).await {
                Ok(ids) => sorted(ids),
                Err(e) => panic!("{CASE}: ids_with_prefix({prefix}) failed: {e}"),
            }
        }
    };
    assert_eq!(
        ids_with(a.id()).await,
        vec![a.id()],
        "{CASE}: a whole id is its own prefix"
    );
    assert_eq!(
        ids_with(a.id()[..1].to_owned()).await,
        sorted(vec![a.id(), b.id()]),
        "{CASE}"
    );
    assert_eq!(
        ids_with(never_appended.id().to_owned()).await,
        Vec::<String>::new(),
        "{CASE}: a never appended session has no id in the store"
    );

    match store.latest_info().await {
        Ok(latest) => assert_eq!(
            latest,
            must_list(&store, CASE).await.into_iter().next(),
            "{CASE}: latest_info"
        ),
        Err(e) => panic!("{CASE}: latest_info failed: {e}"),
    }
    for invalid in ["../x", "a/b", "", "ABC"] {
        assert!(
            matches!(store.info(invalid).await, Err(Error::InvalidSessionId(_))),
            "{CASE}: info({invalid:?}) must be InvalidSessionId"
        );
        assert!(
            matches!(store.ids_with_prefix(invalid).await, Err(Error::InvalidSessionId(_))),
            "{CASE}: ids_with_prefix({invalid:?}) must be InvalidSessionId"
        );
    }
}

/// A session made by `Session::create`, `Session::resolve` or `Session::latest` keeps the store
/// it was asked of, so its appends go through that store.
pub async fn sessions_are_bound_to_the_store_asked(store: Arc<dyn SessionStore>) {
    const CASE: &str = "sessions_are_bound_to_the_store_asked";
    let mut d = Driver::new(&store, None);
    assert!(Arc::ptr_eq(&d.session.store, &store), "{CASE}: Session::create");
    d.append(vec![user("hello")]).await;
    let resolved = Session::resolve(store.clone(), &d.id()[..13]).await;
    let latest = Session::latest(store.clone()).await;
    for (how, found) in [("Session::resolve", resolved), ("Session::latest", latest)] {
        match found {
            Ok(Some(s)) => assert!(Arc::ptr_eq(&s.store, &store), "{CASE}: {how} bound another store"),
            other => panic!("{CASE}: {how} gave {other:?}"),
        }
    }
}

/// A store that wraps the store under test, as an embedder's caching, metrics or access-control
/// layer would: it counts the appends that pass through it, and every other method forwards.
#[derive(Debug)]
struct Wrapper {
    inner: Arc<dyn SessionStore>,
    appends: AtomicUsize,
}

#[async_trait]
impl StoreWrapper for Wrapper {
    fn inner(&self) -> &dyn SessionStore {
        &*self.inner
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.inner.append(id, messages).await
    }
}

/// Sessions that a wrapper store hands out (created, resolved by id and by prefix, latest) write
/// through the wrapper, and what they write lands in the wrapped store.
pub async fn a_wrapper_store_sees_every_append(store: Arc<dyn SessionStore>) {
    const CASE: &str = "a_wrapper_store_sees_every_append";
    let wrapper = Arc::new(Wrapper {
        inner: store.clone(),
        appends: AtomicUsize::new(0),
    });
    let wrapped: Arc<dyn SessionStore> = wrapper.clone();
    let mut d = Driver::new(&wrapped, None);
    d.append(vec![user("through the wrapper")]).await;
    assert_eq!(wrapper.appends.load(Ordering::SeqCst), 1, "{CASE}: a created session");

    let id = d.id();
    let ways = [
        (
            "Session::resolve(full id)",
            Session::resolve(wrapped.clone(), &id).await,
        ),
        (
            "Session::resolve(prefix)",
            Session::resolve(wrapped.clone(), &id[..8]).await,
        ),
        ("Session::latest", Session::latest(wrapped.clone()).await),
    ];
    let mut want = vec![user("through the wrapper")];
    for (n, (how, found)) in ways.into_iter().enumerate() {
        let mut session = match found {
            Ok(Some(s)) => s,
            other => panic!("{CASE}: {how} gave {other:?}"),
        };
        let message = reply(&format!("via {how}"));
        want.push(message.clone());
        let conversation = Conversation {
            messages: want.clone(),
            metadata: None,
        };
        let entry = PersistentMessage::new(&message, &conversation);
        if let Err(e) = session.append(&[entry]).await {
            panic!("{CASE}: appending through a session from {how} failed: {e}");
        }
        assert_eq!(
            wrapper.appends.load(Ordering::SeqCst),
            n + 2,
            "{CASE}: a session from {how} wrote past the wrapper"
        );
    }
    assert_eq!(
        must_load(&store, &id, CASE).await.messages,
        want,
        "{CASE}: the wrapped store holds what went through the wrapper"
    );
}
