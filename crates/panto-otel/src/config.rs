//! What the standard `OTEL_*` variables ask for.

use crate::Error;

/// How OTLP is carried to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Protobuf bodies POSTed to `/v1/traces` and `/v1/metrics` (`http/protobuf`, the default).
    HttpProtobuf,
    /// The OTLP gRPC services (`grpc`).
    Grpc,
}

/// One signal's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signal {
    /// The protocol.
    pub protocol: Protocol,
}

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Traces, when an endpoint for them is configured.
    pub traces: Option<Signal>,
    /// Metrics, when an endpoint for them is configured.
    pub metrics: Option<Signal>,
    /// `OTEL_SERVICE_NAME`, else the program's default.
    pub service_name: Option<String>,
}

impl Settings {
    /// Reads the variables through `var` (the process environment in production).
    pub(crate) fn read(var: &dyn Fn(&str) -> Option<String>) -> Result<Settings, Error> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(Settings::nothing());
        }
        let general = set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        let signal = |endpoint: &str, protocol: &'static str, exporter: &str| -> Result<Option<Signal>, Error> {
            // `OTEL_TRACES_EXPORTER=none` turns one signal off, as the SDK spec says.
            if set(exporter).is_some_and(|v| v.trim().eq_ignore_ascii_case("none")) {
                return Ok(None);
            }
            if !general && set(endpoint).is_none() {
                return Ok(None);
            }
            let protocol = match set(protocol) {
                Some(value) => parse_protocol(protocol, &value)?,
                None => match set("OTEL_EXPORTER_OTLP_PROTOCOL") {
                    Some(value) => parse_protocol("OTEL_EXPORTER_OTLP_PROTOCOL", &value)?,
                    None => Protocol::HttpProtobuf,
                },
            };
            Ok(Some(Signal { protocol }))
        };
        Ok(Settings {
            traces: signal(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_TRACES_EXPORTER",
            )?,
            metrics: signal(
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                "OTEL_METRICS_EXPORTER",
            )?,
            service_name: set("OTEL_SERVICE_NAME"),
        })
    }

    fn nothing() -> Settings {
        Settings {
            traces: None,
            metrics: None,
            service_name: None,
        }
    }

    /// Whether anything is exported at all.
    pub(crate) fn any(&self) -> bool {
        self.traces.is_some() || self.metrics.is_some()
    }
}

fn parse_protocol(variable: &'static str, value: &str) -> Result<Protocol, Error> {
    match value.trim() {
        "http/protobuf" => Ok(Protocol::HttpProtobuf),
        "grpc" => Ok(Protocol::Grpc),
        other => Err(Error::UnsupportedProtocol {
            variable,
            value: other.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Settings, Error> {
        Settings::read(&|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        let settings = read(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_SERVICE_NAME", "x")]).unwrap();
        assert!(!settings.any());
        assert!(!read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]).unwrap().any());
    }

    #[test]
    fn the_general_endpoint_turns_both_signals_on() {
        let settings = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]).unwrap();
        assert_eq!(
            settings.traces,
            Some(Signal {
                protocol: Protocol::HttpProtobuf
            })
        );
        assert_eq!(
            settings.metrics,
            Some(Signal {
                protocol: Protocol::HttpProtobuf
            })
        );
    }

    #[test]
    fn a_signal_endpoint_turns_only_that_signal_on() {
        let settings = read(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap();
        assert_eq!(
            settings.traces,
            Some(Signal {
                protocol: Protocol::Grpc
            })
        );
        assert_eq!(settings.metrics, None);
    }

    #[test]
    fn the_signal_protocol_wins_over_the_general_one() {
        let settings = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"),
        ])
        .unwrap();
        assert_eq!(settings.traces.unwrap().protocol, Protocol::Grpc);
        assert_eq!(settings.metrics.unwrap().protocol, Protocol::HttpProtobuf);
    }

    #[test]
    fn disabled_sdk_and_none_exporters_export_nothing() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(!read(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")]).unwrap().any());
        let settings = read(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")]).unwrap();
        assert!(settings.traces.is_none() && settings.metrics.is_some());
    }

    #[test]
    fn an_unknown_protocol_is_an_error_naming_the_variable() {
        let err = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=\"http/json\" is not a supported OTLP protocol (use http/protobuf or grpc)"
        );
    }
}
