//! The exporters and providers, made from the environment, and their bounded shutdown.

use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Subscriber;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::arrays::StringArrays;
use crate::config::{Settings, Signal};
use crate::http_client::RuntimeClient;
use crate::{Error, MetricsLayer, Protocol};

/// The instrumentation scope of everything panto exports.
const SCOPE: &str = "panto";

/// How long one export request may take when `OTEL_EXPORTER_OTLP_TIMEOUT` does not say.
const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The OpenTelemetry export of a process: the trace and metric pipelines the `OTEL_*`
/// variables asked for. Make the tracing layer with [`layer`](Export::layer) and flush with
/// [`shutdown`](Export::shutdown) before the process (and its Tokio runtime) ends.
#[derive(Debug)]
pub struct Export {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
}

impl Export {
    /// The export the process environment asks for: `Ok(None)` when no OTLP endpoint is set
    /// (or `OTEL_SDK_DISABLED=true`), so a program that never configured OpenTelemetry pays
    /// nothing. `service_name` is the `service.name` unless `OTEL_SERVICE_NAME` (or
    /// `OTEL_RESOURCE_ATTRIBUTES`) sets one. Must be called inside a Tokio runtime (a
    /// multi-threaded one), on which the exporters send.
    pub fn from_env(service_name: &str) -> Result<Option<Export>, Error> {
        Self::from_vars(service_name, &|name| std::env::var(name).ok())
    }

    fn from_vars(service_name: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Export>, Error> {
        let settings = Settings::read(var)?;
        if !settings.any() {
            return Ok(None);
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let timeout = export_timeout(var);
        let client = RuntimeClient::new(runtime, timeout).map_err(|e| Error::Exporter {
            signal: "traces",
            message: e.to_string(),
        })?;
        let resource = resource(service_name, &settings, var);
        let traces = match &settings.traces {
            Some(signal) => Some(tracer_provider(signal, &client, timeout, resource.clone())?),
            None => None,
        };
        let metrics = match &settings.metrics {
            Some(signal) => Some(meter_provider(signal, &client, timeout, resource)?),
            None => None,
        };
        Ok(Some(Export { traces, metrics }))
    }

    /// The tracing layer that feeds the export: panto's spans and events (every target named
    /// `panto…`: `panto_core`, `panto_tools`, `panto_mcp`, …) to OpenTelemetry spans, and the
    /// metrics derived from them. Nothing of another crate is exported: not the HTTP, gRPC and
    /// OpenTelemetry libraries the export runs on, and not the MCP library's trace events, which
    /// carry tool arguments. A program that wants its own spans in the same traces names them
    /// with [`layer_with_targets`](Export::layer_with_targets).
    pub fn layer<S>(&self) -> Box<dyn Layer<S> + Send + Sync + 'static>
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        self.layer_with_targets(&[])
    }

    /// [`layer`](Export::layer), also exporting the spans and events of the given targets:
    /// each is a target (`"my_service"`, as a crate's module path starts) or a module under it
    /// (`"my_service::http"`), matched as the target itself or the target followed by `::`.
    /// Name only crates whose spans hold nothing that must not leave the process.
    pub fn layer_with_targets<S>(&self, targets: &[&str]) -> Box<dyn Layer<S> + Send + Sync + 'static>
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let spans = self
            .traces
            .as_ref()
            .map(|provider| tracing_opentelemetry::layer().with_tracer(provider.tracer(SCOPE)));
        let metrics = self
            .metrics
            .as_ref()
            .map(|provider| MetricsLayer::new(&provider.meter(SCOPE)));
        let targets: Vec<String> = targets.iter().map(|t| (*t).to_owned()).collect();
        Box::new(
            Layer::and_then(spans, metrics)
                .with_filter(filter_fn(move |metadata| exported(metadata.target(), &targets))),
        )
    }

    /// Sends what is still buffered and stops the pipelines, waiting at most `timeout` (a
    /// collector that is down or slow must not keep the program from exiting). Returns whether
    /// everything was flushed in time. Call it while the Tokio runtime is still running.
    pub fn shutdown(self, timeout: Duration) -> bool {
        let (done, finished) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("panto-otel-shutdown".to_owned())
            .spawn(move || {
                let traces = self.traces.map(|p| p.shutdown_with_timeout(timeout).is_ok());
                let metrics = self.metrics.map(|p| p.shutdown_with_timeout(timeout).is_ok());
                let _ = done.send(traces.unwrap_or(true) && metrics.unwrap_or(true));
            });
        spawned.is_ok() && finished.recv_timeout(timeout).unwrap_or(false)
    }
}

/// Whether a span or event of `target` goes to the export: panto's own (`panto`, `panto_*`,
/// `panto::…`) and the program's `extra` targets, nothing else. An allow-list, as the file log
/// is: another library's events may carry what must not leave the process (the MCP library
/// traces tool arguments), and the libraries the export runs on would export the export.
fn exported(target: &str, extra: &[String]) -> bool {
    let panto = target
        .strip_prefix("panto")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('_') || rest.starts_with("::"));
    panto
        || extra.iter().any(|allowed| {
            target
                .strip_prefix(allowed.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s.
fn export_timeout(var: &dyn Fn(&str) -> Option<String>) -> Duration {
    var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_EXPORT_TIMEOUT)
}

/// The SDK's resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, the SDK's name and
/// version), with `service_name` when the environment names no service.
fn resource(service_name: &str, settings: &Settings, var: &dyn Fn(&str) -> Option<String>) -> Resource {
    let named_in_attributes = var("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|a| a.contains("service.name="));
    let builder = Resource::builder();
    if settings.service_name.is_some() || named_in_attributes {
        builder.build()
    } else {
        builder.with_service_name(service_name.to_owned()).build()
    }
}

fn exporter_error(signal: &'static str) -> impl Fn(opentelemetry_otlp::ExporterBuildError) -> Error {
    move |e| Error::Exporter {
        signal,
        message: e.to_string(),
    }
}

fn tracer_provider(
    signal: &Signal,
    client: &RuntimeClient,
    timeout: Duration,
    resource: Resource,
) -> Result<SdkTracerProvider, Error> {
    let exporter = match signal.protocol {
        Protocol::HttpProtobuf => SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_timeout(timeout)
            .build(),
        Protocol::Grpc => SpanExporter::builder().with_tonic().with_timeout(timeout).build(),
    }
    .map_err(exporter_error("traces"))?;
    let batch = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter).build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(StringArrays::new(batch))
        .with_resource(resource)
        .build())
}

fn meter_provider(
    signal: &Signal,
    client: &RuntimeClient,
    timeout: Duration,
    resource: Resource,
) -> Result<SdkMeterProvider, Error> {
    let exporter = match signal.protocol {
        Protocol::HttpProtobuf => MetricExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_timeout(timeout)
            .build(),
        Protocol::Grpc => MetricExporter::builder().with_tonic().with_timeout(timeout).build(),
    }
    .map_err(exporter_error("metrics"))?;
    Ok(SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter).build())
        .with_resource(resource)
        .build())
}

#[cfg(test)]
mod tests {
    use super::exported;

    #[test]
    fn only_pantos_targets_and_the_programs_named_ones_are_exported() {
        for target in [
            "panto",
            "panto_core",
            "panto_core::agent",
            "panto_mcp::client",
            "panto_service",
        ] {
            assert!(exported(target, &[]), "{target}");
        }
        for target in [
            "rmcp::service",
            "rmcp",
            "hyper::client",
            "tonic",
            "my_service",
            "pantomime",
        ] {
            assert!(!exported(target, &[]), "{target}");
        }
        let extra = ["my_service".to_owned()];
        assert!(exported("my_service", &extra));
        assert!(exported("my_service::http", &extra));
        assert!(!exported("my_service_other", &extra));
        assert!(!exported("rmcp::service", &extra));
    }
}
