//! The OTLP/HTTP exporter's client: panto's own reqwest client, driven on the program's Tokio
//! runtime.
//!
//! The SDK exports from its own background thread, which has no Tokio runtime; a reqwest
//! request needs one. So each request is spawned onto the runtime the export was set up in and
//! the background thread waits for its result. The client comes from
//! `panto_core::http_client_builder` (no redirects: a request carries the collector's headers,
//! which a redirect must not hand to another address), and a collector's answer is read to at
//! most [`MAX_RESPONSE_BYTES`]: its body is untrusted like any other.

use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// How much of a collector's answer is read (an OTLP answer is a few bytes of protobuf).
pub(crate) const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// reqwest on a Tokio runtime.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl RuntimeClient {
    /// A client whose requests (connection, upload and answer) take at most `timeout`.
    pub(crate) fn new(runtime: tokio::runtime::Handle, timeout: Duration) -> Result<RuntimeClient, reqwest::Error> {
        let client = panto_core::http_client_builder().timeout(timeout).build()?;
        Ok(RuntimeClient { client, runtime })
    }
}

/// Why a collector's answer was not read.
#[derive(Debug, thiserror::Error)]
enum ClientError {
    #[error("the collector's answer is longer than {MAX_RESPONSE_BYTES} bytes")]
    TooLong,
    #[error("the export request was dropped: the runtime is shutting down")]
    Dropped,
}

#[async_trait::async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let mut response = client.execute(request).await?;
            let mut answer = Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                *headers = std::mem::take(response.headers_mut());
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(HttpError::from(ClientError::TooLong));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(answer.body(Bytes::from(body))?)
        });
        task.await.map_err(|_| HttpError::from(ClientError::Dropped))?
    }
}
