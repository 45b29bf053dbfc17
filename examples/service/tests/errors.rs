//! What a client of `panto-service` gets for a request it got wrong, and for a provider that
//! refuses the turn: every error in the service's form (`{"error": "..."}`) with a status that
//! says whose fault it is, and nothing written or sent for a request refused up front.

use crate::common::{http, start_instance, Client};
use panto_testkit::postgres::server;
use panto_testkit::{script, MockServer, Reply};
use serde_json::{json, Value};

/// The status and JSON body of a prompt sent as `content_type` with `body`.
async fn post_raw(http: &reqwest::Client, url: &str, content_type: Option<&str>, body: &str) -> (u16, Value) {
    let mut request = http.post(url).body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {text:?}"));
    (status, value)
}

fn error_of(body: &Value) -> &str {
    body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_and_a_refusing_provider_get_errors_in_the_service_form() {
    let database = server().create_database().await;
    let mock = MockServer::start().await;
    let instance = start_instance(&database, &mock, &[]);
    let client = Client::new();
    let http = http();

    let (status, started) = client
        .call(reqwest::Method::POST, format!("{}/sessions", instance.base), None)
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let url = format!("{}/sessions/{id}/prompt", instance.base);

    // Bodies that are not the JSON asked for: each named, as JSON.
    let (status, body) = post_raw(&http, &url, None, r#"{"text": "hi"}"#).await;
    assert_eq!(status, 415, "{body}");
    assert!(error_of(&body).contains("Content-Type"), "{body}");
    let (status, body) = post_raw(&http, &url, Some("application/json"), r#"{"text": "#).await;
    assert_eq!(status, 400, "{body}");
    assert!(error_of(&body).contains("line 1 column"), "{body}");
    let (status, body) = post_raw(&http, &url, Some("application/json"), r#"{"txt": "hi"}"#).await;
    assert_eq!(status, 422, "{body}");
    assert!(error_of(&body).contains("missing field `text`"), "{body}");

    // An empty prompt is refused before anything is written or sent.
    for text in ["", " \n\t"] {
        let (status, body) = client.prompt(&instance, &id, text).await;
        assert_eq!(status, 400, "{body:?}");
        assert!(error_of(&body[0]).contains("empty"), "{body:?}");
    }
    assert!(mock.requests().is_empty(), "a refused prompt reached the provider");
    let (_, listed) = client
        .call(reqwest::Method::GET, format!("{}/sessions", instance.base), None)
        .await;
    // Listed as started here, with nothing stored.
    assert_eq!(
        listed,
        json!([{"id": id, "message_count": 0, "last_user_message": null, "live_here": true}]),
        "a refused prompt was stored"
    );

    // A provider that refuses the turn before its first event: the fault is upstream (502), and
    // its message names the provider's status without the key.
    mock.push(Reply::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key test-key"}}),
    ));
    let (status, body) = client.prompt(&instance, &id, "hi").await;
    assert_eq!(status, 502, "{body:?}");
    let message = error_of(&body[0]);
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains("test-key"), "{message}");

    // The session still works once the provider answers.
    mock.push(Reply::sse(script::anthropic_text("fine now")));
    let (status, events) = client.prompt(&instance, &id, "again").await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(crate::common::streamed_text(&events), "fine now");
}

/// The service is safe to copy: no request gets in without the token, a request naming another
/// Host (a DNS name rebound to this address, reached from a browser) is refused, and the number
/// of live sessions (each a PostgreSQL lock) is capped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_need_the_token_and_a_known_host_and_live_sessions_are_capped() {
    let database = server().create_database().await;
    let mock = MockServer::start().await;
    let instance = start_instance(&database, &mock, &[("PANTO_SERVICE_MAX_LIVE", "2")]);
    let sessions = format!("{}/sessions", instance.base);
    let bare = panto_core::http_client_builder().build().unwrap();

    for request in [bare.get(&sessions), bare.post(&sessions)] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401);
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
    }
    let wrong = bare
        .get(&sessions)
        .bearer_auth("test-token-0123456780")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);

    let port = instance.base.rsplit(':').next().unwrap();
    let rebound = http()
        .get(&sessions)
        .header("host", format!("attacker.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 421);
    let localhost = http()
        .get(&sessions)
        .header("host", format!("localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(localhost.status().as_u16(), 200);

    let client = Client::new();
    let mut started = Vec::new();
    for _ in 0..2 {
        let (status, body) = client.call(reqwest::Method::POST, sessions.clone(), None).await;
        assert_eq!(status, 201, "{body}");
        started.push(body["id"].as_str().unwrap().to_owned());
    }
    let (status, body) = client.call(reqwest::Method::POST, sessions.clone(), None).await;
    assert_eq!(status, 503, "{body}");
    assert!(error_of(&body).contains("2 sessions are live"), "{body}");
    // Releasing one makes room again.
    let (status, _) = client
        .call(reqwest::Method::DELETE, format!("{sessions}/{}", started[0]), None)
        .await;
    assert_eq!(status, 204);
    let (status, body) = client.call(reqwest::Method::POST, sessions.clone(), None).await;
    assert_eq!(status, 201, "{body}");
}
