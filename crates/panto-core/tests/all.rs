//! panto-core's integration tests: the agent end to end against the mock LLM server on 127.0.0.1,
//! for both API styles.

mod support;

mod branches;
mod compaction;
mod http;
mod persistence;
mod resume;
mod retry;
mod tools;
mod turn;
mod typed;
