//! Who may use the service: every request must name one of the hosts the service answers to
//! (so a web page whose DNS name was rebound to this machine's address cannot reach it through
//! the user's browser) and carry the service's bearer token (so another local program or user
//! cannot list every session's last prompt or run turns on the operator's provider key).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::Service;

/// The shortest token the service accepts: shorter ones are guessable.
pub const MIN_TOKEN_LEN: usize = 16;

/// The bearer token and the `Host` values the service answers to.
#[derive(Clone)]
pub struct Access {
    token: String,
    hosts: Vec<String>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("token", &"<redacted>")
            .field("hosts", &self.hosts)
            .finish()
    }
}

impl Access {
    /// Requests must carry `Authorization: Bearer TOKEN` and a `Host` header equal (ignoring
    /// case) to one of `hosts` (`127.0.0.1:8080`, `localhost:8080`, `panto.example.com`). The
    /// error says what is wrong with `token` (too short, or not printable ASCII) without it.
    pub fn new(token: String, hosts: Vec<String>) -> Result<Access, String> {
        if token.len() < MIN_TOKEN_LEN {
            return Err(format!("the token must be at least {MIN_TOKEN_LEN} characters"));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be printable ASCII without spaces".to_owned());
        }
        if hosts.is_empty() {
            return Err("at least one host name must be allowed".to_owned());
        }
        let hosts = hosts.into_iter().map(|h| h.trim().to_ascii_lowercase()).collect();
        Ok(Access { token, hosts })
    }

    /// What is wrong with a request's headers, if anything: a `Host` the service does not answer
    /// to (421), or a missing or wrong bearer token (401).
    fn refusal(&self, headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if !host.is_some_and(|host| self.hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host))) {
            return Some((
                StatusCode::MISDIRECTED_REQUEST,
                "this service does not answer to that Host (PANTO_SERVICE_HOSTS lists the names it does)",
            ));
        }
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match token {
            Some(token) if same_secret(token.as_bytes(), self.token.as_bytes()) => None,
            Some(_) => Some((StatusCode::UNAUTHORIZED, "the bearer token is wrong")),
            None => Some((
                StatusCode::UNAUTHORIZED,
                "send the service's token as `Authorization: Bearer TOKEN`",
            )),
        }
    }
}

/// Whether `given` equals `expected`, in time that does not depend on where they differ (only
/// on the lengths), so the token cannot be found a byte at a time.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The middleware: refuses a request the service's [`Access`] does not let in, before any
/// handler runs.
pub(crate) async fn guard(State(service): State<Arc<Service>>, request: Request, next: Next) -> Response {
    match service.access.refusal(request.headers()) {
        None => next.run(request).await,
        Some((status, message)) => {
            let mut response = (status, Json(json!({ "error": message }))).into_response();
            if status == StatusCode::UNAUTHORIZED {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: Option<&str>, authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        if let Some(authorization) = authorization {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(authorization).unwrap());
        }
        headers
    }

    #[test]
    fn only_a_known_host_with_the_token_gets_in() {
        let access = Access::new(
            "0123456789abcdef".into(),
            vec!["127.0.0.1:8080".into(), "LocalHost:8080".into()],
        )
        .unwrap();
        let ok = "Bearer 0123456789abcdef";
        assert_eq!(access.refusal(&headers(Some("127.0.0.1:8080"), Some(ok))), None);
        assert_eq!(access.refusal(&headers(Some("localhost:8080"), Some(ok))), None);
        let status = |h: HeaderMap| access.refusal(&h).map(|(s, _)| s);
        // A rebound DNS name reaches the same address with another Host.
        assert_eq!(
            status(headers(Some("evil.example:8080"), Some(ok))),
            Some(StatusCode::MISDIRECTED_REQUEST)
        );
        assert_eq!(status(headers(None, Some(ok))), Some(StatusCode::MISDIRECTED_REQUEST));
        assert_eq!(
            status(headers(Some("127.0.0.1:8080"), None)),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(headers(Some("127.0.0.1:8080"), Some("Bearer 0123456789abcdeX"))),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            status(headers(Some("127.0.0.1:8080"), Some("Basic 0123456789abcdef"))),
            Some(StatusCode::UNAUTHORIZED)
        );
    }

    #[test]
    fn a_weak_token_is_refused_without_being_shown() {
        let e = Access::new("short".into(), vec!["h".into()]).unwrap_err();
        assert!(e.contains("at least 16") && !e.contains("short"), "{e}");
        let e = Access::new("with a space in it ok".into(), vec!["h".into()]).unwrap_err();
        assert!(!e.contains("space in it"), "{e}");
    }
}
