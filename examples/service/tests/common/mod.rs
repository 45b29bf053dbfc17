//! What the service's end-to-end tests share: starting `panto-service` as a process against the
//! mock LLM server, and an HTTP client for its endpoints.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use panto_testkit::{check_events, MockServer};
use serde_json::{json, Value};

/// The bearer token every instance the tests start expects.
pub const TOKEN: &str = "test-token-0123456789";

/// An HTTP client that sends the tests' token with every request.
pub fn http() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        reqwest::header::HeaderValue::from_str(&format!("Bearer {TOKEN}")).unwrap(),
    );
    panto_core::http_client_builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

/// A running instance; killed when dropped.
pub struct Instance {
    pub child: Child,
    pub base: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an instance on `database` against `mock`, with `env` added to (or overriding) its
/// environment.
pub fn start_instance(database: &str, mock: &MockServer, env: &[(&str, &str)]) -> Instance {
    let mut child = Command::new(env!("CARGO_BIN_EXE_panto-service"))
        .env("PANTO_SERVICE_DATABASE_URL", database)
        .env("PANTO_SERVICE_LISTEN", "127.0.0.1:0")
        .env("PANTO_SERVICE_BASE_URL", mock.anthropic_base_url())
        .env("PANTO_SERVICE_MODEL", "claude-sonnet-4-5")
        .env("PANTO_SERVICE_API_KEY", "test-key")
        .env("PANTO_SERVICE_TOKEN", TOKEN)
        .envs(env.iter().copied())
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

pub struct Client(reqwest::Client);

impl Client {
    pub fn new() -> Self {
        Client(http())
    }

    /// The status and body (JSON, or the raw text as a JSON string) of `method url`.
    pub async fn call(&self, method: reqwest::Method, url: String, body: Option<Value>) -> (u16, Value) {
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
    pub async fn prompt(&self, instance: &Instance, id: &str, text: &str) -> (u16, Vec<Value>) {
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

pub fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect()
}
