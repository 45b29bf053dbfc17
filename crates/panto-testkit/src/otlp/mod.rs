//! An OTLP receiver on 127.0.0.1: what a collector would get from panto's OpenTelemetry export,
//! decoded from the protobuf (`opentelemetry-proto`) into plain values a test can assert on.
//!
//! One [`OtlpReceiver`] listens twice: OTLP/HTTP (`POST /v1/traces`, `POST /v1/metrics`,
//! protobuf bodies; [`http_endpoint`](OtlpReceiver::http_endpoint)) and OTLP/gRPC (the
//! collector's `TraceService` and `MetricsService`; [`grpc_endpoint`](OtlpReceiver::grpc_endpoint)).
//! Point `OTEL_EXPORTER_OTLP_ENDPOINT` at one of them, run panto, then read
//! [`spans`](OtlpReceiver::spans), [`metrics`](OtlpReceiver::metrics) and, to prove a secret
//! never left, every byte received ([`payloads`](OtlpReceiver::payloads)).

mod decode;
mod grpc;
mod http;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::Error;

/// How an export arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// OTLP/HTTP with protobuf bodies.
    Http,
    /// OTLP/gRPC.
    Grpc,
}

/// One export request as received: its transport, the signal (`traces` or `metrics`), its
/// headers (gRPC metadata for gRPC; names lowercased) and its protobuf body.
#[derive(Debug, Clone)]
pub struct OtlpRequest {
    /// How it arrived.
    pub transport: Transport,
    /// `traces` or `metrics`.
    pub signal: &'static str,
    /// The headers (or gRPC metadata), names lowercased.
    pub headers: Vec<(String, String)>,
    /// The protobuf body as sent (for gRPC: the request message encoded again).
    pub body: Vec<u8>,
}

/// A span as a collector received it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The span's name.
    pub name: String,
    /// The trace id, in hex.
    pub trace_id: String,
    /// The span id, in hex.
    pub span_id: String,
    /// The parent's span id in hex; empty for a root span.
    pub parent_span_id: String,
    /// The attributes, as JSON values (strings, numbers, booleans, arrays).
    pub attributes: BTreeMap<String, Value>,
    /// The events: each one's name and attributes.
    pub events: Vec<(String, BTreeMap<String, Value>)>,
    /// The resource's `service.name`.
    pub service_name: String,
    /// The status code (0 unset, 1 ok, 2 error) and message.
    pub status: (i32, String),
}

/// One data point of a received metric, with its attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedPoint {
    /// The point's attributes.
    pub attributes: BTreeMap<String, Value>,
    /// A counter's or gauge's value; a histogram's sum.
    pub value: f64,
    /// A histogram's count of measurements; 1 for a counter or gauge.
    pub count: u64,
}

/// A metric as a collector received it (the points of every export of it, in order).
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedMetric {
    /// The instrument's name.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// Its data points.
    pub points: Vec<ReceivedPoint>,
    /// The resource's `service.name`.
    pub service_name: String,
}

impl ReceivedMetric {
    /// The sum of the values of the points whose attributes include every pair of `matching`
    /// (for a cumulative metric exported more than once, read the last export's points instead).
    pub fn total(&self, matching: &[(&str, Value)]) -> f64 {
        self.matching(matching).map(|p| p.value).sum()
    }

    /// The number of measurements in the points matching (see [`total`](Self::total)).
    pub fn count(&self, matching: &[(&str, Value)]) -> u64 {
        self.matching(matching).map(|p| p.count).sum()
    }

    fn matching<'a>(&'a self, matching: &'a [(&str, Value)]) -> impl Iterator<Item = &'a ReceivedPoint> {
        self.points
            .iter()
            .filter(move |p| matching.iter().all(|(k, v)| p.attributes.get(*k) == Some(v)))
    }
}

/// What the receiver got so far.
#[derive(Debug, Default)]
struct Received {
    requests: Vec<OtlpRequest>,
    spans: Vec<ReceivedSpan>,
    metrics: Vec<ReceivedMetric>,
}

/// The shared record of what arrived.
#[derive(Debug, Default, Clone)]
struct Inbox(Arc<Mutex<Received>>);

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Received> {
        // Plain data a panic cannot leave half-written.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Decodes and records one request; an undecodable body is an error for the exporter.
    fn take(&self, request: OtlpRequest) -> Result<(), String> {
        let mut received = self.lock();
        match request.signal {
            "traces" => received.spans.extend(decode::spans(&request.body)?),
            _ => received.metrics.extend(decode::metrics(&request.body)?),
        }
        received.requests.push(request);
        Ok(())
    }
}

/// An OTLP collector on 127.0.0.1 (HTTP and gRPC) that keeps everything it receives. Stopped
/// when dropped.
#[derive(Debug)]
pub struct OtlpReceiver {
    http: SocketAddr,
    grpc: SocketAddr,
    inbox: Inbox,
    tasks: Vec<JoinHandle<()>>,
}

impl OtlpReceiver {
    /// Starts both listeners on free ports of 127.0.0.1.
    ///
    /// # Panics
    /// When it cannot listen; [`try_start`](Self::try_start) returns the error instead.
    pub async fn start() -> OtlpReceiver {
        match Self::try_start().await {
            Ok(receiver) => receiver,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts both listeners; [`Error::Listen`] when 127.0.0.1 has no free port.
    pub async fn try_start() -> Result<OtlpReceiver, Error> {
        let bind = || async {
            TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| Error::Listen(format!("the OTLP receiver cannot listen on 127.0.0.1: {e}")))
        };
        let (http_listener, grpc_listener) = (bind().await?, bind().await?);
        let address = |l: &TcpListener| {
            l.local_addr()
                .map_err(|e| Error::Listen(format!("the OTLP receiver has no address: {e}")))
        };
        let (http, grpc) = (address(&http_listener)?, address(&grpc_listener)?);
        let inbox = Inbox::default();
        let tasks = vec![
            tokio::spawn(http::serve(http_listener, inbox.clone())),
            tokio::spawn(grpc::serve(grpc_listener, inbox.clone())),
        ];
        Ok(OtlpReceiver {
            http,
            grpc,
            inbox,
            tasks,
        })
    }

    /// The OTLP/HTTP endpoint, for `OTEL_EXPORTER_OTLP_ENDPOINT` (the exporter appends
    /// `/v1/traces` and `/v1/metrics`).
    pub fn http_endpoint(&self) -> String {
        format!("http://{}", self.http)
    }

    /// The OTLP/gRPC endpoint, for `OTEL_EXPORTER_OTLP_ENDPOINT` with
    /// `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// Every export request received, in order.
    pub fn requests(&self) -> Vec<OtlpRequest> {
        self.inbox.lock().requests.clone()
    }

    /// Every span received, in order of arrival.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.inbox.lock().spans.clone()
    }

    /// The spans named `name`.
    pub fn spans_named(&self, name: &str) -> Vec<ReceivedSpan> {
        self.spans().into_iter().filter(|s| s.name == name).collect()
    }

    /// Every metric received, in order of arrival (a metric exported twice appears twice).
    pub fn metrics(&self) -> Vec<ReceivedMetric> {
        self.inbox.lock().metrics.clone()
    }

    /// The last export of the metric `name`, if any arrived.
    pub fn metric(&self, name: &str) -> Option<ReceivedMetric> {
        self.metrics().into_iter().rev().find(|m| m.name == name)
    }

    /// Every byte received (headers and bodies, as one lossy string each), for scans proving
    /// that a secret never left the process.
    pub fn payloads(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| {
                let headers: Vec<String> = r.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{}\n{}", headers.join("\n"), String::from_utf8_lossy(&r.body))
            })
            .collect()
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
