//! Opening an agent on a stored session: `Agent::resume`, and the refusal to start a second chain
//! on a log the model never saw.

use panto_core::{Agent, ApiStyle, Error, MemoryStore, Role, UserMessage};
use panto_testkit::{MockServer, Reply};

use crate::support::*;

/// A store holding one finished turn ("first question" → "first answer"); returns its id.
async fn one_turn(store: &std::sync::Arc<MemoryStore>, style: ApiStyle, server: &MockServer) -> String {
    server.push(Reply::sse(text(style, "first answer")));
    let mut agent = agent_on(style, server, panto_core::Session::create(store.clone()));
    collect(&mut agent, "first question").await.unwrap();
    agent.session_id().to_owned()
}

#[tokio::test]
async fn agent_new_without_the_conversation_of_a_stored_session_is_refused() {
    for style in STYLES {
        let store = MemoryStore::new();
        let server = MockServer::start().await;
        let id = one_turn(&store, style, &server).await;

        let session = panto_core::Session::resolve(store.clone(), &id).await.unwrap().unwrap();
        let err = Agent::new(config(style, &server), session, None).unwrap_err();
        assert!(
            matches!(&err, Error::SessionNotLoaded { id: got, message_count: 2 } if *got == id),
            "{err:?}"
        );
        assert!(err.to_string().contains("Agent::resume"), "{err}");
        // Nothing was appended to the old log.
        assert_eq!(store.records(&id).len(), 2);
    }
}

/// A `Session` value is a snapshot: a clone taken before another agent wrote the session still
/// says it is empty. An agent on it is refused at its first turn, before any request, and
/// nothing is appended to the history the model would not have seen.
#[tokio::test]
async fn a_stale_clone_of_a_written_session_is_refused_before_its_first_request() {
    for style in STYLES {
        let store = MemoryStore::new();
        let server = MockServer::start().await;
        let session = panto_core::Session::create(store.clone());
        let stale = session.clone();
        server.push(Reply::sse(text(style, "first answer")));
        let mut agent = agent_on(style, &server, session);
        collect(&mut agent, "first question").await.unwrap();
        let id = agent.session_id().to_owned();
        drop(agent);
        let before = store.records(&id).len();
        assert_eq!(stale.info.message_count, 0, "the clone is stale");

        let mut agent = Agent::new(config(style, &server), stale, None).unwrap();
        let err = collect(&mut agent, "second question").await.unwrap_err();
        assert!(
            matches!(&err, Error::SessionNotLoaded { id: got, message_count: 2 } if *got == id),
            "{err:?}"
        );
        assert_eq!(server.requests().len(), 1, "no request was sent for the stale agent");
        assert_eq!(store.records(&id).len(), before, "nothing was appended");
        drop(agent);
        // The session still resumes with its whole history.
        let session = panto_core::Session::resolve(store.clone(), &id).await.unwrap().unwrap();
        let agent = Agent::resume(config(style, &server), session).await.unwrap();
        assert_eq!(agent.conversation().messages.len(), 2);
    }
}

#[tokio::test]
async fn resume_continues_the_stored_conversation() {
    for style in STYLES {
        let store = MemoryStore::new();
        let server = MockServer::start().await;
        let id = one_turn(&store, style, &server).await;

        let session = panto_core::Session::resolve(store.clone(), &id[..8])
            .await
            .unwrap()
            .unwrap();
        let mut agent = Agent::resume(config(style, &server), session).await.unwrap();
        assert_eq!(agent.session_id(), id);
        assert_eq!(agent.conversation().messages.len(), 2);
        server.push(Reply::sse(text(style, "second answer")));
        collect(&mut agent, "second question").await.unwrap();

        // The model saw the history...
        let sent = wire_messages(style, &body(&server.requests(), 1));
        let texts: Vec<String> = sent.iter().map(|m| m["content"].to_string()).collect();
        assert_eq!(sent.len(), 3, "{texts:?}");
        assert!(
            texts[0].contains("first question") && texts[1].contains("first answer"),
            "{texts:?}"
        );
        // ...and the log goes on as one chain.
        let stored: Vec<(Role, String)> = store
            .records(&id)
            .iter()
            .map(|r| (r.message.role, r.message.text()))
            .collect();
        assert_eq!(
            stored,
            vec![
                (Role::User, "first question".to_owned()),
                (Role::Assistant, "first answer".to_owned()),
                (Role::User, "second question".to_owned()),
                (Role::Assistant, "second answer".to_owned()),
            ]
        );
    }
}

#[tokio::test]
async fn a_second_live_agent_on_a_session_is_refused_until_the_first_is_dropped() {
    let style = ApiStyle::AnthropicMessages;
    let store = MemoryStore::new();
    let server = MockServer::start().await;
    server.push(Reply::sse(text(style, "first answer")));
    let mut first = agent_on(style, &server, panto_core::Session::create(store.clone()));
    collect(&mut first, "first question").await.unwrap();
    let id = first.session_id().to_owned();

    // Another agent on the same store may read the session, but not write it while the first
    // lives: its turn fails before anything is stored or sent.
    let session = panto_core::Session::resolve(store.clone(), &id).await.unwrap().unwrap();
    let mut second = Agent::resume(config(style, &server), session).await.unwrap();
    let err = collect(&mut second, "from the second").await.unwrap_err();
    assert!(matches!(&err, Error::SessionInUse { id: got } if *got == id), "{err:?}");
    assert_eq!(server.requests().len(), 1, "the refused turn reached the provider");
    assert_eq!(store.records(&id).len(), 2, "the refused turn wrote to the session");

    // The first goes on; a second agent dropped meanwhile does not take the session from it.
    drop(second);
    server.push(Reply::sse(text(style, "second answer")));
    collect(&mut first, "second question").await.unwrap();
    assert_eq!(store.records(&id).len(), 4);

    // Once the first is dropped, another agent resumes and writes it.
    drop(first);
    let session = panto_core::Session::resolve(store.clone(), &id).await.unwrap().unwrap();
    let mut third = Agent::resume(config(style, &server), session).await.unwrap();
    server.push(Reply::sse(text(style, "third answer")));
    collect(&mut third, "third question").await.unwrap();
    assert_eq!(store.records(&id).len(), 6);
    let sent = wire_messages(style, &body(&server.requests(), 2));
    assert_eq!(sent.len(), 5, "the third agent sent {sent:?}");
}

#[tokio::test]
async fn resume_of_a_session_the_store_does_not_hold_is_not_found() {
    let store = MemoryStore::new();
    let server = MockServer::start().await;
    let session = panto_core::Session::create(store.clone());
    let id = session.id().to_owned();
    let err = Agent::resume(config(ApiStyle::OpenAiChat, &server), session)
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::SessionNotFound(got) if *got == id), "{err:?}");
}

#[tokio::test]
async fn a_bad_user_image_is_named_by_its_index_and_nothing_is_sent() {
    let server = MockServer::start().await;
    let mut agent = agent(ApiStyle::AnthropicMessages, &server);
    let png = tiny_png();
    let message = UserMessage {
        text: "look".into(),
        images: vec![png, b"not an image".to_vec()],
        attached: Vec::new(),
    };
    let mut stream = agent.run(message);
    let err = stream.next().await.unwrap_err();
    assert!(matches!(&err, Error::InvalidImage { index: 1, .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("image 1 of the user message cannot be used"),
        "{err}"
    );
    drop(stream);
    assert!(server.requests().is_empty());
    assert!(agent.conversation().messages.is_empty());
}

/// A 1×1 PNG.
fn tiny_png() -> Vec<u8> {
    let mut bytes = Vec::new();
    image::RgbaImage::new(1, 1)
        .write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png)
        .unwrap();
    bytes
}
