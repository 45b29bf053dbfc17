//! panto-tools' integration tests: the tools through their public `Tool` interface, on real
//! files and processes.

mod support;

// The sandbox is Linux only; a kernel without Landlock fails these tests (the sandbox fails
// closed, and so does its test).
mod policy;
mod rewind;
mod rules;
#[cfg(target_os = "linux")]
mod sandbox;
mod search;
mod web_fetch;
#[cfg(target_os = "linux")]
mod write_race;
