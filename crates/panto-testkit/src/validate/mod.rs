//! Request validation: the rules the real APIs enforce, checked on every provider request.
//!
//! The point is that a panto test cannot pass while panto sends a request the real provider
//! would refuse. Messages name the offending field with the path style of each API
//! (`messages.1.content.0` for Anthropic, `messages[1].tool_calls[0]` for OpenAI).

mod anthropic;
mod cache_control;
mod openai;
mod responses;

use serde_json::{json, Map, Value};

use crate::http::Request;

/// Which API a request was addressed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST …/chat/completions`.
    OpenAi,
    /// `POST …/responses`.
    Responses,
}

impl Api {
    /// The API a request path belongs to, if any.
    pub(crate) fn of_path(path: &str) -> Option<Api> {
        if path == "/v1/messages" {
            Some(Api::Anthropic)
        } else if path.ends_with("/chat/completions") {
            Some(Api::OpenAi)
        } else if path.ends_with("/responses") {
            Some(Api::Responses)
        } else {
            None
        }
    }

    /// An error body in this API's shape.
    pub(crate) fn error_body(api: Option<Api>, error_type: &str, message: &str) -> Value {
        match api {
            Some(Api::Anthropic) => json!({"type": "error", "error": {"type": error_type, "message": message}}),
            _ => json!({"error": {"message": message, "type": error_type, "param": null, "code": null}}),
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// 400 for a bad request to a known endpoint, 404 for an unknown endpoint, 405 for a method.
    pub status: u16,
    /// What was wrong, naming the field.
    pub message: String,
    /// The API addressed, which decides the shape of the error body.
    pub api: Option<Api>,
}

impl Rejection {
    /// The provider-shaped error body.
    pub(crate) fn body(&self) -> Value {
        let error_type = match self.status {
            404 => "not_found_error",
            _ => "invalid_request_error",
        };
        Api::error_body(self.api, error_type, &self.message)
    }
}

/// Checks a provider request.
pub(crate) fn validate(req: &Request) -> Result<(), Rejection> {
    let Some(api) = Api::of_path(req.path()) else {
        return Err(Rejection {
            status: 404,
            message: format!(
                "mock: no endpoint {} {}: expected POST /v1/messages (Anthropic), POST …/chat/completions (OpenAI) or POST …/responses (OpenAI Responses)",
                req.method, req.target
            ),
            api: None,
        });
    };
    if req.method != "POST" {
        return Err(Rejection {
            status: 405,
            message: format!("mock: {} {} must be a POST", req.method, req.target),
            api: Some(api),
        });
    }
    let result = match api {
        Api::Anthropic => anthropic::validate(&req.headers, &req.body),
        Api::OpenAi => openai::validate(&req.headers, &req.body),
        Api::Responses => responses::validate(&req.headers, &req.body),
    };
    result.map_err(|message| Rejection {
        status: 400,
        message: format!("mock validation: {message}"),
        api: Some(api),
    })
}

/// The first value of a header (names are lowercased by the parser).
fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// The request must say it carries JSON.
fn require_json(headers: &[(String, String)]) -> Result<(), String> {
    match header(headers, "content-type") {
        Some(ct) if ct.to_ascii_lowercase().starts_with("application/json") => Ok(()),
        Some(ct) => Err(format!("content-type header must be application/json, got {ct:?}")),
        None => Err("missing content-type header (must be application/json)".to_owned()),
    }
}

/// The body as a JSON object.
fn parse_object(body: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("body must be a JSON object, got {}", kind(&other))),
        Err(e) => Err(format!("body is not valid JSON: {e}")),
    }
}

/// What kind of JSON value this is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A required non-empty string field.
fn non_empty_str<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a str, String> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) => Err(format!("{path}: must not be empty")),
        Some(other) => Err(format!("{path}: must be a string, got {}", kind(other))),
        None => Err(format!("{path}: field required")),
    }
}

/// `stream` must be `true`: the mock (like panto) only serves streaming requests.
fn require_stream(obj: &Map<String, Value>) -> Result<(), String> {
    match obj.get("stream") {
        Some(Value::Bool(true)) => Ok(()),
        Some(other) => Err(format!("stream: must be true, got {other}")),
        None => Err("stream: must be true (field missing)".to_owned()),
    }
}

/// Tool names both APIs accept: `^[a-zA-Z0-9_-]{1,64}$`.
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool name field, checked against [`valid_tool_name`].
fn tool_name<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a str, String> {
    let name = non_empty_str(obj, key, path)?;
    if valid_tool_name(name) {
        Ok(name)
    } else {
        Err(format!(
            "{path}: tool name {name:?} does not match ^[a-zA-Z0-9_-]{{1,64}}$"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        assert!(valid_tool_name("read_file"));
        assert!(valid_tool_name("a-B_9"));
        assert!(valid_tool_name(&"x".repeat(64)));
        assert!(!valid_tool_name(&"x".repeat(65)));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("mcp.read"));
        assert!(!valid_tool_name("read file"));
    }

    #[test]
    fn endpoints() {
        assert_eq!(Api::of_path("/v1/messages"), Some(Api::Anthropic));
        assert_eq!(Api::of_path("/v1/chat/completions"), Some(Api::OpenAi));
        assert_eq!(Api::of_path("/api/openai/v1/chat/completions"), Some(Api::OpenAi));
        assert_eq!(Api::of_path("/v1/messages/count_tokens"), None);
        assert_eq!(Api::of_path("/v1/responses"), Some(Api::Responses));
    }
}
