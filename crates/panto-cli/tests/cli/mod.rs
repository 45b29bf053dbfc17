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

/// The throwaway PostgreSQL server of panto-store-postgres's own tests, shared by path so there
/// is one implementation of starting it (as the `postgres` user when run as root).
#[path = "../../../panto-store-postgres/tests/pg/server.rs"]
mod pg_server;
