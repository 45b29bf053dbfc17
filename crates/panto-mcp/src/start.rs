//! Starting every configured server at once.

use std::sync::Arc;

use crate::config::ServerConfig;
use crate::error::Error;
use crate::source::McpSource;

/// A server that did not start: its name and why (the error quotes the end of its stderr).
/// The other servers work without it.
#[derive(Debug)]
pub struct StartWarning {
    /// The server's name.
    pub server: String,
    /// Why it did not start.
    pub error: Error,
}

impl std::fmt::Display for StartWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The error names the server already.
        write!(f, "{}", self.error)
    }
}

/// What [`start_all`] started.
#[derive(Debug, Default)]
pub struct Started {
    /// The servers that started, in configuration order: register each with
    /// [`Agent::register_tool_source`](panto_core::Agent::register_tool_source).
    pub sources: Vec<Arc<McpSource>>,
    /// One warning per server that did not start, in configuration order.
    pub warnings: Vec<StartWarning>,
}

/// Starts every enabled server of `servers` in parallel, each within its own
/// `startup_timeout_secs`. Disabled servers are skipped; one that fails is a warning, not an
/// error, and the others work. Pass the servers in configuration order: the sources come back in
/// it, so the tools are offered in it and the request prefix stays stable.
pub async fn start_all<I>(servers: I) -> Started
where
    I: IntoIterator<Item = (String, ServerConfig)>,
{
    let starts: Vec<_> = servers
        .into_iter()
        .filter(|(_, config)| config.enabled)
        .map(|(name, config)| {
            let task = tokio::spawn(McpSource::start(name.clone(), config));
            (name, task)
        })
        .collect();
    let mut started = Started::default();
    for (name, task) in starts {
        match task.await {
            Ok(Ok(source)) => started.sources.push(Arc::new(source)),
            Ok(Err(error)) => started.warnings.push(StartWarning { server: name, error }),
            Err(join) => started.warnings.push(StartWarning {
                server: name.clone(),
                error: Error::Start {
                    server: name,
                    why: format!("its start-up task failed: {join}"),
                    stderr_tail: String::new(),
                },
            }),
        }
    }
    started
}
