//! An example service running many panto agents in one process, on one PostgreSQL database
//! shared with other instances of itself.
//!
//! Endpoints (JSON in and out, errors as `{"error": "..."}`):
//!
//! | method and path | does |
//! | --- | --- |
//! | `POST /sessions` | starts a session, live here from the start; `201 {"id": ...}` |
//! | `GET /sessions` | every session (not yet stored ones started here first), and whether it is live here |
//! | `POST /sessions/{id}/resume` | makes a stored session live here (takes its writer's lock) |
//! | `POST /sessions/{id}/prompt` `{"text": ...}` | runs a turn; its events as server-sent events |
//! | `DELETE /sessions/{id}` | lets go of a session live here, so another instance can take it |
//!
//! Access: every request must carry the service's bearer token (`Authorization: Bearer TOKEN`,
//! else `401`) and a `Host` header naming one of the hosts it answers to (else `421`), checked
//! before any handler runs ([`Access`]). At most `max_live` sessions are live in one instance
//! (each holds a PostgreSQL advisory lock and an agent in memory); one more is `503` until one is
//! released. What the example does not do: TLS (put it behind a proxy that terminates TLS, or
//! keep it on loopback), per-client identities (one token for everyone: any holder reaches every
//! session), rate limits, or limits on a prompt's size beyond the provider's.
//!
//! Errors: 400 for a malformed session id or a prompt whose text is empty; 400, 415 or 422 for
//! a body that is not the JSON asked for (naming what is wrong); 404 for an unknown session; 409
//! as below, or while a turn runs on the session; 502 when the provider failed the turn before
//! its first event.
//!
//! One writer per session, across instances: a session is live in at most one instance, the one
//! holding its advisory lock in PostgreSQL (taken by `resume`, or by `POST /sessions` for the
//! session it starts; released when its agent is dropped). A request that needs to write a session
//! another instance holds gets `409 Conflict` saying so. A prompt to a stored session that is not
//! live here resumes it first. Each server-sent event's data is one event in panto's event JSON
//! (docs/events.md); a turn that fails after it started ends with an event named `error`.
//!
//! Each HTTP request runs in a `tracing` span (`http.request`, named `METHOD /route` for
//! OpenTelemetry, with the GenAI turn spans of a prompt under it), exported over OTLP when the
//! binary is started with `OTEL_EXPORTER_OTLP_ENDPOINT` (docs/observability.md).
//!
//! Every agent is made from one [`Config`], so all of them share its provider's HTTP client (one
//! connection pool), and an idle session costs its conversation and no descriptor of its own.

mod access;
mod request_span;
mod turn;

pub use access::{Access, MIN_TOKEN_LEN};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use panto_core::{Agent, Config, Error, Session, SessionStore};
use panto_store_postgres::PostgresStore;
use serde_json::{json, Value};

/// A live agent: the session is written by this instance while it is in the map.
type LiveAgent = Arc<tokio::sync::Mutex<Agent>>;

/// What the handlers share.
#[derive(Debug)]
pub struct Service {
    store: Arc<PostgresStore>,
    config: Config,
    access: Access,
    /// The most sessions live here at once.
    max_live: usize,
    live: Mutex<HashMap<String, LiveAgent>>,
    /// Serialises making sessions live, so two requests for one session do not both build an
    /// agent for it (dropping the second would release the lock the first holds).
    activating: tokio::sync::Mutex<()>,
}

impl Service {
    /// A service whose agents use `config` and write to `store`, letting in the requests
    /// `access` allows, with at most `max_live` sessions live at once.
    pub fn new(store: Arc<PostgresStore>, config: Config, access: Access, max_live: usize) -> Arc<Self> {
        Arc::new(Service {
            store,
            config,
            access,
            max_live,
            live: Mutex::new(HashMap::new()),
            activating: tokio::sync::Mutex::new(()),
        })
    }

    fn live(&self) -> MutexGuard<'_, HashMap<String, LiveAgent>> {
        // The map is plain data that a panic cannot leave half-updated.
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses one more live session when `max_live` are live (each holds a lock in PostgreSQL,
    /// whose lock table is shared by the whole database server).
    fn room_for_one_more(&self) -> Result<(), ApiError> {
        if self.live().len() < self.max_live {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} sessions are live in this instance, its limit: release one (DELETE /sessions/ID) or use another instance",
                self.max_live
            ),
        ))
    }

    /// The agent of session `id`, made live here if it is not yet: its lock taken, its
    /// conversation loaded.
    async fn agent(&self, id: &str) -> Result<LiveAgent, ApiError> {
        if let Some(agent) = self.live().get(id).cloned() {
            return Ok(agent);
        }
        let _activating = self.activating.lock().await;
        if let Some(agent) = self.live().get(id).cloned() {
            return Ok(agent);
        }
        self.room_for_one_more()?;
        self.store.claim(id).await?;
        let session = match Session::resolve(self.store.clone(), id).await {
            Ok(Some(session)) if session.id() == id => session,
            Ok(_) => {
                self.store.release(id).await?;
                return Err(ApiError::not_found(id));
            }
            Err(e) => {
                self.store.release(id).await?;
                return Err(e.into());
            }
        };
        // From here the agent owns the lock: dropping it (on any error too) releases it.
        let agent = Arc::new(tokio::sync::Mutex::new(
            Agent::resume(self.config.clone(), session).await?,
        ));
        self.live().insert(id.to_owned(), agent.clone());
        Ok(agent)
    }

    /// Forgets session `id`'s agent, which releases its lock once no turn uses it any more.
    fn drop_agent(&self, id: &str) -> bool {
        self.live().remove(id).is_some()
    }
}

/// The routes of the service.
pub fn router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/sessions", post(start).get(list))
        .route("/sessions/{id}/resume", post(resume))
        .route("/sessions/{id}/prompt", post(turn::prompt))
        .route("/sessions/{id}", axum::routing::delete(release))
        .route_layer(axum::middleware::from_fn_with_state(service.clone(), access::guard))
        .route_layer(axum::middleware::from_fn(request_span::traced))
        .with_state(service)
}

async fn start(State(service): State<Arc<Service>>) -> Result<Response, ApiError> {
    // Under the activation lock, so two requests cannot both take the last place.
    let _activating = service.activating.lock().await;
    service.room_for_one_more()?;
    let agent = Agent::new(service.config.clone(), Session::create(service.store.clone()), None)?;
    let id = agent.session_id().to_owned();
    // The session is this instance's from its start: another instance asked for it before its
    // first turn is stored answers 409, as for any session live here. (Dropping the agent
    // releases the claim even if it never wrote.)
    service.store.claim(&id).await?;
    service
        .live()
        .insert(id.clone(), Arc::new(tokio::sync::Mutex::new(agent)));
    Ok((StatusCode::CREATED, Json(json!({ "id": id }))).into_response())
}

async fn list(State(service): State<Arc<Service>>) -> Result<Json<Value>, ApiError> {
    let sessions = service.store.list().await?;
    let live = service.live();
    // Sessions started here and not yet stored (no turn finished its first write) come first:
    // they are the newest.
    let mut unstored: Vec<&String> = live
        .keys()
        .filter(|id| !sessions.iter().any(|s| &s.id == *id))
        .collect();
    unstored.sort_unstable_by(|a, b| b.cmp(a));
    let unstored = unstored.into_iter().map(|id| {
        json!({
            "id": id,
            "message_count": 0,
            "last_user_message": null,
            "live_here": true,
        })
    });
    let stored = sessions.iter().map(|s| {
        json!({
            "id": s.id,
            "message_count": s.message_count,
            "last_user_message": s.last_user_message,
            "live_here": live.contains_key(&s.id),
        })
    });
    Ok(Json(Value::Array(unstored.chain(stored).collect())))
}

async fn resume(State(service): State<Arc<Service>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let agent = service.agent(&id).await?;
    let messages = match agent.try_lock() {
        Ok(agent) => Some(agent.conversation().messages.len()),
        // A turn is running: the session is live here, which is what was asked.
        Err(_) => None,
    };
    Ok(Json(json!({ "id": id, "messages": messages })))
}

async fn release(State(service): State<Arc<Service>>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    if service.drop_agent(&id) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("session {id} is not live in this instance"),
        ))
    }
}

/// An error answer: a status and a message.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: String) -> Self {
        ApiError { status, message }
    }

    fn not_found(id: &str) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, format!("no session {id}"))
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::SessionInUse { id } => {
                return ApiError::new(
                    StatusCode::CONFLICT,
                    format!("session {id} is live in another instance, which writes it; send the request there, or retry once that instance has released it"),
                )
            }
            Error::SessionNotFound(_) => StatusCode::NOT_FOUND,
            Error::InvalidSessionId(_) | Error::AmbiguousSession { .. } => StatusCode::BAD_REQUEST,
            // The provider failed the turn (after the agent's retries): the service is a gateway
            // to it, so the answer says the fault is upstream, not here.
            _ if e.is_provider_failure() => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

/// A request body that is not the JSON asked for, answered in the service's error form (axum's
/// own answer is plain text).
impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        ApiError::new(rejection.status(), rejection.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
}
