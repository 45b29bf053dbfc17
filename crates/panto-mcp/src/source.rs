//! [`McpSource`]: one server's tools as a panto [`ToolSource`], and its lifecycle (start,
//! death, restart with backoff).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use panto_core::{ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};
use rmcp::model::CallToolRequestParams;

use crate::config::{ServerConfig, TransportKind};
use crate::connect::{connect, Connection};
use crate::details::ServerDetails;
use crate::error::Error;
use crate::filter::ToolFilter;
use crate::stderr::StderrTail;
use crate::tools::{McpTool, ToolList};

/// How long a call's result waits for a tool re-listing in flight.
const LIST_REFRESH_WAIT: Duration = Duration::from_secs(1);

/// The wait before the `n`th restart attempt in a row (n from 1): none for the first, so a
/// server that crashed once is back on the next call, then 0.5 s doubling to 30 s.
fn backoff(n: u32) -> Duration {
    if n <= 1 {
        return Duration::ZERO;
    }
    let ms = 500u64.saturating_mul(1u64 << (n - 2).min(16));
    Duration::from_millis(ms.min(30_000))
}

/// Whether a server is up, as [`McpSource::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// The session is live.
    Running,
    /// The server stopped or could not be restarted; the next call tries again (after
    /// `retry_in`, when that is not zero).
    Stopped {
        /// Why, naming the server.
        error: String,
        /// How long until a call may try to restart it.
        retry_in: Duration,
    },
}

/// The connection, and what the restart backoff needs.
struct Slot {
    connection: Option<Arc<Connection>>,
    /// Failed starts and deaths since the last successful call.
    failures: u32,
    /// When the last failure was seen.
    failed_at: Option<Instant>,
    /// The last failure, naming the server.
    last_error: Option<String>,
}

/// The tools of one MCP server, offered to an agent as `<server>__<tool>`.
///
/// Register it with [`Agent::register_tool_source`](panto_core::Agent::register_tool_source)
/// (as an `Arc`). Calls go to the server concurrently. A call that fails at the protocol level
/// (the server died, the call timed out, the turn was cancelled) is an error result naming the
/// server, never an `Err` that would end the turn; a server that died is restarted on the next
/// call, with a backoff when it keeps dying. When the server announces a changed tool list the
/// source re-lists it and moves its [`generation`](ToolSource::generation), and the agent offers
/// the new list from its next request on.
///
/// Dropping the last handle ends the session and kills a stdio server's process group.
pub struct McpSource {
    name: String,
    config: ServerConfig,
    filter: ToolFilter,
    tools: Arc<ToolList>,
    slot: tokio::sync::Mutex<Slot>,
    details: RwLock<ServerDetails>,
    stderr_tail: Arc<StderrTail>,
    read_only_mode: AtomicBool,
    max_result_bytes: AtomicUsize,
}

impl std::fmt::Debug for McpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSource")
            .field("name", &self.name)
            .field("tools", &self.tools.get().len())
            .finish_non_exhaustive()
    }
}

impl McpSource {
    /// Starts server `name` as `config` says and lists its tools, within
    /// `startup_timeout_secs`. A disabled server is refused ([`Error::Config`]): skip it, as
    /// [`start_all`](crate::start_all) does.
    ///
    /// Errors: [`Error::Config`], [`Error::MissingToken`], [`Error::Start`] and
    /// [`Error::StartTimeout`], each naming the server (and quoting the end of its stderr).
    pub async fn start(name: impl Into<String>, config: ServerConfig) -> Result<McpSource, Error> {
        let name = name.into();
        config.validate(&name)?;
        if !config.enabled {
            return Err(Error::Config {
                server: name,
                why: "the server is disabled (`enabled = false`)".into(),
            });
        }
        let filter = ToolFilter::new(&config.allowed_tools, &config.denied_tools).map_err(|why| Error::Config {
            server: name.clone(),
            why,
        })?;
        let source = McpSource {
            name,
            config,
            filter,
            tools: Arc::default(),
            slot: tokio::sync::Mutex::new(Slot {
                connection: None,
                failures: 0,
                failed_at: None,
                last_error: None,
            }),
            details: RwLock::default(),
            stderr_tail: Arc::default(),
            read_only_mode: AtomicBool::new(false),
            max_result_bytes: AtomicUsize::new(panto_tools::DEFAULT_MAX_OUTPUT_BYTES),
        };
        let connection = source.open().await?;
        source.slot.lock().await.connection = Some(connection);
        Ok(source)
    }

    /// Opens a new session: connect, initialize, list the tools.
    async fn open(&self) -> Result<Arc<Connection>, Error> {
        // Read now and dropped after connecting: the token is never kept.
        let token = match (&self.config.bearer_token_env, self.config.transport()) {
            (Some(var), Ok(TransportKind::Http)) => match std::env::var(var) {
                Ok(token) => Some(token),
                Err(_) => {
                    return Err(Error::MissingToken {
                        server: self.name.clone(),
                        var: var.clone(),
                    })
                }
            },
            _ => None,
        };
        let timeout = self.config.startup_timeout();
        let started = tokio::time::timeout(
            timeout,
            connect(&self.config, token.as_deref(), &self.tools, &self.stderr_tail),
        )
        .await;
        drop(token);
        match started {
            Ok(Ok((connection, details))) => {
                *self.details.write().unwrap_or_else(|e| e.into_inner()) = details;
                Ok(Arc::new(connection))
            }
            Ok(Err(why)) => Err(Error::Start {
                server: self.name.clone(),
                why,
                stderr_tail: self.stderr_tail_after_exit().await,
            }),
            Err(_) => Err(Error::StartTimeout {
                server: self.name.clone(),
                secs: self.config.startup_timeout_secs,
                stderr_tail: self.stderr_tail.text(),
            }),
        }
    }

    /// The stderr tail once a server that failed to start has had its last words read from the
    /// pipe (its end reached; a fixed pause lost them on a loaded machine, under valgrind), or
    /// after a second at most.
    async fn stderr_tail_after_exit(&self) -> String {
        self.stderr_tail.settled(Duration::from_secs(1)).await;
        self.stderr_tail.text()
    }

    /// The server's name (the prefix of its tools' offered names).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// What the server said at the last initialization: protocol version, name, instructions,
    /// capabilities.
    pub fn details(&self) -> ServerDetails {
        self.details.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every tool the server lists that `allowed_tools`/`denied_tools` let through, in the
    /// server's order, whatever the read-only mode.
    pub fn all_tools(&self) -> Vec<McpTool> {
        self.tools
            .get()
            .iter()
            .filter(|t| self.filter.offers(&t.name))
            .cloned()
            .collect()
    }

    /// The tools offered to the model now: [`all_tools`](McpSource::all_tools), and in
    /// read-only mode only those annotated `readOnlyHint: true`.
    pub fn offered_tools(&self) -> Vec<McpTool> {
        let read_only = self.read_only_mode();
        self.all_tools()
            .into_iter()
            .filter(|t| !read_only || t.annotations.is_read_only())
            .collect()
    }

    /// The tool the server calls `name`, if it is offered.
    pub fn tool(&self, name: &str) -> Option<McpTool> {
        self.offered_tools().into_iter().find(|t| t.name == name)
    }

    /// Whether tool `name` is annotated read-only (false for a tool that is not offered). The
    /// CLI asks before calling a tool for which this is false, as for `bash`.
    pub fn is_read_only(&self, name: &str) -> bool {
        self.tool(name).is_some_and(|t| t.annotations.is_read_only())
    }

    /// Offers only read-only-annotated tools (on) or all (off, the default). The change reaches
    /// the agent at its next request, through the generation.
    pub fn set_read_only_mode(&self, on: bool) {
        if self.read_only_mode.swap(on, Ordering::SeqCst) != on {
            self.tools.bump();
        }
    }

    /// Whether read-only mode is on.
    pub fn read_only_mode(&self) -> bool {
        self.read_only_mode.load(Ordering::SeqCst)
    }

    /// Caps the text of each result at `bytes` (default
    /// [`panto_tools::DEFAULT_MAX_OUTPUT_BYTES`], the built-in tools' cap; at least 1024).
    pub fn set_max_result_bytes(&self, bytes: usize) {
        self.max_result_bytes.store(bytes.max(1024), Ordering::SeqCst);
    }

    /// The end of what the server wrote to its standard error (stdio servers).
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail.text()
    }

    /// Whether the server is up, or why not.
    pub async fn status(&self) -> ServerStatus {
        let slot = self.slot.lock().await;
        match &slot.connection {
            Some(connection) if !connection.is_closed() => ServerStatus::Running,
            _ => ServerStatus::Stopped {
                error: slot
                    .last_error
                    .clone()
                    .unwrap_or_else(|| format!("MCP server `{}` stopped", self.name)),
                retry_in: retry_in(&slot),
            },
        }
    }

    /// Ends the session now (a stdio server's process group is killed). A later call starts it
    /// again.
    pub async fn shutdown(&self) {
        let connection = self.slot.lock().await.connection.take();
        if let Some(connection) = connection {
            // Other calls may still hold the connection; cancelling the service ends it for
            // them too, and the last holder's drop kills the child.
            connection.service.cancellation_token().cancel();
        }
    }

    /// The live connection, restarting a dead server when its backoff allows.
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let mut slot = self.slot.lock().await;
        if let Some(connection) = &slot.connection {
            if !connection.is_closed() {
                return Ok(connection.clone());
            }
            slot.connection = None;
            let why = format!("MCP server `{}` stopped", self.name);
            note_failure(&mut slot, why);
        }
        let wait = retry_in(&slot);
        if !wait.is_zero() {
            return Err(format!(
                "{}; the next restart is tried in {:.1} s",
                slot.last_error.as_deref().unwrap_or("the server is not running"),
                wait.as_secs_f64()
            ));
        }
        match self.open().await {
            Ok(connection) => {
                slot.connection = Some(connection.clone());
                Ok(connection)
            }
            Err(e) => {
                let why = format!("{e} (restart attempt {})", slot.failures + 1);
                note_failure(&mut slot, why.clone());
                Err(why)
            }
        }
    }

    /// Records that `connection` died during a call (if it is still the current one).
    async fn died(&self, connection: &Arc<Connection>, why: String) {
        let mut slot = self.slot.lock().await;
        if slot.connection.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection)) {
            slot.connection = None;
            note_failure(&mut slot, why);
        }
    }

    async fn succeeded(&self) {
        let mut slot = self.slot.lock().await;
        slot.failures = 0;
        slot.failed_at = None;
    }

    async fn run(&self, call: ToolCall) -> ToolCallResult {
        let connection = match self.connection().await {
            Ok(c) => c,
            Err(why) => return ToolCallResult::error(why),
        };
        let tool = call.name.clone();
        let mut params = CallToolRequestParams::new(tool.clone());
        match call.input {
            serde_json::Value::Object(arguments) => params = params.with_arguments(arguments),
            serde_json::Value::Null => {}
            other => {
                return ToolCallResult::error(format!(
                    "the arguments of MCP tool `{}/{tool}` must be a JSON object, not {other}",
                    self.name
                ))
            }
        }
        let timeout = self.config.tool_timeout();
        // Dropping the request (timeout, cancellation) makes rmcp send `notifications/cancelled`.
        let peer = connection.service.peer().clone();
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, peer.call_tool(params)) => outcome,
            _ = call.cancel.cancelled() => {
                return ToolCallResult::error(format!(
                    "the call of MCP tool `{}/{tool}` was cancelled (the server was told)",
                    self.name
                ));
            }
        };
        match outcome {
            Err(_) => ToolCallResult::error(format!(
                "MCP tool `{}/{tool}` did not finish within {} s (tool_timeout_secs); the call was cancelled and \
                 the server keeps running",
                self.name, self.config.tool_timeout_secs
            )),
            Ok(Ok(result)) => {
                self.succeeded().await;
                // A tool that changed the tool list announced it before answering; let that
                // re-listing finish (briefly) so the next step offers the new list.
                tokio::task::yield_now().await;
                let _ = tokio::time::timeout(LIST_REFRESH_WAIT, self.tools.refreshing.lock()).await;
                crate::result::convert(result, self.max_result_bytes.load(Ordering::SeqCst))
            }
            Ok(Err(e)) => {
                // Give a dying child a moment to be noticed, so the message says what happened.
                if !connection.is_closed() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                if connection.is_closed() {
                    let tail = self.stderr_tail_after_exit().await;
                    let mut why = format!(
                        "MCP server `{}` stopped during the call of `{tool}` ({e}); it is restarted on the next call",
                        self.name
                    );
                    if !tail.is_empty() {
                        why.push_str("; its stderr ends with:\n");
                        why.push_str(&tail);
                    }
                    self.died(&connection, why.clone()).await;
                    ToolCallResult::error(why)
                } else {
                    ToolCallResult::error(format!("MCP tool `{}/{tool}` failed: {e}", self.name))
                }
            }
        }
    }
}

fn note_failure(slot: &mut Slot, why: String) {
    slot.failures += 1;
    slot.failed_at = Some(Instant::now());
    slot.last_error = Some(why);
}

fn retry_in(slot: &Slot) -> Duration {
    match slot.failed_at {
        Some(at) => backoff(slot.failures).saturating_sub(at.elapsed()),
        None => Duration::ZERO,
    }
}

/// The server's `readOnlyHint` annotations, as panto-tools' approval step reads them: a tool
/// annotated read-only runs without approval, as the built-in tools that change nothing do.
impl panto_tools::policy::SourceAnnotations for McpSource {
    fn source_name(&self) -> &str {
        self.name()
    }

    fn declares_read_only(&self, tool: &str) -> bool {
        self.is_read_only(tool)
    }
}

#[async_trait]
impl ToolSource for McpSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<ToolDecl> {
        self.offered_tools().iter().map(McpTool::declaration).collect()
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        if self.tool(&call.name).is_none() {
            return Ok(ToolCallResult::error(format!(
                "MCP server `{}` does not offer a tool `{}` (any more)",
                self.name, call.name
            )));
        }
        Ok(self.run(call).await)
    }

    fn generation(&self) -> u64 {
        self.tools.generation()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_starts_at_zero_and_is_capped() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(40), Duration::from_secs(30));
    }
}
