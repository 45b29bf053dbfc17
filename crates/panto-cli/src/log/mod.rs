//! The subscriber of the `panto` process: the libraries' spans and events
//! (docs/observability.md) go to a log file when `PANTO_LOG` or `--log-level` asks, never to
//! the terminal and never into stream-json.
//!
//! [`install`] builds one `tracing_subscriber` registry from a list of layers: the file log
//! ([`file_layer`]) and whatever else a build adds (an OpenTelemetry exporter pushes its layer
//! onto the same list), so every sink sees the same spans.

mod rotate;

use std::path::{Path, PathBuf};

use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::config::Env;
use crate::exit::Failure;
pub use rotate::{RotatingFile, KEPT_FILES, MAX_BYTES};

/// A layer of the process subscriber.
pub type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// panto's own crates, the targets a bare level (`PANTO_LOG=debug`) applies to; everything
/// else (HTTP and database clients) stays at `warn`.
const PANTO_TARGETS: [&str; 6] = [
    "panto_core",
    "panto_store_fs",
    "panto_store_postgres",
    "panto_tools",
    "panto",
    "panto_cli",
];

/// The filter of a `PANTO_LOG` / `--log-level` value: a bare level (`info`, `debug`, `trace`,
/// `warn`, `error`) applies to panto's crates; anything else is read as `RUST_LOG`-style
/// directives (`panto_core=trace,hyper=debug`). `None` for `off` or an empty value.
pub fn filter(value: &str) -> Result<Option<EnvFilter>, String> {
    let value = value.trim();
    let level = value.to_ascii_lowercase();
    let directives = match level.as_str() {
        "" | "off" | "none" => return Ok(None),
        "error" | "warn" | "info" | "debug" | "trace" => {
            let mut d = String::from("warn");
            for target in PANTO_TARGETS {
                d.push_str(&format!(",{target}={level}"));
            }
            d
        }
        _ => value.to_owned(),
    };
    EnvFilter::builder().parse(&directives).map(Some).map_err(|e| {
        format!("{value:?} is not a log level (error, warn, info, debug, trace) or filter directives: {e}")
    })
}

/// The file log's layer: lines of text without colour, one per event and one per span as it
/// closes (with its fields and times), appended to `path` (created `0600`, rotated by size).
pub fn file_layer(path: &Path, filter: EnvFilter) -> Result<BoxedLayer, Failure> {
    let file = RotatingFile::open(path, MAX_BYTES, KEPT_FILES)
        .map_err(|e| Failure::runtime(format!("cannot open the log file {}: {e}", path.display())))?;
    Ok(tracing_subscriber::fmt::layer()
        .with_writer(file)
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .with_filter(filter)
        .boxed())
}

/// Where the log goes: `$XDG_STATE_HOME/panto/panto.log`, else `~/.local/state/panto/panto.log`.
pub fn default_path(env: &Env) -> Option<PathBuf> {
    env.state_dir().map(|d| d.join("panto.log"))
}

/// The layers the command line and environment ask for: the file log when `--log-level` (else
/// `PANTO_LOG`) names a level. A value that is neither a level nor valid directives is a usage
/// error naming where it came from.
pub fn requested_layers(flag: Option<&str>, env: &Env) -> Result<Vec<BoxedLayer>, Failure> {
    let (value, source) = match (flag, env.get("PANTO_LOG")) {
        (Some(v), _) => (v, "--log-level"),
        (None, Some(v)) => (v, "PANTO_LOG"),
        (None, None) => return Ok(Vec::new()),
    };
    let Some(filter) = filter(value).map_err(|e| Failure::usage(format!("{source}: {e}")))? else {
        return Ok(Vec::new());
    };
    let path = default_path(env).ok_or_else(|| {
        Failure::usage(format!(
            "{source} asks for a log, but neither XDG_STATE_HOME nor HOME is set to place it"
        ))
    })?;
    Ok(vec![file_layer(&path, filter)?])
}

/// Installs the process subscriber of `layers`; with none, nothing is installed and every span
/// stays disabled (the cheapest state).
pub fn install(layers: Vec<BoxedLayer>) {
    if layers.is_empty() {
        return;
    }
    // Fails only if a subscriber is already installed, which nothing in panto does.
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_applies_to_panto_and_directives_pass_through() {
        let f = filter("debug").unwrap().unwrap().to_string();
        assert!(
            f.contains("panto_core=debug") && f.contains("panto_store_fs=debug"),
            "{f}"
        );
        assert!(
            f.starts_with("warn") || f.contains(",warn") || f.ends_with("warn"),
            "{f}"
        );
        let f = filter("panto_core=trace,hyper=info").unwrap().unwrap().to_string();
        assert!(f.contains("panto_core=trace") && f.contains("hyper=info"), "{f}");
        assert!(filter("off").unwrap().is_none());
        let e = filter("panto_core=loud").err().unwrap();
        assert!(e.contains("\"panto_core=loud\" is not a log level"), "{e}");
    }
}
