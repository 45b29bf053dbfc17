//! `panto_error`: the owned error every fallible function hands back through its last argument.
//!
//! There is deliberately no thread-local "last error": Go moves goroutines between OS threads, so
//! an error must travel with the call that produced it.

use std::ffi::{c_char, CString};

use panto_core::Error;

use crate::guard::{free, Handle};
use crate::status::*;

/// Why a call failed, before it becomes a `panto_error` handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// A negative status code.
    pub(crate) code: i32,
    /// What went wrong and where, as a sentence.
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A required pointer argument was NULL.
    pub(crate) fn null(argument: &str) -> Self {
        Failure::new(PANTO_ERR_NULL, format!("argument `{argument}` is NULL"))
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure::new(PANTO_ERR_INVALID_ARGUMENT, message)
    }

    pub(crate) fn state(message: impl Into<String>) -> Self {
        Failure::new(PANTO_ERR_STATE, message)
    }

    /// The error for a function that blocks on the runtime but was called from one of its
    /// threads (a tool callback): blocking there would deadlock or panic.
    pub(crate) fn in_callback(function: &str) -> Self {
        Failure::state(format!(
            "{function} blocks and cannot be called from inside a tool callback (a libpanto runtime thread)"
        ))
    }

    /// The error for a panic caught at the boundary.
    pub(crate) fn panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        Failure::new(PANTO_ERR_PANIC, format!("internal panic in libpanto: {detail}"))
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let code = match &e {
            _ if e.is_provider_failure() => PANTO_ERR_PROVIDER,
            Error::InvalidHeader { .. } => PANTO_ERR_CONFIG,
            Error::InvalidImage { .. } => PANTO_ERR_INVALID_ARGUMENT,
            Error::InvalidTool { .. } | Error::HookFailed { .. } => PANTO_ERR_TOOL,
            Error::StepLimit(_)
            | Error::NothingToCompact
            | Error::NothingToRetry
            | Error::SessionNotLoaded { .. }
            | Error::UnknownEntry { .. }
            | Error::Unsupported(_) => PANTO_ERR_STATE,
            Error::SessionInUse { .. } => PANTO_ERR_SESSION_IN_USE,
            Error::SessionNotFound(_) => PANTO_ERR_SESSION_NOT_FOUND,
            Error::AmbiguousSession { .. } => PANTO_ERR_SESSION_AMBIGUOUS,
            Error::InvalidSessionId(_) => PANTO_ERR_INVALID_ARGUMENT,
            Error::CorruptSession { .. } | Error::Store { .. } => PANTO_ERR_STORE,
            Error::Cancelled => PANTO_ERR_CANCELLED,
            _ => PANTO_ERR_OTHER,
        };
        Failure::new(code, e.to_string())
    }
}

/// An error: a negative status code and a message.
///
/// Ownership: returned owned through a `panto_error **err` out-parameter; free it with
/// `panto_error_free`. Thread safety: an error is plain data; it may be read from any thread, and
/// moved between threads, but not freed while another thread reads it.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_error {
    code: i32,
    message: CString,
}

impl Handle for panto_error {}

impl panto_error {
    pub(crate) fn from_failure(failure: Failure) -> Self {
        panto_error {
            code: failure.code,
            message: crate::cstr::to_cstring(failure.message),
        }
    }
}

/// The status code of `err` (negative), or `PANTO_ERR_NULL` when `err` is NULL.
///
/// Thread safety: callable from any thread.
///
/// # Safety
/// `err` must be NULL or an error returned by libpanto and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_error_code(err: *const panto_error) -> i32 {
    // SAFETY: the caller passes NULL or a live error handle (see the function's contract).
    match unsafe { err.as_ref() } {
        Some(e) => e.code,
        None => PANTO_ERR_NULL,
    }
}

/// The message of `err`: what went wrong and where (for invalid UTF-8, say, the argument's name
/// and the offset of the first bad byte). Returns "" when `err` is NULL.
///
/// Ownership: borrowed from `err`; valid until `panto_error_free(err)`. Thread safety: callable
/// from any thread.
///
/// # Safety
/// `err` must be NULL or an error returned by libpanto and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_error_message(err: *const panto_error) -> *const c_char {
    // SAFETY: the caller passes NULL or a live error handle (see the function's contract).
    match unsafe { err.as_ref() } {
        Some(e) => e.message.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Frees an error. `panto_error_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per error.
///
/// # Safety
/// `err` must be NULL or an error returned by libpanto and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_error_free(err: *mut panto_error) {
    // SAFETY: the caller gives up an error libpanto handed out and not yet freed (or NULL).
    unsafe { free(err) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_their_codes() {
        let cases = [
            (Error::Cancelled, PANTO_ERR_CANCELLED),
            (Error::SessionNotFound("abc".into()), PANTO_ERR_SESSION_NOT_FOUND),
            (Error::InvalidSessionId("../x".into()), PANTO_ERR_INVALID_ARGUMENT),
            (
                Error::Connect {
                    url: "http://127.0.0.1:1/v1/messages".into(),
                    message: "refused".into(),
                },
                PANTO_ERR_PROVIDER,
            ),
            (
                Error::Redirect {
                    status: 307,
                    location: Some("http://elsewhere/".into()),
                },
                PANTO_ERR_PROVIDER,
            ),
            (
                Error::NotEventStream {
                    content_type: "text/html".into(),
                    body_start: "<html>".into(),
                },
                PANTO_ERR_PROVIDER,
            ),
            (Error::SessionInUse { id: "0190".into() }, PANTO_ERR_SESSION_IN_USE),
            (
                Error::InvalidHeader {
                    name: "x-team".into(),
                    reason: "invalid value".into(),
                },
                PANTO_ERR_CONFIG,
            ),
            (
                Error::InvalidImage {
                    index: 0,
                    message: "unknown format".into(),
                },
                PANTO_ERR_INVALID_ARGUMENT,
            ),
            (Error::NothingToCompact, PANTO_ERR_STATE),
            (Error::NothingToRetry, PANTO_ERR_STATE),
            (Error::EmptySummary, PANTO_ERR_PROVIDER),
            (
                Error::OverflowCompactionFailed {
                    source: Box::new(Error::EmptySummary),
                },
                PANTO_ERR_PROVIDER,
            ),
        ];
        for (error, code) in cases {
            let text = error.to_string();
            let failure = Failure::from(error);
            assert_eq!(failure.code, code, "{text}");
            assert_eq!(failure.message, text);
        }
    }

    #[test]
    fn panic_payloads_become_messages() {
        let caught = std::panic::catch_unwind(|| panic!("boom {}", 7)).err();
        let failure = Failure::panic(caught.as_deref().expect("the closure panics"));
        assert_eq!(failure.code, PANTO_ERR_PANIC);
        assert!(failure.message.ends_with("boom 7"), "{}", failure.message);
    }
}
