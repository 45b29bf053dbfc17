//! Protobuf export requests into the receiver's plain values.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use serde_json::Value;

use super::{ReceivedMetric, ReceivedPoint, ReceivedSpan};

/// The spans of an `ExportTraceServiceRequest`.
pub(super) fn spans(body: &[u8]) -> Result<Vec<ReceivedSpan>, String> {
    let request = ExportTraceServiceRequest::decode(body)
        .map_err(|e| format!("the body is not an ExportTraceServiceRequest: {e}"))?;
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        let service_name = service_name(resource.resource.as_ref());
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push(ReceivedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: attributes(&span.attributes),
                    events: span
                        .events
                        .into_iter()
                        .map(|e| (e.name, attributes(&e.attributes)))
                        .collect(),
                    service_name: service_name.clone(),
                    status: span.status.map(|s| (s.code, s.message)).unwrap_or_default(),
                });
            }
        }
    }
    Ok(spans)
}

/// The metrics of an `ExportMetricsServiceRequest`.
pub(super) fn metrics(body: &[u8]) -> Result<Vec<ReceivedMetric>, String> {
    let request = ExportMetricsServiceRequest::decode(body)
        .map_err(|e| format!("the body is not an ExportMetricsServiceRequest: {e}"))?;
    let mut metrics = Vec::new();
    for resource in request.resource_metrics {
        let service_name = service_name(resource.resource.as_ref());
        for scope in resource.scope_metrics {
            for metric in scope.metrics {
                let points = match metric.data {
                    Some(Data::Sum(sum)) => sum.data_points.iter().map(number).collect(),
                    Some(Data::Gauge(gauge)) => gauge.data_points.iter().map(number).collect(),
                    Some(Data::Histogram(histogram)) => histogram
                        .data_points
                        .iter()
                        .map(|p| ReceivedPoint {
                            attributes: attributes(&p.attributes),
                            value: p.sum.unwrap_or(0.0),
                            count: p.count,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                metrics.push(ReceivedMetric {
                    name: metric.name,
                    unit: metric.unit,
                    points,
                    service_name: service_name.clone(),
                });
            }
        }
    }
    Ok(metrics)
}

fn number(point: &opentelemetry_proto::tonic::metrics::v1::NumberDataPoint) -> ReceivedPoint {
    let value = match point.value {
        Some(Number::AsDouble(v)) => v,
        // Counts this large are not in a test.
        Some(Number::AsInt(v)) => v as f64,
        None => 0.0,
    };
    ReceivedPoint {
        attributes: attributes(&point.attributes),
        value,
        count: 1,
    }
}

fn service_name(resource: Option<&Resource>) -> String {
    resource
        .map(|r| attributes(&r.attributes))
        .and_then(|a| a.get("service.name").and_then(|v| v.as_str().map(str::to_owned)))
        .unwrap_or_default()
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, Value> {
    list.iter()
        .map(|kv| (kv.key.clone(), kv.value.as_ref().map(any).unwrap_or(Value::Null)))
        .collect()
}

fn any(value: &AnyValue) -> Value {
    match &value.value {
        Some(Any::StringValue(s)) => Value::String(s.clone()),
        Some(Any::BoolValue(b)) => Value::Bool(*b),
        Some(Any::IntValue(i)) => Value::from(*i),
        Some(Any::DoubleValue(d)) => Value::from(*d),
        Some(Any::ArrayValue(array)) => Value::Array(array.values.iter().map(any).collect()),
        Some(Any::KvlistValue(list)) => Value::Object(attributes(&list.values).into_iter().collect()),
        Some(Any::BytesValue(bytes)) => Value::String(hex(bytes)),
        Some(Any::StringValueStrindex(_)) | None => Value::Null,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
