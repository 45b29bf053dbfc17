//! A span per HTTP request: `http.request`, with the OpenTelemetry HTTP server conventions'
//! attributes, named `METHOD /route` when exported (the route template, never the session id,
//! so names stay few).

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::field::Empty;
use tracing::Instrument as _;

/// Runs the rest of the request inside its span and records the status it answered with.
pub(crate) async fn traced(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = request.method().as_str().to_owned();
    let span = tracing::info_span!(
        "http.request",
        otel.name = format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method.as_str(),
        http.route = route.as_str(),
        http.response.status_code = Empty,
        error.type = Empty,
    );
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("error.type", status.as_str());
    }
    response
}
