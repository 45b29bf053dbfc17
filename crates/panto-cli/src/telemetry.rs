//! OpenTelemetry export (the `otel` feature, on by default): when the standard
//! `OTEL_EXPORTER_OTLP_*` variables name a collector, panto's spans and the metrics derived
//! from them are sent there over OTLP (panto-otel does the work; docs/observability.md).
//! Without those variables nothing is set up and nothing is sent.

#[cfg(feature = "otel")]
use std::time::Duration;

/// How long panto waits at exit for the last spans and metrics to reach the collector: a
/// collector that is down or slow must not keep `panto -p` from exiting.
#[cfg(feature = "otel")]
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(3);

/// The export of this process, if one was asked for.
#[derive(Debug)]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    export: Option<panto_otel::Export>,
}

impl Telemetry {
    /// Starts the export the environment asks for, on `runtime`, and returns the tracing layer
    /// that feeds it. A configuration it cannot use is a warning: panto runs on without export.
    #[cfg(feature = "otel")]
    pub fn start<S>(
        runtime: &tokio::runtime::Runtime,
        warnings: &mut Vec<String>,
    ) -> (Telemetry, Option<Box<dyn tracing_subscriber::Layer<S> + Send + Sync>>)
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
    {
        let _inside = runtime.enter();
        let export = match panto_otel::Export::from_env("panto") {
            Ok(export) => export,
            Err(e) => {
                warnings.push(format!("OpenTelemetry export is off: {e}"));
                None
            }
        };
        let layer = export.as_ref().map(|e| e.layer());
        (Telemetry { export }, layer)
    }

    /// Without the `otel` feature: nothing to start.
    #[cfg(not(feature = "otel"))]
    pub fn start(_runtime: &tokio::runtime::Runtime, _warnings: &mut Vec<String>) -> (Telemetry, Option<()>) {
        (Telemetry {}, None)
    }

    /// Sends what is still buffered, waiting at most [`FLUSH_TIMEOUT`]; call it while the
    /// runtime still runs. Returns a warning when the collector did not take everything.
    pub fn finish(self) -> Option<String> {
        #[cfg(feature = "otel")]
        if let Some(export) = self.export {
            if !export.shutdown(FLUSH_TIMEOUT) {
                return Some(format!(
                    "not every span and metric reached the OpenTelemetry collector within {}s",
                    FLUSH_TIMEOUT.as_secs()
                ));
            }
        }
        None
    }
}
