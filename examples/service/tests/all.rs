//! The example service's integration tests: `panto-service` processes on a throwaway
//! PostgreSQL against the mock LLM server, as a client sees them (two instances on one database,
//! error answers, the OpenTelemetry export).

mod common;

mod errors;
mod otel;
mod two_instances;
