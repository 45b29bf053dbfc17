//! Test support for panto.
//!
//! The centre of this crate is [`MockServer`], a scripted LLM server that speaks the Anthropic
//! Messages API and the OpenAI Chat Completions API on 127.0.0.1. Every panto test (Rust, C, Go)
//! runs against it. A test queues [`Reply`]s, points panto at the server's base URL, and then
//! inspects what panto sent with [`MockServer::requests`]:
//!
//! ```no_run
//! # async fn demo() {
//! use panto_testkit::{script, Chunking, MockServer, Reply};
//!
//! let server = MockServer::start().await;
//! server.push(Reply::sse(script::anthropic_text("Hello!")).chunking(Chunking::EveryByte));
//! server.push(Reply::fixture("anthropic/text-basic.sse"));
//! // ... run panto with base_url = server.anthropic_base_url() ...
//! let requests = server.requests();
//! assert_eq!(requests[0].validation, None);
//! # }
//! ```
//!
//! The server writes responses by hand on a raw TCP socket, so a test controls exactly how the
//! bytes are split into writes ([`Chunking`]), how fast they come ([`Reply::delay`]) and how the
//! stream ends ([`Reply::stall_after`], [`Reply::close_after`], [`Reply::end_after`]).
//!
//! Every request to a provider endpoint is checked against the rules the real APIs enforce
//! (headers, roles, tool-call pairing, tool names, …). By default a request that breaks a rule is
//! answered with a provider-shaped 400 error naming the problem, so a test cannot pass while
//! panto sends something the real API would reject.
//!
//! [`script`] builds streams shaped exactly like the real APIs', and [`spec`] turns the JSON reply
//! descriptions of the `panto-mock` binary into [`Reply`]s.
//!
//! [`check_event`] validates event JSON against docs/events.schema.json; every test that sees an
//! event calls it (C and Go through the mock's `POST /__mock/check-events`).
//!
//! Beside the mock server, the support every crate's tests and benches share, so it is written
//! once: [`store_contract`] (the behaviour every `SessionStore` must show, and
//! [`store_contract_tests!`] to run it), [`postgres`] (a throwaway PostgreSQL server),
//! [`real_mcp`] (the real MCP servers the tests use, installed by `cargo xtask mcp-servers`),
//! [`child`] (a test binary running itself again as a second process), [`outside`] (a directory
//! outside the sandbox's writable set), [`otlp`] (an OpenTelemetry collector that decodes what
//! panto exports) and [`bench`](mod@bench) (the facts
//! file `cargo xtask bench` reads).
#![deny(missing_docs)]
#![deny(unreachable_pub)]

pub mod bench;
pub mod cache;
mod cargo;
pub mod child;
mod error;
mod events;
mod fixture;
mod h2c;
mod http;
pub mod mcp;
pub mod otlp;
pub mod outside;
pub mod postgres;
pub mod real_mcp;
mod recorded;
mod reply;
pub mod script;
mod server;
pub mod spec;
pub mod store_contract;
pub mod trace;
mod validate;

pub use cargo::cargo_command;
pub use error::Error;
pub use events::{assert_event, check_event, check_events, event_types, EVENT_SCHEMA};
pub use fixture::{fixture_bytes, fixtures_dir};
pub use recorded::RecordedRequest;
pub use reply::{Chunking, Reply};
pub use server::{MockServer, KEY_HEADER};
