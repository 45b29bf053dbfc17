//! Tools from [Model Context Protocol](https://modelcontextprotocol.io) servers, for every panto
//! embedder.
//!
//! An [`McpSource`] is one server, reached over stdio (a child process panto starts in its own
//! process group, killed with it, and killed by the kernel if panto dies) or streamable HTTP
//! (with headers and a bearer token read from an environment variable). It implements
//! [`panto_core::ToolSource`], so its tools are offered to the model as `<server>__<tool>`. It
//! is built on the official Rust SDK, [`rmcp`](https://docs.rs/rmcp), which negotiates the
//! protocol version.
//!
//! What a server does wrong never ends a turn: a crash, a hang past `tool_timeout_secs`, a
//! malformed message or a cancelled turn become error results naming the server, the server is
//! restarted on the next call (with backoff when it keeps dying), and the session stays valid.
//! A tool listing is bounded ([`MAX_LIST_PAGES`], [`MAX_LISTED_TOOLS`], [`MAX_LISTED_BYTES`],
//! [`MAX_LIST_SECS`]): past a limit a start fails naming the server and the limit, and a
//! re-listing keeps the previous list. A stdio server's exit is noticed even while a child it
//! started holds its output, and that child is killed with the server's process group.
//! A server that announces a changed tool list is re-listed, and the agent offers the new list
//! from its next request on, with the other tools in the same place (so the provider's prompt
//! cache keeps holding). Results keep text, images (through panto's image pipeline), resources
//! (as text), `structuredContent` (as JSON text when there is no text) and `isError`, capped
//! like the built-in tools' output.
//!
//! Tool annotations ([`ToolAnnotations`]) tell an embedder which tools claim to be read-only
//! (the CLI asks before calling any other, as for `bash`), and [`McpSource::set_read_only_mode`]
//! offers only those.
//!
//! # Example
//!
//! ```no_run
//! use panto_core::{Agent, ApiStyle, Config, MemoryStore, ProviderConfig, Session};
//! use panto_mcp::{start_all, ServerConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = ProviderConfig::new(ApiStyle::AnthropicMessages, "model")
//!     .with_base_url("http://127.0.0.1:9")
//!     .with_api_key("key");
//! let mut agent = Agent::new(Config::new(provider), Session::create(MemoryStore::new()), None)?;
//!
//! let servers = vec![
//!     (
//!         "git".to_owned(),
//!         ServerConfig::stdio("mcp-server-git")
//!             .args(["--repository", "."])
//!             .stderr_log("/tmp/panto-mcp/git.log"),
//!     ),
//!     (
//!         "docs".to_owned(),
//!         ServerConfig::http("http://127.0.0.1:3001/mcp").bearer_token_env("DOCS_TOKEN"),
//!     ),
//! ];
//! let started = start_all(servers).await;
//! // Servers that did not start, each named with the end of its stderr: for the embedder to show.
//! let warnings: Vec<String> = started.warnings.iter().map(|w| w.to_string()).collect();
//! # let _ = warnings;
//! for source in started.sources {
//!     agent.register_tool_source(source)?;
//! }
//! # Ok(()) }
//! ```
//!
//! Configuration is plain serde ([`ServerConfig`]): the CLI reads it from
//! `[mcp.servers.NAME]` tables, the C ABI from JSON, with unknown fields refused by name.

#![deny(missing_docs)]
#![deny(unreachable_pub)]

mod config;
mod connect;
mod details;
mod error;
mod filter;
mod http;
mod listing;
mod result;
mod source;
mod start;
mod stderr;
mod tools;

pub use config::{ServerConfig, TransportKind, DEFAULT_STARTUP_TIMEOUT_SECS, DEFAULT_TOOL_TIMEOUT_SECS};
pub use details::ServerDetails;
pub use error::Error;
pub use listing::{MAX_LISTED_BYTES, MAX_LISTED_TOOLS, MAX_LIST_PAGES, MAX_LIST_SECS};
pub use source::{McpSource, ServerStatus};
pub use start::{start_all, StartWarning, Started};
pub use tools::{McpTool, ToolAnnotations};
