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
//! context-overflow handling and compaction, usage and cost ([`PricingRegistry`](pricing::PricingRegistry)).
//!
//! Sessions are kept by a [`SessionStore`]: `panto-store-fs` (JSONL files) is the embedded
//! default; [`NullStore`] keeps nothing; [`MemoryStore`] keeps sessions in memory. A store
//! implements small primitives; [`Session::create`], [`Session::resolve`] and
//! [`Session::latest`] are built on them once, here. What a store implementer needs besides is in
//! [`store`].
//!
//! Tools are Rust values: [`tool_fn`] makes one from an async function of a `serde` +
//! `schemars` argument type (its JSON schema generated, doc comments as descriptions), or
//! implement [`Tool`] by hand with the re-exported [`macro@async_trait`]. [`Agent::run_typed`]
//! returns a typed value instead of a stream (structured output).
//!
//! # Examples
//!
//! The examples run against the test suite's mock server (hidden lines start it and script its
//! answers); against a real provider only the base URL and key differ.
//!
//! ## A streamed turn
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
//! let config = Config::new(
//!     ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
//!         .with_base_url(base_url)
//!         .with_api_key("my-api-key"),
//! );
//! let mut agent = Agent::new(config, panto_core::Session::create(NullStore::shared()), None)?;
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
//!
//! ## A custom tool
//!
//! The model calls `add`; panto deserialises its arguments into `AddArgs` (a mismatch goes back
//! to the model as an error result naming the field, and the function does not run), runs the
//! function, and sends the result back in the next request.
//!
//! ```
//! use panto_core::{tool_fn, Agent, ApiStyle, Config, Event, NullStore, ProviderConfig};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! # use panto_testkit::{script, MockServer, Reply};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> panto_core::Result<()> {
//! # let server = MockServer::start().await;
//! # server.push(Reply::sse(script::openai_tool_calls(&[("call_1", "add", r#"{"a":2,"b":40}"#)])));
//! # server.push(Reply::sse(script::openai_text("2 + 40 = 42")));
//! # let base_url = server.openai_base_url();
//! let config = Config::new(
//!     ProviderConfig::new(ApiStyle::OpenAiChat, "gpt-5")
//!         .with_base_url(base_url)
//!         .with_api_key("my-api-key"),
//! );
//! let mut agent = Agent::new(config, panto_core::Session::create(NullStore::shared()), None)?;
//! agent.register_tool(tool_fn("add", "Adds two integers.", |args: AddArgs, _call| async move {
//!     Ok(format!("{}", args.a + args.b))
//! }))?;
//!
//! let mut stream = agent.run("What is 2 + 40?".into());
//! while let Some(event) = stream.next().await? {
//!     if let Event::ToolDispatchComplete { content, .. } = event {
//!         assert_eq!(content, [panto_core::ToolResultContent::Text { text: "42".into() }]);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ## Sessions on disk, and resume
//!
//! With the JSONL store of `panto-store-fs` every message is on disk as soon as it completes. A
//! later process finds the session again (the latest, or by an id prefix) and continues it with
//! [`Agent::resume`]. (The turns here are consumed as a `futures::Stream`, with `futures`'
//! `TryStreamExt`; consumed by value, a stream frees the agent on the next line.)
//!
//! ```
//! use futures_util::TryStreamExt;
//! use panto_core::{Agent, ApiStyle, Config, Event, ProviderConfig, SessionStore};
//! use panto_store_fs::JsonlStore;
//! # use panto_testkit::{script, MockServer, Reply};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> panto_core::Result<()> {
//! # let server = MockServer::start().await;
//! # server.push(Reply::sse(script::anthropic_text("Noted: blue.")));
//! # server.push(Reply::sse(script::anthropic_text("Blue.")));
//! # let dir = tempfile::tempdir().expect("a temporary directory");
//! # let sessions = dir.path().join("sessions");
//! # let base_url = server.anthropic_base_url();
//! let config = Config::new(
//!     ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
//!         .with_base_url(base_url)
//!         .with_api_key("my-api-key"),
//! );
//!
//! // First run: a new session.
//! let store = JsonlStore::new(&sessions);
//! let mut agent = Agent::new(config.clone(), panto_core::Session::create(store.clone()), None)?;
//! let _: Vec<Event> = agent.run("My favourite colour is blue.".into()).try_collect().await?;
//! let id = agent.session_id().to_owned();
//! drop((agent, store)); // the store releases the session's file
//!
//! // A later run: the latest session, continued.
//! let store = JsonlStore::new(&sessions);
//! let session = panto_core::Session::latest(store.clone()).await?.expect("a stored session");
//! assert_eq!(session.id(), id);
//! let mut agent = Agent::resume(config, session).await?;
//! assert_eq!(agent.conversation().messages.len(), 2);
//! let _: Vec<Event> = agent.run("What is my favourite colour?".into()).try_collect().await?;
//! assert_eq!(agent.conversation().messages.len(), 4);
//! # Ok(())
//! # }
//! ```
//!
//! ## Cancelling a turn
//!
//! [`Stream::cancel_token`] cancels from anywhere (a Ctrl-C handler, another task); dropping the
//! stream or calling [`Stream::cancel`] does too. Running tools see their [`ToolCall::cancel`]
//! token fire, every dispatched call still gets a result, and what the turn produced is kept, so
//! the conversation stays valid for the next turn.
//!
//! ```
//! use panto_core::{tool_fn, Agent, ApiStyle, Config, Error, Event, NullStore, ProviderConfig};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! # use panto_testkit::{script, MockServer, Reply};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct WaitArgs {}
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> panto_core::Result<()> {
//! # let server = MockServer::start().await;
//! # server.push(Reply::sse(script::anthropic_tool_uses(&[("toolu_1", "wait", "{}")])));
//! # let base_url = server.anthropic_base_url();
//! # let config = Config::new(
//! #     ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
//! #         .with_base_url(base_url)
//! #         .with_api_key("key"),
//! # );
//! let mut agent = Agent::new(config, panto_core::Session::create(NullStore::shared()), None)?;
//! // A slow tool that stops when its call is cancelled.
//! agent.register_tool(tool_fn("wait", "Waits for a long time.", |_: WaitArgs, call| async move {
//!     call.cancel.cancelled().await;
//!     Ok("stopped early")
//! }))?;
//!
//! let mut stream = agent.run("Wait, please.".into());
//! let cancel = stream.cancel_token(); // clone it into a Ctrl-C handler, say
//! let outcome = loop {
//!     match stream.next().await {
//!         Ok(Some(Event::ToolDispatchStart { .. })) => cancel.cancel(),
//!         Ok(Some(_)) => {}
//!         Ok(None) => break Ok(()),
//!         Err(e) => break Err(e),
//!     }
//! };
//! drop(stream);
//! assert!(matches!(outcome, Err(Error::Cancelled)));
//! // The call got a result, so the next request is valid.
//! assert_eq!(agent.conversation().messages.len(), 3);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
#![deny(unreachable_pub)]

/// The README's examples, compiled as doc tests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

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
mod identity;
mod image;
pub mod pricing;
mod provider;
mod registry;
pub mod secret;
pub mod store;
mod tool;
mod trace;
pub mod wire;

pub use agent::{
    AfterTool, Agent, BeforeTool, CompactionResult, FileRestore, Hook, QueueMode, RunControl, Stream, StreamState,
    UserMessage, DEFAULT_HOOK_TIMEOUT,
};
pub use config::{
    ApiStyle, CacheMode, CacheTtl, CompactionConfig, Config, ProviderConfig, ReasoningEffort, RetryConfig,
    DEFAULT_COMPACTION_PROMPT,
};
pub use conversation::{ContentBlock, Conversation, Message, Role, StopReason, SystemMode, ToolResultContent, Usage};
pub use error::{Error, Result};
pub use event::{event_schema, BlockKind, ContentDelta, Event, RetryInfo, ToolDetails, EVENT_SCHEMA_VERSION};
pub use provider::http::http_client_builder;
pub use provider::models::list_models;
pub use registry::{is_tool_name, MAX_TOOL_NAME_LEN};
pub use store::info::SessionInfo;
pub use store::memory::MemoryStore;
pub use store::null::NullStore;
pub use store::seam::SessionStore;
pub use store::session::Session;
pub use tool::{tool_fn, FileCheckpoints, ResultPart, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};

/// The attribute that makes [`Tool`], [`ToolSource`] and [`SessionStore`] implementations async,
/// re-exported so that implementing them needs no `async-trait` dependency of your own: write
/// `#[panto_core::async_trait]` on the `impl`.
pub use async_trait::async_trait;

pub use tokio_util::sync::CancellationToken;
