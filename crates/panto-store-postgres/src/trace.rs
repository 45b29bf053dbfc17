//! The `panto.store.append` span of each append (docs/observability.md), as the file store
//! emits it: messages, bytes, how long the transaction took to commit (PostgreSQL's equivalent
//! of the file store's fsync) and how long the whole append took, from taking the session's lock
//! and rebuilding its state to the commit. The store only emits it.

use std::time::{Duration, Instant};

use panto_core::Result;
use tracing::field::Empty;
use tracing::Span;

use crate::writer::Staged;

/// The span of one append of `messages` messages to session `id`, a child of the current span
/// (the turn's when the agent persists during a turn).
pub(crate) fn append_span(id: &str, messages: usize) -> Span {
    tracing::info_span!(
        "panto.store.append",
        panto.store.kind = "postgres",
        gen_ai.conversation.id = id,
        panto.store.messages = count(messages),
        panto.store.bytes = Empty,
        panto.store.commit_ms = Empty,
        panto.duration_ms = Empty,
        error.type = Empty,
    )
}

/// A count as a field value: `i64`, which an OpenTelemetry export carries as an int (a `u64`
/// reaches it as a string).
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Records the bytes `staged` writes: the message, usage and wire columns, what the batch adds
/// besides ids and tools.
pub(crate) fn record_bytes(span: &Span, staged: &Staged<'_>) {
    if span.is_disabled() {
        return;
    }
    let bytes: usize = staged
        .rows
        .iter()
        .map(|row| {
            row.message.as_ref().or(row.message_raw.as_ref()).map_or(0, String::len)
                + row.usage.as_ref().map_or(0, String::len)
        })
        .sum();
    span.record("panto.store.bytes", count(bytes));
}

/// Records how long the append took from being handed to the store's writer to its outcome:
/// waiting for a statement, and the statement that wrote it (commit included).
pub(crate) fn record_commit(span: &Span, took: Duration) {
    span.record("panto.store.commit_ms", took.as_secs_f64() * 1_000.0);
}

/// Records the whole append's duration, and the class of its error if it failed; returns
/// `result`.
pub(crate) fn finished<T>(span: &Span, started: Instant, result: Result<T>) -> Result<T> {
    if !span.is_disabled() {
        span.record("panto.duration_ms", started.elapsed().as_secs_f64() * 1_000.0);
        if result.is_err() {
            span.record("error.type", "store");
        }
    }
    result
}
