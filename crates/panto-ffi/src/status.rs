//! Status codes: what every fallible function returns.
//!
//! Zero is success, positive values are stream states a caller loops on (end, timeout), and
//! negative values are errors. Each error comes with an owned `panto_error` holding the same code
//! and a message that says what was wrong and where.

use std::ffi::c_char;

/// Success.
pub const PANTO_OK: i32 = 0;
/// `panto_run_next_event`: the turn is over; no more events will come.
pub const PANTO_END: i32 = 1;
/// `panto_run_next_event`: no event arrived within the timeout; call again.
pub const PANTO_TIMEOUT: i32 = 2;

/// A required pointer argument was NULL. The message names the argument.
pub const PANTO_ERR_NULL: i32 = -1;
/// A string argument was not valid UTF-8. The message names the argument and the byte offset.
pub const PANTO_ERR_UTF8: i32 = -2;
/// An argument had a value outside its domain (an unknown flag value, a bad tool name or schema,
/// a malformed session id).
pub const PANTO_ERR_INVALID_ARGUMENT: i32 = -3;
/// The configuration JSON was malformed or incomplete. The message names the field.
pub const PANTO_ERR_CONFIG: i32 = -4;
/// No session matched the id, prefix, or (for "latest") the store is empty.
pub const PANTO_ERR_SESSION_NOT_FOUND: i32 = -5;
/// A session id prefix matched several sessions; the message lists them.
pub const PANTO_ERR_SESSION_AMBIGUOUS: i32 = -6;
/// The session is open for writing by another process or store handle.
pub const PANTO_ERR_SESSION_IN_USE: i32 = -7;
/// The session store failed: I/O error or corrupt data (the message names file and line).
pub const PANTO_ERR_STORE: i32 = -8;
/// The provider failed: HTTP error, connection failure, malformed stream, idle timeout, context
/// overflow (after retries).
pub const PANTO_ERR_PROVIDER: i32 = -9;
/// The turn was cancelled with `panto_run_cancel` (or its run handle freed).
pub const PANTO_ERR_CANCELLED: i32 = -10;
/// The agent has a live run, or a run whose end has not been read yet (even one that already
/// failed): read it to `PANTO_END` or its error, or free the run, first.
pub const PANTO_ERR_BUSY: i32 = -11;
/// A tool could not be added to an agent: its name is taken. (A malformed name or schema is
/// `PANTO_ERR_INVALID_ARGUMENT` from `panto_tool_new`.)
pub const PANTO_ERR_TOOL: i32 = -12;
/// The operation is not valid now (nothing to compact, nothing to retry, step limit reached, an
/// agent lost to an internal panic, a blocking call made from inside a tool callback).
pub const PANTO_ERR_STATE: i32 = -13;
/// libpanto panicked internally; the panic was caught at the boundary. Please report it.
pub const PANTO_ERR_PANIC: i32 = -14;
/// Any other failure.
pub const PANTO_ERR_OTHER: i32 = -15;

/// The constant name of a status code, e.g. `"PANTO_ERR_NULL"` for -1, or `"PANTO_UNKNOWN"`.
///
/// Ownership: the string is static; never free it. Thread safety: callable from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn panto_status_name(status: i32) -> *const c_char {
    let name: &'static [u8] = match status {
        PANTO_OK => b"PANTO_OK\0",
        PANTO_END => b"PANTO_END\0",
        PANTO_TIMEOUT => b"PANTO_TIMEOUT\0",
        PANTO_ERR_NULL => b"PANTO_ERR_NULL\0",
        PANTO_ERR_UTF8 => b"PANTO_ERR_UTF8\0",
        PANTO_ERR_INVALID_ARGUMENT => b"PANTO_ERR_INVALID_ARGUMENT\0",
        PANTO_ERR_CONFIG => b"PANTO_ERR_CONFIG\0",
        PANTO_ERR_SESSION_NOT_FOUND => b"PANTO_ERR_SESSION_NOT_FOUND\0",
        PANTO_ERR_SESSION_AMBIGUOUS => b"PANTO_ERR_SESSION_AMBIGUOUS\0",
        PANTO_ERR_SESSION_IN_USE => b"PANTO_ERR_SESSION_IN_USE\0",
        PANTO_ERR_STORE => b"PANTO_ERR_STORE\0",
        PANTO_ERR_PROVIDER => b"PANTO_ERR_PROVIDER\0",
        PANTO_ERR_CANCELLED => b"PANTO_ERR_CANCELLED\0",
        PANTO_ERR_BUSY => b"PANTO_ERR_BUSY\0",
        PANTO_ERR_TOOL => b"PANTO_ERR_TOOL\0",
        PANTO_ERR_STATE => b"PANTO_ERR_STATE\0",
        PANTO_ERR_PANIC => b"PANTO_ERR_PANIC\0",
        PANTO_ERR_OTHER => b"PANTO_ERR_OTHER\0",
        _ => b"PANTO_UNKNOWN\0",
    };
    name.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn name(status: i32) -> String {
        // SAFETY: panto_status_name always returns a pointer to a static NUL-terminated string.
        unsafe { CStr::from_ptr(panto_status_name(status)) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn every_code_has_its_own_name() {
        let codes = [
            PANTO_OK,
            PANTO_END,
            PANTO_TIMEOUT,
            PANTO_ERR_NULL,
            PANTO_ERR_UTF8,
            PANTO_ERR_INVALID_ARGUMENT,
            PANTO_ERR_CONFIG,
            PANTO_ERR_SESSION_NOT_FOUND,
            PANTO_ERR_SESSION_AMBIGUOUS,
            PANTO_ERR_SESSION_IN_USE,
            PANTO_ERR_STORE,
            PANTO_ERR_PROVIDER,
            PANTO_ERR_CANCELLED,
            PANTO_ERR_BUSY,
            PANTO_ERR_TOOL,
            PANTO_ERR_STATE,
            PANTO_ERR_PANIC,
            PANTO_ERR_OTHER,
        ];
        let mut names: Vec<String> = codes.iter().map(|&c| name(c)).collect();
        assert!(
            names.iter().all(|n| n.starts_with("PANTO_") && n != "PANTO_UNKNOWN"),
            "{names:?}"
        );
        names.sort();
        names.dedup();
        assert_eq!(names.len(), codes.len());
        assert_eq!(name(-99), "PANTO_UNKNOWN");
        assert_eq!(name(PANTO_ERR_NULL), "PANTO_ERR_NULL");
    }
}
