//! A request as the mock server received it.

use crate::cache::{prefix_blocks, CacheUsage, PrefixBlock};
use crate::Error;
use serde_json::{json, Value};

/// One request to a provider endpoint, as received. Control requests (`/__mock/…`) are not
/// recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// 1-based position among the recorded requests of this server (since the last reset).
    pub index: usize,
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The request target as sent, e.g. `/v1/messages` (with the query string, if any).
    pub path: String,
    /// The headers, names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
    /// What the request validation found wrong, or `None` when the request is one the real API
    /// would accept. Recorded whether or not validation is enforced.
    pub validation: Option<String>,
    /// What the prompt cache billed, when the server bills by it
    /// ([`MockServer::enable_prompt_cache`](crate::MockServer::enable_prompt_cache)) and this
    /// was a valid Anthropic request.
    pub cache: Option<CacheUsage>,
}

impl RecordedRequest {
    /// The value of the first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Result<Value, Error> {
        serde_json::from_slice(&self.body)
            .map_err(|e| Error::NotJson(format!("body of request {} is not JSON: {e}", self.index)))
    }

    /// The body's blocks in the API's prefix order (tools, system, messages), each as its exact
    /// JSON without `cache_control`; `None` when the body is not JSON. Two requests share a
    /// cached prefix exactly as far as these are equal.
    pub fn prefix_blocks(&self) -> Option<Vec<PrefixBlock>> {
        prefix_blocks(&self.body)
    }

    /// The request as the control endpoint `GET /__mock/requests` reports it: `index`, `method`,
    /// `path`, `headers` as `[name, value]` pairs, `body` as JSON (or as a string when it is not
    /// JSON), `validation` (a string or null) and `cache` (what the prompt cache billed, or null).
    pub fn to_json(&self) -> Value {
        let body = self
            .json()
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.body).into_owned()));
        json!({
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "headers": self.headers.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
            "body": body,
            "validation": self.validation,
            "cache": self.cache.map(|c| json!({
                "input_tokens": c.input_tokens,
                "cache_read_input_tokens": c.cache_read_input_tokens,
                "cache_creation_input_tokens": c.cache_creation_input_tokens(),
                "ephemeral_5m_input_tokens": c.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": c.ephemeral_1h_input_tokens,
                "breakpoints": c.breakpoints,
            })),
        })
    }
}
