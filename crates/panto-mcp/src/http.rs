//! rmcp's streamable HTTP client trait over the workspace's reqwest 0.12.
//!
//! rmcp ships this client for reqwest 0.13 only; building a second reqwest (and its TLS stack)
//! into every panto binary for it would cost more than these few requests: POST a message
//! (answered by JSON, an event stream, or 202), GET the server's event stream, DELETE the
//! session. Bodies are bounded by the limits rmcp passes, like its own client does.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::{BoxStream, StreamExt};
use http::{HeaderName, HeaderValue};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

/// The HTTP client of streamable HTTP servers.
#[derive(Clone, Debug)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
}

/// A failure of the HTTP client itself (connecting, TLS, reading).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HttpError(String);

impl From<reqwest::Error> for HttpError {
    fn from(e: reqwest::Error) -> Self {
        // Without the URL: it may carry credentials in its query.
        HttpError(e.without_url().to_string())
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<HttpError>>;

fn client_error(e: reqwest::Error) -> StreamableHttpError<HttpError> {
    StreamableHttpError::Client(HttpError::from(e))
}

impl HttpClient {
    /// panto's HTTP client (rustls, panto's timeouts); no overall timeout, since a response
    /// stream lives as long as its tool call.
    pub(crate) fn new() -> Result<HttpClient, reqwest::Error> {
        let client = panto_core::http_client_builder().build()?;
        Ok(HttpClient { client })
    }

    fn request(
        &self,
        builder: reqwest::RequestBuilder,
        session_id: Option<&str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut builder = builder;
        for (name, value) in custom_headers {
            builder = builder.header(name, value);
        }
        if let Some(token) = auth_token {
            builder = builder.bearer_auth(token);
        }
        if let Some(session_id) = session_id {
            builder = builder.header(HEADER_SESSION_ID, session_id);
        }
        builder
    }
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
}

fn status_error(status: StatusCode) -> StreamableHttpError<HttpError> {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP status {status}")))
}

/// The response's events, each at most `max_event` bytes of raw body apart.
fn events(response: reqwest::Response, max_event: usize) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut since_event = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(HttpError::from(e)))?;
        // A blank line ends an event; a body that runs on without one is refused rather than
        // buffered without bound.
        let blank_line = chunk
            .windows(2)
            .rposition(|w| w == b"\n\n")
            .max(chunk.windows(4).rposition(|w| w == b"\r\n\r\n"));
        match blank_line {
            Some(end) => since_event = chunk.len() - end,
            None => since_event += chunk.len(),
        }
        if since_event > max_event {
            return Err(std::io::Error::other(format!("an event exceeded {max_event} bytes")));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// Reads at most `max` bytes of body.
async fn bounded_body(mut response: reqwest::Response, max: usize) -> HttpResult<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(client_error)? {
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl StreamableHttpClient for HttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = serde_json::to_vec(&message)?;
        let builder = self
            .client
            .post(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"))
            .header(CONTENT_TYPE, JSON_MIME_TYPE)
            .body(body);
        let response = self
            .request(builder, session_id.as_deref(), auth_token, custom_headers)
            .send()
            .await
            .map_err(client_error)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            return Err(status_error(status));
        }
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        match content_type(&response).as_deref() {
            Some(EVENT_STREAM_MIME_TYPE) => Ok(StreamableHttpPostResponse::Sse(
                events(response, limits.max_sse_event_size),
                new_session,
            )),
            Some(JSON_MIME_TYPE) => {
                let body = bounded_body(response, limits.max_json_response_size).await?;
                let message: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
                Ok(StreamableHttpPostResponse::Json(message, new_session))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_owned))),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let builder = self.client.delete(uri.as_ref());
        let response = self
            .request(builder, Some(&session_id), auth_token, custom_headers)
            .send()
            .await
            .map_err(client_error)?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED || status.is_success() {
            return Ok(());
        }
        Err(status_error(status))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut builder = self
            .client
            .get(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"));
        if let Some(id) = last_event_id {
            builder = builder.header(HEADER_LAST_EVENT_ID, id);
        }
        let response = self
            .request(builder, session_id.as_deref(), auth_token, custom_headers)
            .send()
            .await
            .map_err(client_error)?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            return Err(status_error(status));
        }
        if content_type(&response).as_deref() != Some(EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(content_type(&response)));
        }
        Ok(events(
            response,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        ))
    }
}
