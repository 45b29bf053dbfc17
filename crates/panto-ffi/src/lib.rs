//! libpanto: the C ABI over panto-core.
//!
//! C (and Go, through cgo) programs link `libpanto.so` (or `libpanto.a`) and include
//! `include/panto.h`, which `cargo xtask codegen` generates from this crate. The rules every
//! function follows:
//!
//! - One prefix, `panto_`, for every exported symbol and type. Handles are opaque pointers; no
//!   struct layout crosses the ABI. Each handle has a `_new`-style constructor and a `_free`;
//!   `_free(NULL)` does nothing.
//! - Fallible functions return a status (`PANTO_OK` = 0, negative = error, positive = a stream
//!   state such as `PANTO_END` or `PANTO_TIMEOUT`) and hand back an owned `panto_error` through
//!   their last argument (which may be NULL). There is no thread-local "last error".
//! - Strings in are copied during the call and must be UTF-8; a NULL or invalid one has its own
//!   status. Strings out are either borrowed from a handle (`const char *`, valid until the
//!   handle is freed) or owned (`char **`, freed with `panto_string_free`).
//! - Integer "enum" inputs are validated.
//! - A panic never crosses the boundary: every export runs behind a guard that reports
//!   `PANTO_ERR_PANIC`.
//! - `panto_runtime` owns the tokio runtime; every other handle keeps it alive, so handles may be
//!   freed in any order.
//!
//! docs/ffi.md is the guide: build and link flags, ownership, threads, events and their JSON.
#![deny(missing_docs)]
#![deny(unreachable_pub)]

use std::ffi::c_char;

mod agent;
mod builtin;
mod config;
mod control;
mod conversation;
mod cstr;
mod error;
mod event;
mod guard;
mod log;
mod mcp;
mod run;
mod runtime;
mod session;
mod status;
mod store;
mod tool;

pub use agent::*;
pub use builtin::{panto_agent_add_builtin_tools, panto_agent_rewind_files};
pub use config::{panto_config, panto_config_free, panto_config_new_json};
pub use control::{panto_run_follow_up, panto_run_steer};
pub use conversation::{
    panto_agent_add_message_json, panto_agent_compact_with_summary, panto_agent_new_with_conversation,
};
pub use cstr::panto_string_free;
pub use error::{
    panto_error, panto_error_code, panto_error_field, panto_error_free, panto_error_http_status, panto_error_message,
    panto_error_retry_after_ms,
};
pub use event::*;
pub use log::{
    panto_log_fn, panto_log_set_callback, PANTO_LOG_DEBUG, PANTO_LOG_ERROR, PANTO_LOG_INFO, PANTO_LOG_OFF,
    PANTO_LOG_TRACE, PANTO_LOG_WARN,
};
pub use mcp::panto_agent_add_mcp_servers;
pub use run::*;
pub use runtime::{panto_runtime, panto_runtime_free, panto_runtime_new};
pub use session::*;
pub use status::*;
pub use store::*;
pub use tool::*;

/// The version of the C ABI. It changes only when a function's signature or meaning changes
/// incompatibly, the event JSON included; adding functions, event kinds, event fields or status
/// codes does not change it. Version 2: `panto_event_json` returns panto's one event JSON
/// (docs/events.md, version 2), the same objects stream-json prints.
pub const PANTO_ABI_VERSION: u32 = 2;

/// The library version, e.g. "0.1.0" (the `PANTO_VERSION` the header was generated with).
///
/// Ownership: a static string; never free it. Thread safety: callable from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn panto_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version of the loaded library; compare it with `PANTO_ABI_VERSION` from the header
/// you compiled against.
///
/// Thread safety: callable from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn panto_abi_version() -> u32 {
    PANTO_ABI_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: panto_version returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(panto_version()) };
        assert_eq!(v.to_str(), Ok(env!("CARGO_PKG_VERSION")));
        assert_eq!(panto_abi_version(), PANTO_ABI_VERSION);
    }
}
