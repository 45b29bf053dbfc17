//! Starting one connection to a server: the child process or the HTTP transport, the MCP
//! initialization (protocol version negotiated by rmcp), and the client side's handler, which
//! refreshes the tool list on `notifications/tools/list_changed`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use panto_tools::process::{self, ChildSetup, GroupChild};
use panto_tools::SandboxConfig;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient, RunningService, RunningServiceCancellationToken};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransport, StreamableHttpClientTransportConfig};
use rmcp::ClientHandler;
use tokio::sync::oneshot;

use crate::config::{ServerConfig, TransportKind};
use crate::details::ServerDetails;
use crate::stderr::{self, StderrTail};
use crate::tools::ToolList;

/// One live session with a server. Dropping it ends the session and kills a stdio server's
/// whole process group.
pub(crate) struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    /// Set when a stdio server's process exited (whoever still holds its stdout).
    exited: Arc<AtomicBool>,
    /// Dropped with the connection: tells the process watcher to kill the group.
    _stop_watching: Option<oneshot::Sender<()>>,
}

impl Connection {
    /// Whether the session has ended (the server exited, closed its output or the HTTP
    /// transport failed for good).
    pub(crate) fn is_closed(&self) -> bool {
        self.exited.load(Ordering::SeqCst) || self.service.is_closed() || self.service.peer().is_transport_closed()
    }
}

/// Owns a stdio server's process until it exits or the connection drops, then kills its whole
/// process group. The server's exit, not the end of its stdout, is what counts: a child it
/// started may still hold the pipe open, and the session would otherwise wait on it forever.
/// An exit marks the connection closed and ends the session, so a call in flight returns an
/// error at once and the next call restarts the server.
async fn watch(
    mut child: GroupChild,
    stop: oneshot::Receiver<()>,
    session: RunningServiceCancellationToken,
    exited: Arc<AtomicBool>,
) {
    tokio::select! {
        _ = child.child().wait() => {
            exited.store(true, Ordering::SeqCst);
            session.cancel();
        }
        _ = stop => {}
    }
    // The drop kills the group: the children the server left behind go with it.
    drop(child);
}

/// The client side of the session: says who panto is, and re-lists the tools when the server
/// says they changed.
#[derive(Clone)]
pub(crate) struct Handler {
    pub tools: Weak<ToolList>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("panto", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(tools) = self.tools.upgrade() else { return };
        // rmcp runs each notification handler on its own task, so this may wait on a request.
        // Announcements coalesce into one pending re-listing (a flag, not a queue): while one is
        // pending, later ones return at once, so at most one re-listing runs and one waits, not one
        // waiting task and one listing each.
        if tools.refresh_pending.swap(true, Ordering::SeqCst) {
            return;
        }
        let _refreshing = tools.refreshing.lock().await;
        // Cleared before listing: an announcement from now on asks for another listing.
        tools.refresh_pending.store(false, Ordering::SeqCst);
        // A listing past a limit keeps the previous list.
        if let Ok(listed) = crate::listing::list_tools(&context.peer).await {
            tools.replace(listed);
        }
    }
}

/// How long a start whose initialization failed waits for the server's exit, to report the exit
/// rather than the failed write it caused.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a start failed, before the server's name and stderr tail are added.
pub(crate) type StartFailure = String;

/// Connects to the server of `config` (validated), initializes the session and lists its tools
/// into `tools`. Standard error of a stdio server goes to `tail` and the configured log.
pub(crate) async fn connect(
    config: &ServerConfig,
    bearer_token: Option<&str>,
    tools: &Arc<ToolList>,
    tail: &Arc<StderrTail>,
) -> Result<(Connection, ServerDetails), StartFailure> {
    let handler = Handler {
        tools: Arc::downgrade(tools),
    };
    let exited = Arc::new(AtomicBool::new(false));
    let (service, stop_watching) = match config.transport()? {
        TransportKind::Stdio => {
            let (mut child, log) = spawn(config).await?;
            let process = child.child();
            let (Some(stdout), Some(stdin), Some(stderr)) =
                (process.stdout.take(), process.stdin.take(), process.stderr.take())
            else {
                return Err("the child's pipes were not set up".into());
            };
            stderr::pump(stderr, log, tail.clone());
            // A server that exits during the initialization fails the start at once, even if
            // a child it left holds its stdout open.
            let service = tokio::select! {
                service = rmcp::serve_client(handler, (stdout, stdin)) => match service {
                    Ok(service) => service,
                    // A server that exits before panto writes its first request fails that write
                    // (a broken pipe) before the exit is seen: the exit is the cause to report.
                    Err(e) => {
                        return Err(match tokio::time::timeout(EXIT_GRACE, child.child().wait()).await {
                            Ok(Ok(status)) => format!("it exited during the MCP initialization ({status})"),
                            _ => format!("the MCP initialization failed: {e}"),
                        });
                    }
                },
                status = child.child().wait() => {
                    return Err(match status {
                        Ok(status) => format!("it exited during the MCP initialization ({status})"),
                        Err(e) => format!("waiting on its process failed: {e}"),
                    });
                }
            };
            let (stop, stopped) = oneshot::channel();
            tokio::spawn(watch(child, stopped, service.cancellation_token(), exited.clone()));
            (service, Some(stop))
        }
        TransportKind::Http => {
            let transport = http_transport(config, bearer_token)?;
            let service = rmcp::serve_client(handler, transport)
                .await
                .map_err(|e| format!("the MCP initialization failed: {e}"))?;
            (service, None)
        }
    };
    let details = ServerDetails::from_peer(service.peer());
    let listed = crate::listing::list_tools(service.peer()).await?;
    tools.replace(listed);
    let connection = Connection {
        service,
        exited,
        _stop_watching: stop_watching,
    };
    Ok((connection, details))
}

/// Starts a stdio server through the audited child-process module: its own process group,
/// killed with the group when the connection drops, and by the kernel when panto dies.
async fn spawn(config: &ServerConfig) -> Result<(GroupChild, Option<tokio::fs::File>), StartFailure> {
    let program = config.command.as_deref().unwrap_or_default();
    let log = match &config.stderr_log {
        Some(path) => Some(
            stderr::open_log(path)
                .await
                .map_err(|e| format!("cannot open its stderr log {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let mut command = std::process::Command::new(program);
    // No provider key reaches a server unless its own `env` table passes one.
    process::scrub_key_variables(&mut command, &config.scrub_env);
    command
        .args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    let setup = ChildSetup::new(SandboxConfig::off());
    let child = process::spawn(command, &setup)
        .map_err(|e| format!("cannot run {program:?}: {}", process::explain_spawn_error(&e)))?;
    Ok((child, log))
}

/// The streamable HTTP transport with the configured headers and bearer token.
fn http_transport(
    config: &ServerConfig,
    bearer_token: Option<&str>,
) -> Result<StreamableHttpClientTransport<crate::http::HttpClient>, StartFailure> {
    let url = config.url.as_deref().unwrap_or_default();
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let header = http::HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`headers`: {name:?} is not a valid header name"))?;
        // The value is not quoted back: it may hold a credential.
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|_| format!("`headers`: the value of {name:?} is not a valid header value"))?;
        headers.insert(header, value);
    }
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    if let Some(token) = bearer_token {
        transport = transport.auth_header(token);
    }
    let client = crate::http::HttpClient::new().map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    Ok(StreamableHttpClientTransport::with_client(client, transport))
}
