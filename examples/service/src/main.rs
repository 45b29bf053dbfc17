//! `panto-service`: the example service (see the library docs for its endpoints).
//!
//! Configured by the environment:
//!
//! - `PANTO_SERVICE_DATABASE_URL`: the PostgreSQL database (required; instances that share it
//!   share its sessions)
//! - `PANTO_SERVICE_LISTEN`: the address to listen on (default `127.0.0.1:8080`; port 0 picks
//!   a free one)
//! - `PANTO_SERVICE_API_STYLE`: `anthropic-messages` (default) or `openai-chat`
//! - `PANTO_SERVICE_BASE_URL`, `PANTO_SERVICE_MODEL`: the provider (required)
//! - `PANTO_SERVICE_API_KEY`: its key (default empty)
//! - `PANTO_SERVICE_TOKEN`: the bearer token every request must carry (required, at least 16
//!   characters; e.g. `openssl rand -hex 32`)
//! - `PANTO_SERVICE_HOSTS`: the `Host` values the service answers to, comma-separated (default:
//!   the listening address as `127.0.0.1:PORT` and `localhost:PORT`); add the name clients use
//!   when it is reached through a proxy or a DNS name
//! - `PANTO_SERVICE_MAX_LIVE`: the most sessions live at once in this instance (default 1000)
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` and the other standard `OTEL_*` variables: export traces
//!   (a span per HTTP request, parent of the agent's spans) and metrics over OTLP; the service
//!   name defaults to `panto-service`. Nothing is exported when no endpoint is set.
//!
//! Stops on Ctrl-C or SIGTERM: in-flight requests finish, then the last spans and metrics are
//! flushed (for at most a few seconds).
//!
//! Prints `listening on http://ADDRESS` once it accepts connections.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};
use panto_core::{ApiStyle, Config, ProviderConfig};
use panto_service_example::{router, Access, Service};
use panto_store_postgres::PostgresStore;

fn var(name: &str) -> Result<String> {
    std::env::var(name).with_context(|| format!("{name} is not set"))
}

/// The most sessions live at once in one instance unless `PANTO_SERVICE_MAX_LIVE` says otherwise.
const DEFAULT_MAX_LIVE: usize = 1000;

/// How long the last spans and metrics may take to reach the collector at exit.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(3);

#[tokio::main]
async fn main() -> Result<()> {
    let export = panto_otel::Export::from_env("panto-service").context("the OpenTelemetry export")?;
    if let Some(export) = &export {
        use tracing_subscriber::layer::SubscriberExt;
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(export.layer()))
            .context("installing the tracing subscriber")?;
    }
    let database = var("PANTO_SERVICE_DATABASE_URL")?;
    let listen = std::env::var("PANTO_SERVICE_LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let style = std::env::var("PANTO_SERVICE_API_STYLE").unwrap_or_else(|_| "anthropic-messages".to_owned());
    let style: ApiStyle = serde_json::from_value(serde_json::Value::String(style.clone()))
        .with_context(|| format!("PANTO_SERVICE_API_STYLE {style:?} is not anthropic-messages or openai-chat"))?;
    let provider = ProviderConfig::new(style, var("PANTO_SERVICE_MODEL")?)
        .with_base_url(var("PANTO_SERVICE_BASE_URL")?)
        .with_api_key(std::env::var("PANTO_SERVICE_API_KEY").unwrap_or_default());

    let store = PostgresStore::connect(&database).await.with_context(|| {
        format!(
            "connecting to {}",
            panto_store_postgres::redact_connection_string(&database)
        )
    })?;
    let token = var("PANTO_SERVICE_TOKEN")
        .context("the service needs a bearer token that clients send (e.g. `openssl rand -hex 32`)")?;
    let max_live = match std::env::var("PANTO_SERVICE_MAX_LIVE") {
        Ok(n) => n
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .with_context(|| format!("PANTO_SERVICE_MAX_LIVE {n:?} is not a positive number"))?,
        Err(_) => DEFAULT_MAX_LIVE,
    };
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let port = listener.local_addr()?.port();
    let hosts = match std::env::var("PANTO_SERVICE_HOSTS") {
        Ok(hosts) => hosts
            .split(',')
            .filter(|h| !h.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        Err(_) => vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")],
    };
    let access = Access::new(token, hosts).map_err(|e| anyhow::anyhow!("PANTO_SERVICE_TOKEN: {e}"))?;
    let service = Service::new(store, Config::new(provider), access, max_live);
    println!("listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    axum::serve(listener, router(service))
        .with_graceful_shutdown(stopped())
        .await?;
    if let Some(export) = export {
        // Blocking, on a thread of its own: the exporters send on this runtime meanwhile.
        let flushed = tokio::task::spawn_blocking(move || export.shutdown(FLUSH_TIMEOUT)).await?;
        if !flushed {
            eprintln!("warning: not every span and metric reached the OpenTelemetry collector");
        }
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let term = async {
        match terminate.as_mut() {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
