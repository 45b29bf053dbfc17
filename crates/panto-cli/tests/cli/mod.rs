//! The test modules, by area.

mod basics;
mod config_errors;
mod formats;
mod images;
mod postgres;
mod print_text;
mod print_tools;
mod repl;
mod resume;
mod sessions;
mod support;
