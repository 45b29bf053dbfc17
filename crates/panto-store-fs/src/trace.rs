//! The `panto.store.append` span of each append (docs/observability.md): how many messages and
//! bytes, how long the fsync and the whole append took. The store only emits it.

use std::time::{Duration, Instant};

use panto_core::Result;
use tracing::field::Empty;
use tracing::Span;

/// The span of one append of `messages` messages to session `id`, a child of the current span
/// (the turn's when the agent persists during a turn).
pub(crate) fn append_span(id: &str, messages: usize) -> Span {
    tracing::info_span!(
        "panto.store.append",
        panto.store.kind = "jsonl",
        gen_ai.conversation.id = id,
        panto.store.messages = count(messages),
        panto.store.bytes = Empty,
        panto.store.fsync_ms = Empty,
        panto.duration_ms = Empty,
        error.type = Empty,
    )
}

/// A count as a field value: `i64`, which an OpenTelemetry export carries as an int (a `u64`
/// reaches it as a string).
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Records the bytes of the batch being written on the current span (the append's, entered by
/// the thread that writes).
pub(crate) fn record_bytes(bytes: usize) {
    Span::current().record("panto.store.bytes", count(bytes));
}

/// Records how long the batch's fsync took on the current span.
pub(crate) fn record_fsync(took: Duration) {
    Span::current().record("panto.store.fsync_ms", took.as_secs_f64() * 1_000.0);
}

/// Records the append's duration, and the class of its error if it failed; returns `result`.
pub(crate) fn finished<T>(span: &Span, started: Instant, result: Result<T>) -> Result<T> {
    if !span.is_disabled() {
        span.record("panto.duration_ms", started.elapsed().as_secs_f64() * 1_000.0);
        if result.is_err() {
            span.record("error.type", "store");
        }
    }
    result
}
