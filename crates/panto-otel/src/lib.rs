//! OpenTelemetry export for panto.
//!
//! panto-core and the stores describe what they do as `tracing` spans and events (a turn, a
//! provider request, a tool call, a compaction, a store append; docs/observability.md lists
//! them). This crate turns them into OpenTelemetry data and sends it over OTLP, configured the
//! way every OpenTelemetry SDK is, by the standard environment variables:
//!
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` (or the per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//!   `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`): where to send. **Nothing is exported, and nothing
//!   is set up, when none of them is set.**
//! - `OTEL_EXPORTER_OTLP_PROTOCOL` (and the per-signal `…_TRACES_PROTOCOL`,
//!   `…_METRICS_PROTOCOL`): `http/protobuf` (the default) or `grpc`.
//! - `OTEL_EXPORTER_OTLP_HEADERS` (and per signal): `key=value,…`, e.g. a collector's token.
//! - `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_SERVICE_NAME` (default `panto`, or what the program
//!   passes), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED=true` (export nothing).
//!
//! One call wires it, for the CLI, the C ABI and services alike:
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), panto_otel::Error> {
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! // Inside the runtime: the exporters send on it.
//! let export = runtime.block_on(async { panto_otel::Export::from_env("my-service") })?;
//! tracing_subscriber::registry()
//!     // panto's spans, and the program's own (its crate `my_service`); nothing of other crates.
//!     .with(export.as_ref().map(|e| e.layer_with_targets(&["my_service"])))
//!     .init();
//! // ... run agents ...
//! if let Some(export) = export {
//!     // Flushes what is buffered; returns within the timeout even if the collector is down.
//!     export.shutdown(std::time::Duration::from_secs(2));
//! }
//! # Ok(()) }
//! ```
//!
//! Traces: every panto span becomes an OpenTelemetry span with the same attributes (the GenAI
//! semantic conventions' names where one exists, so a turn is an `invoke_agent` span, parent of
//! its `chat` requests and `execute_tool` calls). Spans of other crates (HTTP and gRPC libraries,
//! the exporter itself) are not exported. Metrics are derived from the same spans when they
//! close ([`metrics`](MetricsLayer)): the GenAI client metrics `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.duration`, and panto's own counters of turns, requests, tokens by
//! kind, tool calls, retries and store append latency.
//!
//! Export runs beside the program: spans are batched and sent by the SDK's background thread,
//! metrics every `OTEL_METRIC_EXPORT_INTERVAL` (60 s) and at shutdown. A collector that is down
//! costs the program nothing but the bounded wait of [`Export::shutdown`].
#![deny(missing_docs)]
#![deny(unreachable_pub)]

mod arrays;
mod config;
mod error;
mod export;
mod http_client;
mod metrics;
mod names;

pub use config::Protocol;
pub use error::Error;
pub use export::Export;
pub use metrics::MetricsLayer;
