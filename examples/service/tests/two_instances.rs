//! Two instances of `panto-service` (two processes) on one PostgreSQL database, end to end
//! against the mock LLM server: a session live in one instance is refused by the other with a
//! 409 until the first lets go of it; then the other resumes it with its whole history.

use std::time::{Duration, Instant};

use crate::common::{start_instance, streamed_text, Client};
use panto_testkit::postgres::server;
use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_database_never_write_the_same_session() {
    let database = server().create_database().await;
    let mock = MockServer::start().await;
    let a = start_instance(&database, &mock, &[]);
    let b = start_instance(&database, &mock, &[]);
    let http = Client::new();

    let (status, started) = http
        .call(reqwest::Method::POST, format!("{}/sessions", a.base), None)
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().expect("an id").to_owned();

    // Started in a, the session is a's before anything of it is stored: b refuses it, and a
    // lists it.
    let (status, error) = http.prompt(&b, &id, "first to b").await;
    assert_eq!(status, 409, "{error:?}");
    let (_, listed) = http
        .call(reqwest::Method::GET, format!("{}/sessions", a.base), None)
        .await;
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed[0]["message_count"], 0, "{listed}");
    assert_eq!(listed[0]["live_here"], true, "{listed}");
    assert_eq!(mock.requests().len(), 0, "a refused request reached the provider");

    mock.push(Reply::sse(script::anthropic_text("hello from a")));
    let (status, events) = http.prompt(&a, &id, "hi a").await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(streamed_text(&events), "hello from a");
    assert_eq!(events.last().unwrap()["type"], "turn_complete", "{events:?}");

    // The session is live in a: b can read it, but neither prompt it nor resume it.
    let (status, error) = http.prompt(&b, &id, "hi b").await;
    assert_eq!(status, 409, "{error:?}");
    let message = error[0]["error"].as_str().unwrap();
    assert!(
        message.contains(&id) && message.contains("another instance"),
        "{message}"
    );
    let (status, error) = http
        .call(reqwest::Method::POST, format!("{}/sessions/{id}/resume", b.base), None)
        .await;
    assert_eq!(status, 409, "{error}");
    let (_, listed) = http
        .call(reqwest::Method::GET, format!("{}/sessions", b.base), None)
        .await;
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["message_count"], 2);
    assert_eq!(listed[0]["live_here"], false);
    let (_, listed) = http
        .call(reqwest::Method::GET, format!("{}/sessions", a.base), None)
        .await;
    assert_eq!(listed[0]["live_here"], true);
    assert_eq!(mock.requests().len(), 1, "a refused request reached the provider");

    // a lets go; b takes the session (the lock is released by a task of a, so b may have to ask
    // again for a moment) and continues it with its whole history.
    let (status, _) = http
        .call(reqwest::Method::DELETE, format!("{}/sessions/{id}", a.base), None)
        .await;
    assert_eq!(status, 204);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = http
            .call(reqwest::Method::POST, format!("{}/sessions/{id}/resume", b.base), None)
            .await;
        if status == 200 {
            assert_eq!(body["messages"], 2, "{body}");
            break;
        }
        assert_eq!(status, 409, "{body}");
        assert!(Instant::now() < deadline, "a never released session {id}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    mock.push(Reply::sse(script::anthropic_text("hello from b")));
    let (status, events) = http.prompt(&b, &id, "hi b").await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(streamed_text(&events), "hello from b");
    let second = &mock.requests()[1];
    assert_eq!(second.validation, None);
    let sent: Value = serde_json::from_slice(&second.body).unwrap();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 3, "b sent {sent}");

    // Now a is the one refused, and the database holds the four messages once.
    let (status, error) = http.prompt(&a, &id, "mine again?").await;
    assert_eq!(status, 409, "{error:?}");
    let (_, listed) = http
        .call(reqwest::Method::GET, format!("{}/sessions", a.base), None)
        .await;
    assert_eq!(listed[0]["message_count"], 4);
    assert_eq!(listed[0]["last_user_message"], "hi b");

    // Unknown sessions and sessions not live here are named.
    let unknown = panto_core::store::new_session_id();
    let (status, error) = http
        .call(
            reqwest::Method::POST,
            format!("{}/sessions/{unknown}/resume", a.base),
            None,
        )
        .await;
    assert_eq!(status, 404, "{error}");
    let (status, error) = http
        .call(reqwest::Method::DELETE, format!("{}/sessions/{id}", a.base), None)
        .await;
    assert_eq!(status, 404, "{error}");
    assert!(error["error"].as_str().unwrap().contains("not live in this instance"));
}
