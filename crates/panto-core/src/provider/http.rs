//! HTTP transport: send a request, classify a failure. Knows nothing of either API's events.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::{Error, Result};

/// Posts `body` to `url` and returns the response once a success status and headers are in.
/// A non-success status is read whole and turned into an [`Error`] by [`classify_status`].
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    body: &serde_json::Value,
    idle_timeout: Duration,
) -> Result<reqwest::Response> {
    let mut map = HeaderMap::with_capacity(headers.len() + 2);
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| Error::InvalidState(format!("header name {name:?}: {e}")))?;
        let value = HeaderValue::from_str(value).map_err(|e| Error::InvalidState(format!("header {name}: {e}")))?;
        map.insert(name, value);
    }
    map.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    map.insert(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    let bytes = serde_json::to_vec(body).map_err(|e| Error::InvalidState(format!("request body: {e}")))?;
    let request = client.post(url).headers(map).body(bytes).send();
    let response = match tokio::time::timeout(idle_timeout, request).await {
        Err(_) => return Err(Error::IdleTimeout(idle_timeout)),
        Ok(Err(e)) => {
            return Err(Error::Connect {
                url: url.to_owned(),
                message: describe(&e),
            })
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let text = match tokio::time::timeout(idle_timeout, response.text()).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => format!("(body unreadable: {})", describe(&e)),
        Err(_) => "(body timed out)".to_owned(),
    };
    Err(classify_status(status.as_u16(), &text, retry_after))
}

/// A reqwest error with its source chain, as one line.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// The delay a response asks for: `retry-after-ms` (milliseconds, as OpenAI sends), else
/// `retry-after` in seconds (fractional allowed) or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// The error type and message of a provider error body, whichever API's shape it has:
/// Anthropic `{"type":"error","error":{"type","message"}}`, OpenAI `{"error":{"message","type",
/// "code"}}`, or a bare `{"error":"text"}`.
pub(crate) fn parse_error_body(body: &str) -> (Option<String>, Option<String>, String) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return (None, None, body.trim().to_owned());
    };
    let error = value.get("error").unwrap_or(&value);
    if let Some(text) = error.as_str() {
        return (None, None, text.to_owned());
    }
    let string = |v: Option<&serde_json::Value>| -> Option<String> {
        match v? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let error_type = string(error.get("type"));
    let code = string(error.get("code"));
    let message = string(error.get("message")).unwrap_or_else(|| body.trim().to_owned());
    (error_type, code, message)
}

/// Whether an error's code or message says the prompt did not fit the context window, in the
/// wordings of Anthropic, OpenAI and the common OpenAI-compatible servers.
pub(crate) fn is_context_overflow(code: Option<&str>, message: &str) -> bool {
    if matches!(code, Some("context_length_exceeded" | "string_above_max_length")) {
        return true;
    }
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "contextwindowexceeded",
        "exceeds the context",
        "too many tokens",
        "input is too long",
        "request too large",
        "reduce the length of the messages",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// Turns a non-success response into an [`Error`].
pub(crate) fn classify_status(status: u16, body: &str, retry_after: Option<Duration>) -> Error {
    let (error_type, code, message) = parse_error_body(body);
    if matches!(status, 400 | 413 | 422) && is_context_overflow(code.as_deref(), &message) {
        return Error::ContextOverflow { status, message };
    }
    Error::Http {
        status,
        error_type: error_type.or(code),
        message,
        retry_after,
    }
}

/// Turns an error payload received mid-stream into an [`Error`].
pub(crate) fn classify_stream_error(data: &str) -> Error {
    let (error_type, code, message) = parse_error_body(data);
    if is_context_overflow(code.as_deref(), &message) {
        return Error::ContextOverflow { status: 0, message };
    }
    Error::StreamError {
        error_type: error_type.or(code),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn overflow_wordings() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 203284 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            classify_status(400, anthropic, None),
            Error::ContextOverflow { .. }
        ));
        let openai = r#"{"error":{"message":"This model's maximum context length is 4097 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            classify_status(400, openai, None),
            Error::ContextOverflow { .. }
        ));
        let other = r#"{"error":{"message":"bad field","type":"invalid_request_error"}}"#;
        match classify_status(400, other, None) {
            Error::Http {
                status,
                error_type,
                message,
                ..
            } => {
                assert_eq!(
                    (status, error_type.as_deref(), message.as_str()),
                    (400, Some("invalid_request_error"), "bad field")
                );
            }
            e => panic!("{e:?}"),
        }
    }
}
