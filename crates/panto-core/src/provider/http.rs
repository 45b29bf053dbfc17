//! HTTP transport: build the client, send a request, classify a failure. Knows nothing of either
//! API's events.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::ProviderConfig;
use crate::error::{Error, Result};
use crate::identity::strip_userinfo;

/// How many bytes of an unexpected body an error quotes.
pub(crate) const QUOTED_BODY_BYTES: usize = 200;

/// How many bytes of a server-chosen header value (`Location`, `Content-Type`) an error quotes.
const QUOTED_HEADER_BYTES: usize = 300;

/// The most of an error response's body that is read (see `read_error_body`).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The one place panto builds an HTTP client: every client panto makes, for a provider or
/// anything added later (an MCP server over HTTP), starts from this builder. `cargo xtask arch`
/// rejects any other `Client::new()` or `Client::builder()` in library and binary source.
///
/// The client follows no redirect. A request carries the API key, configured headers and the
/// whole conversation; a redirect to another host would hand them all over, so a 3xx answer is
/// returned as it is, and the provider layer turns it into [`Error::Redirect`] naming the
/// `Location`. The connect timeout is 30 seconds; callers may set their own.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    // The one sanctioned construction (see `cargo xtask arch`).
    reqwest::ClientBuilder::new()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .connect_timeout(Duration::from_secs(30))
}

/// `headers` as a header map; [`Error::InvalidHeader`] names a header that is not valid.
pub(crate) fn header_map(headers: &[(String, String)]) -> Result<HeaderMap> {
    let mut map = HeaderMap::with_capacity(headers.len() + 2);
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| Error::InvalidHeader {
            name: name.clone(),
            reason: e.to_string(),
        })?;
        // Name the header, never its value: the value may be the key.
        let value = HeaderValue::from_str(value).map_err(|e| Error::InvalidHeader {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Posts `body` to `url` and returns the response once a success status and headers are in (see
/// [`exchange`]); a success whose body is not an event stream is [`Error::NotEventStream`].
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
    idle_timeout: Duration,
) -> Result<reqwest::Response> {
    let mut map = header_map(headers)?;
    map.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    map.insert(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    let response = exchange(client.post(url).headers(map).body(body), url, idle_timeout).await?;
    expect_event_stream(response, idle_timeout).await
}

/// Sends `request` (to `url`, named in errors without its userinfo) and returns the response
/// once a success status and headers are in: the one HTTP exchange every provider request goes
/// through (turns, compactions and the model listing). A non-success status is read (its first
/// [`MAX_ERROR_BODY`] bytes) and turned into an [`Error`] by [`classify_status`]; a redirect is
/// [`Error::Redirect`] and is not followed.
pub(crate) async fn exchange(
    request: reqwest::RequestBuilder,
    url: &str,
    idle_timeout: Duration,
) -> Result<reqwest::Response> {
    let response = match tokio::time::timeout(idle_timeout, request.send()).await {
        Err(_) => return Err(Error::IdleTimeout(idle_timeout)),
        Ok(Err(e)) => {
            return Err(Error::Connect {
                url: strip_userinfo(url).into_owned(),
                message: describe(&e),
            })
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_redirection() {
        let location = response.headers().get(reqwest::header::LOCATION).map(|v| {
            quote(
                strip_userinfo(&String::from_utf8_lossy(v.as_bytes())).as_bytes(),
                QUOTED_HEADER_BYTES,
            )
        });
        return Err(Error::Redirect {
            status: status.as_u16(),
            location,
        });
    }
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let text = read_error_body(response, idle_timeout).await;
    Err(classify_status(status.as_u16(), &text, retry_after))
}

/// The start of a response body: at most `max` bytes, read within `within` (a body may be huge
/// or never end), and how the reading ended. The one bounded read of server bytes that panto
/// keeps whole: an error response's body, the start of a body that is not an event stream, a
/// model listing.
pub(crate) async fn read_body_start(mut response: reqwest::Response, max: usize, within: Duration) -> BodyStart {
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(within, async {
        while let Some(chunk) = response.chunk().await? {
            let room = max - bytes.len();
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                return Ok(BodyEnd::Cut);
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(BodyEnd::Whole)
    })
    .await;
    let end = match read {
        Ok(Ok(end)) => end,
        Ok(Err(e)) => BodyEnd::Failed(e),
        Err(_) => BodyEnd::TimedOut,
    };
    BodyStart { bytes, end }
}

/// What [`read_body_start`] read.
pub(crate) struct BodyStart {
    /// The bytes read, at most the `max` asked for.
    pub(crate) bytes: Vec<u8>,
    /// Why the reading stopped.
    pub(crate) end: BodyEnd,
}

/// Why [`read_body_start`] stopped reading.
pub(crate) enum BodyEnd {
    /// The body ended: `bytes` is all of it.
    Whole,
    /// The body went on past `max` bytes; the rest was not read.
    Cut,
    /// The connection failed before the body ended.
    Failed(reqwest::Error),
    /// The body did not end within the time given.
    TimedOut,
}

/// An error response's body as text for the error's message: at most [`MAX_ERROR_BODY`] bytes
/// within the idle timeout. A provider's error is a small JSON object; a server that sends more
/// (a proxy's page, or a body that never ends) is cut off there, so that an error costs bounded
/// memory and time, and the message says it was cut.
pub(crate) async fn read_error_body(response: reqwest::Response, idle_timeout: Duration) -> String {
    let BodyStart { bytes, end } = read_body_start(response, MAX_ERROR_BODY, idle_timeout).await;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    match end {
        BodyEnd::Whole => {}
        BodyEnd::Cut => text.push_str(&format!(" … (the body was cut at {MAX_ERROR_BODY} bytes)")),
        BodyEnd::Failed(e) if bytes.is_empty() => return format!("(body unreadable: {})", describe(&e)),
        BodyEnd::Failed(e) => text.push_str(&format!(" … (the rest was unreadable: {})", describe(&e))),
        BodyEnd::TimedOut if bytes.is_empty() => return "(body timed out)".to_owned(),
        BodyEnd::TimedOut => text.push_str(" … (the rest timed out)"),
    }
    text
}

/// `response` if it is an event stream (`Content-Type: text/event-stream`, not compressed), else
/// [`Error::NotEventStream`] quoting the start of its body. A wrong `base_url` (a web page, a
/// JSON API) or a proxy in the way answers 200 with something else; reading it as an event
/// stream would only report a truncated stream, retried for nothing.
async fn expect_event_stream(response: reqwest::Response, idle_timeout: Duration) -> Result<reqwest::Response> {
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let encoding = header(reqwest::header::CONTENT_ENCODING).filter(|e| !e.eq_ignore_ascii_case("identity"));
    let is_event_stream = content_type.as_deref().is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/event-stream"))
    });
    if is_event_stream && encoding.is_none() {
        return Ok(response);
    }
    let mut got = match &content_type {
        Some(ct) => quote(ct.as_bytes(), QUOTED_HEADER_BYTES),
        None => "no Content-Type".to_owned(),
    };
    if let Some(encoding) = &encoding {
        got.push_str(&format!(
            " with Content-Encoding {}",
            quote(encoding.as_bytes(), QUOTED_HEADER_BYTES)
        ));
    }
    // One byte past what is quoted, so that the quote shows it was cut.
    let start = read_body_start(response, QUOTED_BODY_BYTES + 1, idle_timeout).await;
    Err(Error::NotEventStream {
        content_type: got,
        body_start: quote(&start.bytes, QUOTED_BODY_BYTES),
    })
}

/// Untrusted bytes from a server made safe to show in an error: at most `max` bytes, decoded
/// lossily, with control characters, quotes and backslashes escaped (`\n`, `\u{1b}`, …) so
/// that they cannot act on a terminal, and `…` when cut.
pub(crate) fn quote(bytes: &[u8], max: usize) -> String {
    let cut = bytes.len() > max;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]);
    let mut out = text.escape_debug().to_string();
    if cut {
        out.push('…');
    }
    out
}

/// What failed in a reqwest error, as one short line without the request's URL (the error that
/// carries it names the URL once): the innermost cause (`Connection refused (os error 111)`,
/// `invalid peer certificate: UnknownIssuer`), which is what a user can act on; reqwest's own
/// wrapping ("error sending request for url (…): client error (Connect): tcp connect error")
/// repeats the URL and says nothing more.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut innermost: Option<&dyn std::error::Error> = None;
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        innermost = Some(inner);
        source = inner.source();
    }
    match innermost {
        Some(cause) => cause.to_string(),
        None => {
            let top = e.to_string();
            match e.url() {
                Some(url) => top.replace(&format!(" for url ({url})"), ""),
                None => top,
            }
        }
    }
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

/// The HTTP/2 connection window of a provider's shared client: 256 MiB. The HTTP/2 library
/// closes a connection (`ENHANCE_YOUR_CALM`) under every stream on it once the small DATA
/// frames received and not yet read exceed a budget of half this window (a frame of n < 256
/// bytes counted as 256 - n). Thousands of agents whose tasks wait for a CPU leave about twenty
/// deltas of each reply in the connection at once; 256 MiB is room for about 840,000 96-byte
/// deltas, enough for the 10,000-agent fleet (docs/performance-log.md has the run that
/// overran a smaller window). It is a limit, not an allocation: what is buffered is what the
/// agents asked for and have not read yet.
const SHARED_HTTP2_CONNECTION_WINDOW: u32 = 256 << 20;

impl ProviderConfig {
    /// The provider's HTTP client, built by [`http_client_builder`](crate::http_client_builder)
    /// on first use and shared by every clone of this config. A `reqwest::Client` is a handle:
    /// the clone returned shares the connection pool. Keep the agents of one config on one Tokio
    /// runtime: pooled connections are driven by the runtime that opened them.
    ///
    /// Errors: [`Error::HttpClient`](crate::Error::HttpClient) when no client can be built (the
    /// TLS backend cannot initialise).
    pub(crate) fn http_client(&self) -> Result<reqwest::Client> {
        if let Some(client) = self.client.0.get() {
            return Ok(client.clone());
        }
        // Over HTTP/2 the agents sharing this client share one connection, and so its
        // flow-control window. The default (5 MiB) also sizes the budget the HTTP/2 library
        // allows for DATA frames received but not yet read (half the window, each small frame
        // counted at 256 bytes): a provider streaming small deltas to thousands of agents
        // overruns it as soon as the agents read a little behind, and the library then closes
        // the connection under every agent at once. A window sized for many streams keeps
        // their slack.
        let mut builder = http_client_builder().http2_initial_connection_window_size(SHARED_HTTP2_CONNECTION_WINDOW);
        if self.http2_prior_knowledge {
            builder = builder.http2_prior_knowledge();
        }
        let built = builder.build().map_err(|e| Error::HttpClient(e.to_string()))?;
        // Two agents may race to build it; the first one stored wins and both use that one.
        Ok(self.client.0.get_or_init(|| built).clone())
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
