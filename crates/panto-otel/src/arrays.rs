//! Attributes the GenAI conventions type as string arrays.
//!
//! A `tracing` field holds one value, never an array, so panto-core records
//! `gen_ai.response.finish_reasons` as the one stop reason that ended a request or a turn (a
//! readable `end_turn` in a log file). The conventions type it `string[]`: this processor, in
//! front of the batch exporter, exports such a string as a one-element array, so a collector
//! sees the shape it expects. (Counts need no such step: panto-core records them as `i64`, which
//! arrive as ints.)

use std::time::Duration;

use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use opentelemetry_sdk::Resource;

/// The attributes the conventions type as string arrays that panto records as one string.
const STRING_ARRAYS: [&str; 1] = ["gen_ai.response.finish_reasons"];

/// A span processor that makes the [`STRING_ARRAYS`] attributes arrays, then hands the span to
/// `inner`.
#[derive(Debug)]
pub(crate) struct StringArrays<P> {
    inner: P,
}

impl<P> StringArrays<P> {
    pub(crate) fn new(inner: P) -> Self {
        StringArrays { inner }
    }
}

fn fix(attributes: &mut [KeyValue]) {
    for kv in attributes {
        if let Value::String(text) = &kv.value {
            if STRING_ARRAYS.contains(&kv.key.as_str()) {
                let one: Vec<StringValue> = vec![text.clone()];
                kv.value = Value::Array(Array::String(one));
            }
        }
    }
}

impl<P: SpanProcessor> SpanProcessor for StringArrays<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        fix(&mut span.attributes);
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
    fn a_finish_reason_becomes_a_one_element_array_and_other_strings_stay() {
        let mut attributes = vec![
            KeyValue::new("gen_ai.response.finish_reasons", "end_turn"),
            KeyValue::new("gen_ai.request.model", "end_turn"),
        ];
        fix(&mut attributes);
        assert_eq!(
            attributes[0].value,
            Value::Array(Array::String(vec![StringValue::from("end_turn")]))
        );
        assert_eq!(attributes[1].value, Value::String("end_turn".into()));
    }
}
