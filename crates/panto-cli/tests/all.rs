//! Integration tests of the `panto` binary: each runs the real executable against an in-process
//! mock LLM server, with HOME and the XDG directories pointed at a temporary directory.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;
