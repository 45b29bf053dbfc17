//! The one error type of panto-otel.

/// Why the OpenTelemetry export could not be set up. Returned by
/// [`Export::from_env`](crate::Export::from_env); none is retryable: each names a setting to fix. A program
/// should report it and run on without export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A protocol variable (`OTEL_EXPORTER_OTLP_PROTOCOL` or a per-signal one) holds a value
    /// panto does not speak: only `http/protobuf` and `grpc` are built in.
    #[error("{variable}={value:?} is not a supported OTLP protocol (use http/protobuf or grpc)")]
    UnsupportedProtocol {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// The OTLP exporter refused its configuration (a malformed endpoint URL or header, …);
    /// the message is the exporter's.
    #[error("the OTLP {signal} exporter cannot be built: {message}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// What the exporter said.
        message: String,
    },
    /// [`Export::from_env`](crate::Export::from_env) was called outside a Tokio runtime: the
    /// exporters send on the runtime they were made in.
    #[error("the OpenTelemetry export must be set up inside a Tokio runtime")]
    NoRuntime,
}
