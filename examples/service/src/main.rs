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
//!
//! Prints `listening on http://ADDRESS` once it accepts connections.
#![allow(clippy::print_stdout)]

use std::io::Write as _;

use anyhow::{Context, Result};
use panto_core::{ApiStyle, Config, ProviderConfig};
use panto_service_example::{router, Service};
use panto_store_postgres::PostgresStore;

fn var(name: &str) -> Result<String> {
    std::env::var(name).with_context(|| format!("{name} is not set"))
}

#[tokio::main]
async fn main() -> Result<()> {
    let database = var("PANTO_SERVICE_DATABASE_URL")?;
    let listen = std::env::var("PANTO_SERVICE_LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".to_owned());
    let style = std::env::var("PANTO_SERVICE_API_STYLE").unwrap_or_else(|_| "anthropic-messages".to_owned());
    let style: ApiStyle = serde_json::from_value(serde_json::Value::String(style.clone()))
        .with_context(|| format!("PANTO_SERVICE_API_STYLE {style:?} is not anthropic-messages or openai-chat"))?;
    let provider = ProviderConfig::new(
        style,
        var("PANTO_SERVICE_BASE_URL")?,
        std::env::var("PANTO_SERVICE_API_KEY").unwrap_or_default(),
        var("PANTO_SERVICE_MODEL")?,
    );

    let store = PostgresStore::connect(&database).await.with_context(|| {
        format!(
            "connecting to {}",
            panto_store_postgres::redact_connection_string(&database)
        )
    })?;
    let service = Service::new(store, Config::new(provider));
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    println!("listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    axum::serve(listener, router(service)).await?;
    Ok(())
}
