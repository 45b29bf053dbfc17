//! Counts back to numbers on the way out.
//!
//! tracing-opentelemetry records a `u64` field (the type panto's counters have: tokens, bytes,
//! attempts) as a string, since OpenTelemetry has only signed integers; a collector would then
//! see `gen_ai.usage.input_tokens = "120"`, which the GenAI conventions type as an int and
//! dashboards cannot sum. This processor, in front of the batch exporter, turns such a string
//! back into an int, for the attributes whose names say they hold a count or a measure.

use std::time::Duration;

use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use opentelemetry_sdk::Resource;

/// A span processor that fixes numeric attributes, then hands the span to `inner`.
#[derive(Debug)]
pub(crate) struct NumericAttributes<P> {
    inner: P,
}

impl<P> NumericAttributes<P> {
    pub fn new(inner: P) -> Self {
        NumericAttributes { inner }
    }
}

/// Whether an attribute named `key` holds a number by panto's naming (and the conventions').
fn numeric(key: &str) -> bool {
    const SUFFIXES: [&str; 7] = [
        "_tokens",
        "_ms",
        "_bytes",
        ".attempt",
        ".status_code",
        ".messages_kept",
        ".messages_summarized",
    ];
    key.starts_with("gen_ai.usage.")
        || SUFFIXES.iter().any(|s| key.ends_with(s))
        || key.ends_with(".tokens_before")
        || key.ends_with(".tokens_after")
}

fn fix(attributes: &mut [KeyValue]) {
    for kv in attributes {
        if let Value::String(text) = &kv.value {
            if numeric(kv.key.as_str()) {
                if let Ok(n) = text.as_str().parse::<i64>() {
                    kv.value = Value::I64(n);
                }
            }
        }
    }
}

impl<P: SpanProcessor> SpanProcessor for NumericAttributes<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        fix(&mut span.attributes);
        for event in span.events.events.iter_mut() {
            fix(&mut event.attributes);
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_become_ints_and_other_strings_stay() {
        let mut attributes = vec![
            KeyValue::new("gen_ai.usage.input_tokens", "120"),
            KeyValue::new("panto.duration_ms", "12"),
            KeyValue::new("gen_ai.request.model", "4096"),
            KeyValue::new("panto.tool.result_bytes", "not a number"),
        ];
        fix(&mut attributes);
        assert_eq!(attributes[0].value, Value::I64(120));
        assert_eq!(attributes[1].value, Value::I64(12));
        assert_eq!(attributes[2].value, Value::String("4096".into()));
        assert_eq!(attributes[3].value, Value::String("not a number".into()));
    }
}
