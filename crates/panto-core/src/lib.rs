//! panto-core: the engine of panto, a runtime for LLM agents.
//!
//! An [`Agent`] owns a [`Conversation`], a [`Session`] (where the conversation is persisted) and
//! its tools. [`Agent::run`] starts a turn and returns a [`Stream`] of typed [`Event`]s: the
//! provider's message streams in, tool calls run (concurrently, results back in call order), and
//! the loop goes on until the model answers without calling a tool. Everything the agent adds to
//! the conversation is persisted as it happens; the embedder never calls a persist function.
//!
//! Providers: the Anthropic Messages API and the OpenAI Chat Completions API (with every
//! OpenAI-compatible server), both streamed over SSE, with retry (`retry-after` honoured),
//! context-overflow handling and compaction, usage and cost ([`PricingRegistry`]).
//!
//! Sessions are kept by a [`SessionStore`]: `panto-store-fs` (JSONL files) is the embedded
//! default; [`NullStore`] keeps nothing; [`MemoryStore`] keeps sessions in memory. A store
//! implements small primitives; [`Session::create`], [`Session::resolve`] and
//! [`Session::latest`] are built on them once, here. What a store implementer needs besides is in
//! [`store`].
//!
//! # Example
//!
//! A streamed turn against a local server (here the test suite's mock, which answers like the
//! Anthropic API):
//!
//! ```
//! use panto_core::{Agent, ApiStyle, Config, ContentDelta, Event, NullStore, ProviderConfig, Session};
//! # use panto_testkit::{script, MockServer, Reply};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> panto_core::Result<()> {
//! # let server = MockServer::start().await;
//! # server.push(Reply::sse(script::anthropic_text("Hello!")));
//! # let base_url = server.anthropic_base_url();
//! let config = Config::new(ProviderConfig::new(
//!     ApiStyle::AnthropicMessages,
//!     base_url,
//!     "my-api-key",
//!     "claude-sonnet-4-5",
//! ));
//! let mut agent = Agent::new(config, Session::create(NullStore::shared()), None)?;
//! let mut stream = agent.run("Say hello".into());
//! let mut text = String::new();
//! while let Some(event) = stream.next().await? {
//!     if let Event::Delta { delta: ContentDelta::Text(t), .. } = event {
//!         text.push_str(&t);
//!     }
//! }
//! drop(stream);
//! assert_eq!(text, "Hello!");
//! assert_eq!(agent.conversation().messages.len(), 2);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

/// Benchmark and fuzzing entry points into the private wire layer; not part of the API.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
#[path = "bench_internals.rs"]
pub mod __bench;
mod agent;
mod config;
mod conversation;
mod error;
mod event;
mod image;
mod pricing;
mod provider;
mod registry;
pub mod store;
mod tool;

pub use agent::{Agent, CompactionResult, Stream, StreamState, UserMessage};
pub use config::{
    ApiStyle, CompactionConfig, Config, ProviderConfig, ReasoningEffort, RetryConfig, WireIdentity,
    DEFAULT_COMPACTION_PROMPT,
};
pub use conversation::{ContentBlock, Conversation, Message, Role, StopReason, SystemMode, ToolResultContent, Usage};
pub use error::{Error, Result};
pub use event::{BlockKind, ContentDelta, Event, RetryInfo, ToolDetails};
pub use pricing::{format_micro_cents, Pricing, PricingRegistry};
pub use registry::{is_wire_name, MAX_WIRE_NAME};
pub use store::info::SessionInfo;
pub use store::memory::MemoryStore;
pub use store::null::NullStore;
pub use store::seam::{CompactionRecord, PersistentMessage, SessionStore};
pub use store::session::Session;
pub use tool::{ResultPart, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};

pub use tokio_util::sync::CancellationToken;
