//! `panto_error`: the owned error every fallible function hands back through its last argument.
//!
//! There is deliberately no thread-local "last error": Go moves goroutines between OS threads, so
//! an error must travel with the call that produced it.

use std::ffi::{c_char, CStr, CString};

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
    /// The structured detail `panto_error_http_status`, `panto_error_retry_after_ms` and
    /// `panto_error_field` give back.
    pub(crate) detail: Detail,
}

/// What an embedder may act on without parsing a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Detail {
    /// The provider's HTTP status, 0 when none.
    pub(crate) http_status: u16,
    /// How long the provider asked to wait before retrying, when it said.
    pub(crate) retry_after_ms: Option<u64>,
    /// The path of the config or options field that was wrong (`provider.api_style`).
    pub(crate) field: Option<String>,
}

impl Failure {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
            detail: Detail::default(),
        }
    }

    /// The same failure, naming the config or options field at `path` as the one that was wrong.
    pub(crate) fn with_field(mut self, path: impl Into<String>) -> Self {
        self.detail.field = Some(path.into());
        self
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
            Error::InvalidImage { .. } | Error::InvalidCompaction { .. } => PANTO_ERR_INVALID_ARGUMENT,
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
            Error::InvalidSessionId(_) | Error::InvalidSearchPattern { .. } => PANTO_ERR_INVALID_ARGUMENT,
            Error::CorruptSession { .. } | Error::Store { .. } => PANTO_ERR_STORE,
            Error::Cancelled => PANTO_ERR_CANCELLED,
            _ => PANTO_ERR_OTHER,
        };
        let detail = detail_of(&e);
        Failure {
            detail,
            ..Failure::new(code, e.to_string())
        }
    }
}

/// The structured detail of a core error: the provider's HTTP status and retry-after, and the
/// config field a configuration error is about.
fn detail_of(e: &Error) -> Detail {
    match e {
        Error::Http {
            status, retry_after, ..
        } => Detail {
            http_status: *status,
            retry_after_ms: retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            field: None,
        },
        Error::ContextOverflow { status, .. } | Error::Redirect { status, .. } => Detail {
            http_status: *status,
            ..Detail::default()
        },
        Error::InvalidHeader { .. } => Detail {
            field: Some("provider.extra_headers".to_owned()),
            ..Detail::default()
        },
        Error::OverflowCompactionFailed { source } => detail_of(source),
        _ => Detail::default(),
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
    http_status: u16,
    retry_after_ms: Option<u64>,
    field: Option<CString>,
}

impl Handle for panto_error {}

impl panto_error {
    pub(crate) fn from_failure(failure: Failure) -> Self {
        panto_error {
            code: failure.code,
            message: crate::cstr::to_cstring(failure.message),
            http_status: failure.detail.http_status,
            retry_after_ms: failure.detail.retry_after_ms,
            field: failure.detail.field.map(crate::cstr::to_cstring),
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

/// The HTTP status the provider answered with when `err` is a provider failure that had one
/// (`PANTO_ERR_PROVIDER`: 429, 500, a redirect's 307, a context overflow's 400, ...); 0 when
/// there is none (another kind of error, a failure before any answer, or NULL `err`).
///
/// Thread safety: callable from any thread.
///
/// # Safety
/// `err` must be NULL or an error returned by libpanto and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_error_http_status(err: *const panto_error) -> i32 {
    // SAFETY: the caller passes NULL or a live error handle (see the function's contract).
    unsafe { err.as_ref() }.map_or(0, |e| i32::from(e.http_status))
}

/// How long the provider asked to wait before trying again (its `retry-after` or
/// `retry-after-ms` header), in milliseconds, when `err` is an HTTP failure that said; -1 when it
/// did not (0 is a real answer: retry now), for any other error, and for NULL `err`.
///
/// Thread safety: callable from any thread.
///
/// # Safety
/// `err` must be NULL or an error returned by libpanto and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_error_retry_after_ms(err: *const panto_error) -> i64 {
    // SAFETY: the caller passes NULL or a live error handle (see the function's contract).
    unsafe { err.as_ref() }
        .and_then(|e| e.retry_after_ms)
        .map_or(-1, |ms| i64::try_from(ms).unwrap_or(i64::MAX))
}

/// The path of the config or options field that was wrong, as docs/ffi.md spells fields
/// (`provider.api_style`, `retry.max_attempts`, `provider.extra_headers`), when `err` is about
/// one (`PANTO_ERR_CONFIG` mostly); NULL when it is not, and for NULL `err`.
///
/// Ownership: borrowed from `err`; valid until `panto_error_free(err)`. Thread safety: callable
/// from any thread.
///
/// # Safety
/// `err` must be NULL or an error returned by libpanto and not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_error_field(err: *const panto_error) -> *const c_char {
    // SAFETY: the caller passes NULL or a live error handle (see the function's contract).
    unsafe { err.as_ref() }
        .and_then(|e| e.field.as_deref())
        .map_or(std::ptr::null(), CStr::as_ptr)
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
    use crate::guard::Owned;

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
            (
                Error::InvalidCompaction {
                    first_kept: 9,
                    reason: "the conversation has only 4 messages".into(),
                },
                PANTO_ERR_INVALID_ARGUMENT,
            ),
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
    fn core_errors_carry_their_status_retry_after_and_field() {
        let http = Failure::from(Error::Http {
            status: 429,
            error_type: Some("rate_limit_error".into()),
            message: "slow down".into(),
            retry_after: Some(std::time::Duration::from_millis(1500)),
        });
        assert_eq!((http.detail.http_status, http.detail.retry_after_ms), (429, Some(1500)));
        let wrapped = Failure::from(Error::OverflowCompactionFailed {
            source: Box::new(Error::Http {
                status: 503,
                error_type: None,
                message: "down".into(),
                retry_after: None,
            }),
        });
        assert_eq!((wrapped.detail.http_status, wrapped.detail.retry_after_ms), (503, None));
        let header = Failure::from(Error::InvalidHeader {
            name: "x-a".into(),
            reason: "invalid value".into(),
        });
        assert_eq!(header.detail.field.as_deref(), Some("provider.extra_headers"));
        assert_eq!(Failure::from(Error::Cancelled).detail, Detail::default());

        let err = panto_error::into_raw(panto_error::from_failure(http));
        // SAFETY: `err` is a live error handle, freed once at the end; NULL is allowed.
        unsafe {
            assert_eq!(panto_error_http_status(err), 429);
            assert_eq!(panto_error_retry_after_ms(err), 1500);
            assert!(panto_error_field(err).is_null());
            assert_eq!(panto_error_http_status(std::ptr::null()), 0);
            assert_eq!(panto_error_retry_after_ms(std::ptr::null()), -1);
            assert!(panto_error_field(std::ptr::null()).is_null());
            panto_error_free(err);
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
