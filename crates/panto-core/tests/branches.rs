//! Rewind and fork through the agent: message ids are the store's entry ids, a rewind makes the
//! next request carry only the path before the chosen prompt, and a fork continues in a new
//! session with the path to its entry; mid-session and after resume.

use panto_core::store::StoreWrapper;
use panto_core::{Agent, ApiStyle, Error, MemoryStore, Session, SessionStore};
use panto_testkit::{MockServer, Reply};

use crate::support::*;

/// The texts of the messages of request `n`.
fn sent_texts(style: ApiStyle, server: &MockServer, n: usize) -> Vec<String> {
    wire_messages(style, &body(&server.requests(), n))
        .iter()
        .map(|m| match &m["content"] {
            serde_json::Value::String(s) => s.clone(),
            blocks => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn rewind_then_fork_send_each_branch_alone() {
    for style in STYLES {
        let store = MemoryStore::new();
        let server = MockServer::start().await;
        let mut agent = agent_on(style, &server, Session::create(store.clone()));
        for (q, a) in [("q1", "a1"), ("q2", "a2"), ("q3", "a3")] {
            server.push(Reply::sse(text(style, a)));
            collect(&mut agent, q).await.unwrap();
        }
        let ids: Vec<String> = agent.message_ids().iter().map(|id| id.clone().unwrap()).collect();
        assert_eq!(ids.len(), 6, "every stored message has an id");
        let stored = store.load_branch(agent.session_id()).await.unwrap().unwrap();
        let stored_ids: Vec<String> = stored.entries.iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, stored_ids, "the agent's ids are the store's entry ids");
        let prompts: Vec<&str> = agent.prompts().iter().map(|(id, _)| *id).collect();
        assert_eq!(prompts, [&ids[0], &ids[2], &ids[4]]);

        // An answer is not a prompt.
        let err = agent.rewind(&ids[1]).await.unwrap_err();
        assert!(
            matches!(&err, Error::UnknownEntry { message, .. } if message.contains("not a prompt")),
            "{err}"
        );

        // Rewind two prompts back (to before q2) and ask again.
        agent.rewind(&ids[2]).await.unwrap();
        assert_eq!(agent.conversation().messages.len(), 2);
        server.push(Reply::sse(text(style, "a2'")));
        collect(&mut agent, "q2'").await.unwrap();
        assert_eq!(
            sent_texts(style, &server, 3),
            ["q1", "a1", "q2'"],
            "only the new branch is sent"
        );
        let rewound_id = agent.session_id().to_owned();

        // Fork at a1 and ask there.
        let fork_id = agent.fork(&ids[1]).await.unwrap();
        assert_ne!(fork_id, rewound_id);
        server.push(Reply::sse(text(style, "f")));
        collect(&mut agent, "in the fork").await.unwrap();
        assert_eq!(sent_texts(style, &server, 4), ["q1", "a1", "in the fork"]);
        assert_eq!(agent.message_id(0), Some(ids[0].as_str()), "a fork keeps the ids");

        // Resume both, as new processes would once this agent is gone: each sends exactly its
        // own branch.
        drop(agent);
        for (id, want) in [
            (&rewound_id, vec!["q1", "a1", "q2'", "a2'", "next"]),
            (&fork_id, vec!["q1", "a1", "in the fork", "f", "next"]),
        ] {
            let session = Session::resolve(store.clone(), id).await.unwrap().unwrap();
            let mut resumed = Agent::resume(config(style, &server), session).await.unwrap();
            server.push(Reply::sse(text(style, "ok")));
            collect(&mut resumed, "next").await.unwrap();
            let n = server.requests().len() - 1;
            assert_eq!(sent_texts(style, &server, n), want, "session {id}");
        }
    }
}

#[tokio::test]
async fn rewind_after_resume_and_on_a_store_without_branches() {
    for style in STYLES {
        let store = MemoryStore::new();
        let server = MockServer::start().await;
        let mut agent = agent_on(style, &server, Session::create(store.clone()));
        for (q, a) in [("q1", "a1"), ("q2", "a2")] {
            server.push(Reply::sse(text(style, a)));
            collect(&mut agent, q).await.unwrap();
        }
        let session = Session::resolve(store.clone(), agent.session_id())
            .await
            .unwrap()
            .unwrap();
        // The session is written by one live agent at a time.
        drop(agent);
        let mut resumed = Agent::resume(config(style, &server), session).await.unwrap();
        let first = resumed.prompts()[0].0.to_owned();
        resumed.rewind(&first).await.unwrap();
        assert!(resumed.conversation().messages.is_empty(), "back to the start");
        server.push(Reply::sse(text(style, "fresh")));
        collect(&mut resumed, "again").await.unwrap();
        assert_eq!(sent_texts(style, &server, 2), ["again"]);
        assert_eq!(resumed.session().info.message_count, 2, "the listing counts the branch");
        assert_eq!(resumed.session().info.last_user_message.as_deref(), Some("again"));

        // A store that keeps nothing cannot rewind, and says so.
        let mut null = agent_on(style, &server, Session::create(panto_core::NullStore::shared()));
        let err = null.rewind("00000000").await.unwrap_err();
        assert!(matches!(err, Error::SessionNotFound(_)), "{err:?}");
    }
}

/// A wrapper store, as an embedder writes one for metrics or access control: it counts the
/// writes to the session tree, and every other method forwards, so rewind and fork go through it
/// to the store it wraps.
#[derive(Debug)]
struct Counting {
    inner: std::sync::Arc<MemoryStore>,
    tree_writes: std::sync::atomic::AtomicUsize,
}

#[panto_core::async_trait]
impl StoreWrapper for Counting {
    fn inner(&self) -> &dyn SessionStore {
        &*self.inner
    }
    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> panto_core::Result<()> {
        self.tree_writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.switch_branch(id, tip).await
    }
    async fn fork(&self, from: &str, at: &str, new_id: &str) -> panto_core::Result<()> {
        self.tree_writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.fork(from, at, new_id).await
    }
}

#[tokio::test]
async fn a_wrapper_store_keeps_rewind_and_fork() {
    for style in STYLES {
        let memory = MemoryStore::new();
        let wrapper = std::sync::Arc::new(Counting {
            inner: memory.clone(),
            tree_writes: 0.into(),
        });
        let server = MockServer::start().await;
        let mut agent = agent_on(style, &server, Session::create(wrapper.clone()));
        for (q, a) in [("q1", "a1"), ("q2", "a2")] {
            server.push(Reply::sse(text(style, a)));
            collect(&mut agent, q).await.unwrap();
        }
        let ids: Vec<String> = agent.message_ids().iter().map(|id| id.clone().unwrap()).collect();
        agent.rewind(&ids[2]).await.unwrap();
        assert_eq!(agent.conversation().messages.len(), 2, "{style}: rewound to before q2");
        let fork = agent.fork(&ids[1]).await.unwrap();
        assert_eq!(
            wrapper.tree_writes.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "{style}: the rewind and the fork went through the wrapper"
        );
        let forked = memory
            .load_branch(&fork)
            .await
            .unwrap()
            .expect("the fork is in the wrapped store");
        assert_eq!(
            forked.conversation.messages.len(),
            2,
            "{style}: the fork holds q1 and a1"
        );
    }
}
