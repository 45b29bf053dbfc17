//! The test modules, by area.

mod basics;
mod cache;
mod config_errors;
mod escapes;
mod formats;
mod hooks;
mod images;
mod log;
mod markdown;
mod mcp;
mod otel;
mod postgres;
mod print_control;
mod print_text;
mod print_tools;
mod repl;
mod responses;
mod resume;
mod sandbox;
mod screen;
mod sessions;
mod store_dir;
mod support;
mod tools_hardening;
mod tree;
mod turn_screen;
