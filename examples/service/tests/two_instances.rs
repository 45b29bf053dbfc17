//! Two instances of `panto-service` (two processes) on one PostgreSQL database, end to end
//! against the mock LLM server: a session live in one instance is refused by the other with a
//! 409 until the first lets go of it; then the other resumes it with its whole history.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use panto_testkit::postgres::server;
use panto_testkit::{check_events, script, MockServer, Reply};
use serde_json::{json, Value};

/// A running instance; killed when dropped.
struct Instance {
    child: Child,
    base: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_instance(database: &str, mock: &MockServer) -> Instance {
    let mut child = Command::new(env!("CARGO_BIN_EXE_panto-service"))
        .env("PANTO_SERVICE_DATABASE_URL", database)
        .env("PANTO_SERVICE_LISTEN", "127.0.0.1:0")
        .env("PANTO_SERVICE_BASE_URL", mock.anthropic_base_url())
        .env("PANTO_SERVICE_MODEL", "claude-sonnet-4-5")
        .env("PANTO_SERVICE_API_KEY", "test-key")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting panto-service");
    let stdout = child.stdout.take().expect("its stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reading its first line");
    let Some(base) = line.trim().strip_prefix("listening on ") else {
        panic!("panto-service did not start: it said {line:?}");
    };
    Instance {
        base: base.to_owned(),
        child,
    }
}

struct Client(reqwest::Client);

impl Client {
    fn new() -> Self {
        Client(panto_core::http_client_builder().build().unwrap())
    }

    /// The status and body (JSON, or the raw text as a JSON string) of `method url`.
    async fn call(&self, method: reqwest::Method, url: String, body: Option<Value>) -> (u16, Value) {
        let mut request = self.0.request(method, &url);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// Sends a prompt; the status, and for a 200 the events of the turn (the data of each
    /// server-sent event, checked against the event schema), else the error body.
    async fn prompt(&self, instance: &Instance, id: &str, text: &str) -> (u16, Vec<Value>) {
        let url = format!("{}/sessions/{id}/prompt", instance.base);
        let response = self
            .0
            .post(&url)
            .header("content-type", "application/json")
            .body(json!({ "text": text }).to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        if status != 200 {
            return (status, vec![serde_json::from_str(&body).unwrap_or(Value::String(body))]);
        }
        let events: Vec<Value> = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("event {data:?}: {e}")))
            .collect();
        check_events(&events).unwrap();
        (status, events)
    }
}

fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_database_never_write_the_same_session() {
    let database = server().create_database().await;
    let mock = MockServer::start().await;
    let a = start_instance(&database, &mock);
    let b = start_instance(&database, &mock);
    let http = Client::new();

    let (status, started) = http
        .call(reqwest::Method::POST, format!("{}/sessions", a.base), None)
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().expect("an id").to_owned();

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
