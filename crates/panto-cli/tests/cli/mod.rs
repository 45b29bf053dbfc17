//! The test modules, by area.

mod basics;
mod config_errors;
mod escapes;
mod formats;
mod images;
mod postgres;
mod print_text;
mod print_tools;
mod repl;
mod resume;
mod screen;
mod sessions;
mod store_dir;
mod support;
mod tools_hardening;
mod tree;
