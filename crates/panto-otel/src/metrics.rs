//! Metrics derived from panto's spans: a tracing Layer that records each span's fields and,
//! when the span closes, adds to the instruments its kind calls for.
//!
//! Deriving them from the spans keeps one source of truth: panto-core describes a request once
//! (as a span with its model, tokens and outcome), and the trace and the metrics agree by
//! construction. Which spans and fields count is in `names.rs`.

use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::KeyValue;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::names::*;

/// A tracing [`Layer`] that records panto's metrics when its spans close: turns, provider
/// requests (with the GenAI client metrics `gen_ai.client.token.usage` and
/// `gen_ai.client.operation.duration`), tokens by kind, tool calls, retries, compactions and
/// store append latency (the list is in docs/observability.md).
#[derive(Debug, Clone)]
pub struct MetricsLayer {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    turns: Counter<u64>,
    turn_duration: Histogram<f64>,
    requests: Counter<u64>,
    tokens: Counter<u64>,
    tool_calls: Counter<u64>,
    tool_duration: Histogram<f64>,
    retries: Counter<u64>,
    overflows: Counter<u64>,
    compactions: Counter<u64>,
    store_append_duration: Histogram<f64>,
}

impl MetricsLayer {
    /// A layer recording into instruments of `meter`.
    pub fn new(meter: &Meter) -> MetricsLayer {
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .build()
        };
        let counter = |name: &'static str, unit: &'static str, description: &'static str| {
            meter
                .u64_counter(name)
                .with_unit(unit)
                .with_description(description)
                .build()
        };
        MetricsLayer {
            token_usage: meter
                .u64_histogram(M_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Tokens used per provider request, by gen_ai.token.type (input, output)")
                .with_boundaries(vec![
                    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
                ])
                .build(),
            operation_duration: seconds(M_OPERATION_DURATION, "Duration of a provider request, retries excluded"),
            turns: counter(M_TURNS, "{turn}", "Turns run"),
            turn_duration: seconds(M_TURN_DURATION, "Duration of a turn"),
            requests: counter(M_REQUESTS, "{request}", "Provider requests sent, by model and outcome"),
            tokens: counter(
                M_TOKENS,
                "{token}",
                "Tokens by kind: input, output, cache_read, cache_write",
            ),
            tool_calls: counter(M_TOOL_CALLS, "{call}", "Tool calls, by tool and outcome"),
            tool_duration: seconds(M_TOOL_DURATION, "Duration of a tool call"),
            retries: counter(M_RETRIES, "{retry}", "Provider requests retried, by reason"),
            overflows: counter(
                M_OVERFLOWS,
                "{overflow}",
                "Provider requests that exceeded the context window",
            ),
            compactions: counter(M_COMPACTIONS, "{compaction}", "Conversation compactions"),
            store_append_duration: seconds(M_STORE_APPEND_DURATION, "Duration of a session store append"),
        }
    }

    fn span_closed(&self, name: &str, fields: &Fields, seconds: f64) {
        let kind = classify(name, fields);
        match kind {
            Kind::Turn => {
                let attrs = fields.attributes(&[MODEL, PROVIDER, TURN_OUTCOME, ERROR_TYPE]);
                self.turns.add(1, &attrs);
                self.turn_duration.record(seconds, &attrs);
            }
            Kind::Request => {
                let mut attrs = fields.attributes(&[MODEL, PROVIDER, PURPOSE, ERROR_TYPE]);
                attrs.push(KeyValue::new(OPERATION, OP_REQUEST));
                self.requests.add(1, &attrs);
                self.operation_duration.record(seconds, &attrs);
                for (field, kind, standard) in [
                    (INPUT_TOKENS, "input", true),
                    (OUTPUT_TOKENS, "output", true),
                    (CACHE_READ_TOKENS, "cache_read", false),
                    (CACHE_WRITE_TOKENS, "cache_write", false),
                ] {
                    let Some(count) = fields.u64(field) else { continue };
                    let mut with_kind = attrs.clone();
                    with_kind.push(KeyValue::new("gen_ai.token.type", kind));
                    self.tokens.add(count, &with_kind);
                    // The GenAI histogram knows input and output only.
                    if standard {
                        self.token_usage.record(count, &with_kind);
                    }
                }
            }
            Kind::Tool => {
                let mut attrs = fields.attributes(&[TOOL_NAME, ERROR_TYPE]);
                let failed = fields.bool(TOOL_IS_ERROR).unwrap_or(false) || fields.has(ERROR_TYPE);
                attrs.push(KeyValue::new(TOOL_IS_ERROR, failed));
                self.tool_calls.add(1, &attrs);
                self.tool_duration.record(seconds, &attrs);
            }
            Kind::Compaction => self.compactions.add(1, &fields.attributes(&[ERROR_TYPE])),
            Kind::StoreAppend => self
                .store_append_duration
                .record(seconds, &fields.attributes(&[STORE_KIND, ERROR_TYPE])),
            Kind::Other => {}
        }
    }
}

/// What a span is, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Turn,
    Request,
    Tool,
    Compaction,
    StoreAppend,
    Other,
}

fn classify(name: &str, fields: &Fields) -> Kind {
    let operation = fields.str(OPERATION).unwrap_or("");
    let first_word = name.split(' ').next().unwrap_or("");
    match (operation, first_word) {
        (OP_TURN, _) | (_, OP_TURN) => Kind::Turn,
        (OP_REQUEST, _) | (_, OP_REQUEST) => Kind::Request,
        (OP_TOOL, _) | (_, OP_TOOL) => Kind::Tool,
        (_, SPAN_COMPACTION) => Kind::Compaction,
        (_, name) if name.starts_with(SPAN_STORE_APPEND) => Kind::StoreAppend,
        _ => Kind::Other,
    }
}

/// A field's value, as a span recorded it.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(String),
}

/// The fields a span has recorded so far.
#[derive(Debug, Default)]
struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    fn set(&mut self, name: &'static str, value: Value) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => *old = value,
            None => self.0.push((name, value)),
        }
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn str(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    fn u64(&self, name: &str) -> Option<u64> {
        match *self.get(name)? {
            Value::U64(n) => Some(n),
            Value::I64(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    fn bool(&self, name: &str) -> Option<bool> {
        match *self.get(name)? {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The named fields that are set, as metric attributes.
    fn attributes(&self, names: &[&'static str]) -> Vec<KeyValue> {
        names
            .iter()
            .filter_map(|name| {
                let value = match self.get(name)? {
                    Value::U64(n) => opentelemetry::Value::I64(i64::try_from(*n).unwrap_or(i64::MAX)),
                    Value::I64(n) => opentelemetry::Value::I64(*n),
                    Value::F64(n) => opentelemetry::Value::F64(*n),
                    Value::Bool(b) => opentelemetry::Value::Bool(*b),
                    Value::Str(s) => opentelemetry::Value::String(s.clone().into()),
                };
                Some(KeyValue::new(*name, value))
            })
            .collect()
    }
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field.name(), Value::U64(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), Value::I64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field.name(), Value::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), Value::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), Value::Str(value.to_owned()));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.set(field.name(), Value::Str(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // Content fields (`log_content`) and messages are long and never become attributes.
        if !field.name().starts_with("gen_ai.") && field.name() != "message" {
            self.set(field.name(), Value::Str(format!("{value:?}")));
        }
    }
}

/// What the layer keeps in a span's extensions.
#[derive(Debug)]
struct Timed {
    started: Instant,
    fields: Fields,
}

impl<S> Layer<S> for MetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(Timed {
            started: Instant::now(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(timed) = extensions.get_mut::<Timed>() {
            values.record(&mut timed.fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        // Only the class of the error becomes an attribute: the reason's text is unbounded.
        match event.metadata().name() {
            EVENT_RETRY => self.retries.add(1, &fields.attributes(&[ERROR_TYPE])),
            EVENT_OVERFLOW => self.overflows.add(1, &fields.attributes(&[OVERFLOW_ACTION])),
            _ => {}
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let extensions = span.extensions();
        let Some(timed) = extensions.get::<Timed>() else { return };
        self.span_closed(span.name(), &timed.fields, timed.started.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&'static str, Value)]) -> Fields {
        let mut fields = Fields::default();
        for (name, value) in pairs {
            fields.set(name, value.clone());
        }
        fields
    }

    #[test]
    fn spans_are_classified_by_operation_or_name() {
        let chat = fields(&[(OPERATION, Value::Str("chat".into()))]);
        assert_eq!(classify("anything", &chat), Kind::Request);
        assert_eq!(classify("chat claude-x", &Fields::default()), Kind::Request);
        assert_eq!(classify("execute_tool read", &Fields::default()), Kind::Tool);
        assert_eq!(classify("invoke_agent", &Fields::default()), Kind::Turn);
        assert_eq!(classify("panto.store.append", &Fields::default()), Kind::StoreAppend);
        assert_eq!(classify("panto.compaction", &Fields::default()), Kind::Compaction);
        assert_eq!(classify("chatty", &Fields::default()), Kind::Other);
    }

    #[test]
    fn only_the_named_fields_become_attributes() {
        let f = fields(&[
            (MODEL, Value::Str("m".into())),
            ("gen_ai.prompt", Value::Str("secret content".into())),
        ]);
        assert_eq!(f.attributes(&[MODEL, PROVIDER]), vec![KeyValue::new(MODEL, "m")]);
    }
}
