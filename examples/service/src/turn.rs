//! `POST /sessions/{id}/prompt`: one turn, its events streamed as server-sent events.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, StreamExt};
use panto_core::{Error, Event, UserMessage};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use crate::{ApiError, Service};

/// The body of a prompt.
#[derive(Debug, Deserialize)]
pub(crate) struct Prompt {
    text: String,
}

/// How many events may wait for a slow client before the turn waits for it.
const BUFFERED_EVENTS: usize = 64;

pub(crate) async fn prompt(
    State(service): State<Arc<Service>>,
    Path(id): Path<String>,
    prompt: Result<Json<Prompt>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(prompt) = prompt?;
    // Refused before the session is touched: an empty prompt would be written to the session
    // and sent, and the provider's refusal of it would come back as a failed turn.
    if prompt.text.trim().is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the prompt's `text` is empty".to_owned(),
        ));
    }
    let agent = service.agent(&id).await?;
    let Ok(mut agent) = agent.try_lock_owned() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("a turn is already running on session {id}"),
        ));
    };
    let (events, mut received) = mpsc::channel::<Result<Event, Error>>(BUFFERED_EVENTS);
    // The turn runs on its own task, so that it is driven while the response streams. A client
    // that goes away closes the channel; the turn's stream is then dropped, which cancels it.
    // The turn's spans are children of this request's span, on the task too.
    let request_span = tracing::Span::current();
    let turn = async move {
        let mut stream = agent.run(UserMessage::text(prompt.text));
        loop {
            let next = stream.next().await;
            let end = !matches!(next, Ok(Some(_)));
            let item = match next {
                Ok(Some(event)) => Ok(event),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            if events.send(item).await.is_err() || end {
                break;
            }
        }
    };
    tokio::spawn(tracing::Instrument::instrument(turn, request_span));

    // The first outcome decides the status: a session another instance writes is refused with
    // 409 before any event is sent (its first write, the user message, is what finds out).
    let first = match received.recv().await {
        Some(Ok(event)) => event,
        Some(Err(e)) => {
            if matches!(e, Error::SessionInUse { .. }) {
                // This instance cannot write the session: it is not live here.
                service.drop_agent(&id);
            }
            return Err(e.into());
        }
        None => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the turn on session {id} ended without an event"),
            ))
        }
    };
    let rest = stream::unfold(received, |mut received| async move {
        received.recv().await.map(|item| (item, received))
    });
    let events = stream::once(async move { Ok(first) })
        .chain(rest)
        .map(|item| Ok::<_, Infallible>(sse_event(item)));
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}

/// One server-sent event: an event's JSON as its data, or an `error` event.
fn sse_event(item: Result<Event, Error>) -> SseEvent {
    match item {
        Ok(event) => match serde_json::to_string(&event) {
            Ok(json) => SseEvent::default().data(json),
            Err(e) => error_event(format!("the event could not be written as JSON: {e}")),
        },
        Err(e) => error_event(e.to_string()),
    }
}

fn error_event(message: String) -> SseEvent {
    SseEvent::default()
        .event("error")
        .data(json!({ "error": message }).to_string())
}
