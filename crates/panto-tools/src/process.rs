//! Starting programs the way the tools do, and the tool work this process has in flight. For
//! panto-mcp, which starts MCP stdio servers through [`spawn`], and for front ends: the CLI waits
//! at exit for what [`running`] reports.
//!
//! A child started with [`spawn`] runs in its own session and process group with no controlling
//! terminal, is killed with its group when its [`GroupChild`] is dropped and when panto dies, and
//! runs in the [`ChildSetup`]'s sandbox (or fails to start: it never runs unconfined when a
//! sandbox was asked for). [`scrub_key_variables`] removes the provider key variables from the
//! environment it would inherit. The audited `unsafe` code that does this is private to the
//! crate; this module is its public face.

pub use crate::child::{explain_spawn_error, spawn, ChildSetup, GroupChild};
pub use crate::options::{scrub_key_variables, KEY_VARIABLES};
pub use crate::running::{global as running, Running, RunningGuard};
