//! panto-core's integration tests: the agent end to end against the mock LLM server on 127.0.0.1,
//! for every API style.

mod support;

mod branches;
mod cache;
mod compaction;
mod http;
mod persistence;
mod responses;
mod resume;
mod retry;
mod tools;
mod trace;
mod turn;
mod typed;
