//! The `panto.store.append` span of each append (docs/observability.md), as the file store
//! emits it: messages, bytes, and how long the transaction took to commit (PostgreSQL's
//! equivalent of the file store's fsync). The store only emits it.

use std::time::Instant;

use tracing::field::Empty;
use tracing::Span;

use crate::writer::Staged;

/// The span of committing `staged` to session `id`, a child of the current span.
pub(crate) fn append_span(id: &str, staged: &Staged<'_>) -> Span {
    let span = tracing::info_span!(
        "panto.store.append",
        panto.store.kind = "postgres",
        gen_ai.conversation.id = id,
        panto.store.messages = staged.rows.len() as u64,
        panto.store.bytes = Empty,
        panto.store.commit_ms = Empty,
        panto.duration_ms = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        // The message, usage and wire columns: what the batch adds besides ids and tools.
        let bytes: usize = staged
            .rows
            .iter()
            .map(|row| {
                row.message.as_ref().or(row.message_raw.as_ref()).map_or(0, String::len)
                    + row.usage.as_ref().map_or(0, String::len)
            })
            .sum();
        span.record("panto.store.bytes", bytes as u64);
    }
    span
}

/// Records how long the commit took, and `error.type` when it failed.
pub(crate) fn finished(span: &Span, started: Instant, committed: bool) {
    if span.is_disabled() {
        return;
    }
    let took = started.elapsed().as_secs_f64() * 1_000.0;
    span.record("panto.store.commit_ms", took);
    span.record("panto.duration_ms", took);
    if !committed {
        span.record("error.type", "store");
    }
}
