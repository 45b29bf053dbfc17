//! The `panto.store.append` span (docs/observability.md) every store emits around an append,
//! defined once so that every store's span has the same name, fields and error class. A store
//! starts it with [`AppendSpan::start`], records what only it knows (bytes, fsync or commit
//! time) and ends it with [`AppendSpan::finish`].

use std::time::{Duration, Instant};

use tracing::field::Empty;
use tracing::Span;

use crate::Result;

/// The `panto.store.append` span of one append, with the time it started.
#[derive(Debug, Clone)]
pub struct AppendSpan {
    span: Span,
    started: Instant,
}

impl AppendSpan {
    /// The span of one append of `messages` messages to session `id` in a store of kind `kind`
    /// (`jsonl`, `postgres`: the `panto.store.kind` field), a child of the current span (the
    /// turn's when the agent persists during a turn). The duration counts from here.
    pub fn start(kind: &'static str, id: &str, messages: usize) -> AppendSpan {
        let span = tracing::info_span!(
            "panto.store.append",
            panto.store.kind = kind,
            gen_ai.conversation.id = id,
            panto.store.messages = count(messages),
            panto.store.bytes = Empty,
            panto.store.fsync_ms = Empty,
            panto.store.commit_ms = Empty,
            panto.duration_ms = Empty,
            error.type = Empty,
        );
        AppendSpan {
            span,
            started: Instant::now(),
        }
    }

    /// The span, to enter or to hand to a thread that records into it.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Records the bytes the append writes on `span` (this append's, possibly entered on
    /// another thread as the current span).
    pub fn record_bytes(span: &Span, bytes: usize) {
        span.record("panto.store.bytes", count(bytes));
    }

    /// Records how long the append's `fdatasync` took on `span` (a file store's).
    pub fn record_fsync(span: &Span, took: Duration) {
        span.record("panto.store.fsync_ms", millis(took));
    }

    /// Records how long the append took from being handed to the store's writer to its outcome
    /// on `span` (a database store's: waiting for a statement and the commit).
    pub fn record_commit(span: &Span, took: Duration) {
        span.record("panto.store.commit_ms", millis(took));
    }

    /// Records the whole append's duration, and the class of its error if it failed; returns
    /// `result`.
    pub fn finish<T>(&self, result: Result<T>) -> Result<T> {
        if !self.span.is_disabled() {
            self.span.record("panto.duration_ms", millis(self.started.elapsed()));
            if result.is_err() {
                self.span.record("error.type", "store");
            }
        }
        result
    }
}

/// A count as a field value: `i64`, which an OpenTelemetry export carries as an int (a `u64`
/// reaches it as a string).
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn millis(took: Duration) -> f64 {
    took.as_secs_f64() * 1_000.0
}
