//! The boundary: one definition of each step an export takes, so that its body is its real work
//! (rustls-ffi's `ffi_panic_boundary!`, `try_ref_from_ptr!`, `Castable` and `free_box`, with
//! closures for its macros: `?` on a [`Failure`] is the early return).
//!
//! - [`handle`] borrows a handle argument; NULL fails with `PANTO_ERR_NULL` naming it.
//! - [`HandOut::guard`] is the body of an export that makes a handle or a JSON document and hands
//!   it out owned through a `T **` out-parameter; [`ErrOut::guard`] of one that only reports a
//!   status; [`free`] of every `_free` (a handle whose free does more, such as cancelling a run,
//!   does it in its `Drop`); [`guard_or`] of a getter.
//! - [`Owned`] says how each kind of owned pointer is made and freed.
//!
//! A panic must never unwind into C (that aborts the process, or worse): each of these runs the
//! body behind a guard that turns a panic into `PANTO_ERR_PANIC` (or a neutral return value for
//! functions without an error out-parameter).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::error::{panto_error, Failure};
use crate::status::PANTO_OK;

/// A type C only ever holds through a pointer libpanto handed out owned, until it gives the
/// pointer back to a `_free`: the one place that says how such a pointer is made and unmade, so
/// that no handle can be freed as a string or the other way round (rustls-ffi's `Castable`).
pub(crate) trait Owned: Sized {
    /// The Rust value C receives a pointer to.
    type Value;

    /// Gives `value` up to C.
    fn into_raw(value: Self::Value) -> *mut Self;

    /// Drops what [`Owned::into_raw`] gave up.
    ///
    /// # Safety
    /// `ptr` must come from `into_raw` of this type and not be freed yet; nothing uses it after.
    unsafe fn drop_raw(ptr: NonNull<Self>);
}

/// An opaque handle type (`panto_agent`, `panto_store`, ...): C holds it as a pointer from
/// `Box::into_raw`.
pub(crate) trait Handle {}

impl<T: Handle> Owned for T {
    type Value = T;

    fn into_raw(value: T) -> *mut T {
        Box::into_raw(Box::new(value))
    }

    unsafe fn drop_raw(ptr: NonNull<T>) {
        // SAFETY: `ptr` came from Box::into_raw in `into_raw` and is unused after (the contract).
        drop(unsafe { Box::from_raw(ptr.as_ptr()) });
    }
}

/// The body of every `_free` that only drops: NULL does nothing, and a panic while dropping stays
/// on this side of the boundary.
///
/// # Safety
/// `ptr` must be NULL or a pointer libpanto handed out owned as a `T` and not freed yet; the
/// caller gives up every use of it.
pub(crate) unsafe fn free<T: Owned>(ptr: *mut T) {
    guard_void(|| {
        if let Some(ptr) = NonNull::new(ptr) {
            // SAFETY: per the contract, `ptr` came from `T::into_raw` and is unused after.
            unsafe { T::drop_raw(ptr) };
        }
    })
}

/// The `panto_error **err` out-parameter of a fallible export: NULL (the caller does not want
/// details) or a place to write the error handle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrOut(*mut *mut panto_error);

impl ErrOut {
    /// Wraps `err` and clears `*err`, so it is NULL unless the call fails.
    ///
    /// # Safety
    /// `err` must be NULL or valid for writing one pointer for the duration of the call.
    pub(crate) unsafe fn new(err: *mut *mut panto_error) -> Self {
        if !err.is_null() {
            // SAFETY: non-NULL `err` is writable (the function's contract).
            unsafe { err.write(std::ptr::null_mut()) };
        }
        ErrOut(err)
    }

    /// Runs `body` behind a panic guard. Returns its status, or the failure's code after handing
    /// the failure to the caller as a `panto_error`.
    pub(crate) fn guard(self, body: impl FnOnce() -> Result<i32, Failure>) -> i32 {
        let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| Err(Failure::panic(&*payload)));
        match outcome {
            Ok(status) => status,
            Err(failure) => {
                let code = failure.code;
                self.set(failure);
                code
            }
        }
    }

    /// Hands `failure` to the caller (if it asked for errors).
    pub(crate) fn set(self, failure: Failure) {
        if self.0.is_null() {
            return;
        }
        let handle = panto_error::into_raw(panto_error::from_failure(failure));
        // SAFETY: `self.0` is non-NULL and writable (checked at construction, per the contract).
        unsafe { self.0.write(handle) };
    }
}

/// What the body of [`HandOut::guard_status`] ends with: a value to hand out, or a status that
/// is not a failure but hands nothing out (`panto_run_next_event`'s `PANTO_TIMEOUT` and
/// `PANTO_END`).
#[derive(Debug)]
pub(crate) enum Made<V> {
    /// Handed to the caller through `*out`, with `PANTO_OK`.
    Value(V),
    /// Returned as it is; `*out` is left as the caller had it.
    Status(i32),
}

/// The out-parameters of an export that makes something for the caller: `T **out` receives what
/// the body made, owned, and `panto_error **err` the failure. `*out` is written only on success
/// (as rustls-ffi and wasmtime do): on failure, or a status without a result, it keeps whatever
/// the caller left there, so a variable that still holds a live handle is not lost. `*err` is
/// cleared on entry, so it is NULL unless the call failed.
#[derive(Debug)]
pub(crate) struct HandOut<T> {
    out: *mut *mut T,
    /// The out-parameter's name, for the error when a required one is NULL.
    name: &'static str,
    err: ErrOut,
    /// Whether a NULL `out` is an error (otherwise the caller does not want the result).
    required: bool,
}

impl<T: Owned> HandOut<T> {
    /// For a result the caller must take: a NULL `out` fails with `PANTO_ERR_NULL` naming `name`
    /// before the body runs, so nothing is done (and then dropped) for a call that cannot return
    /// its result.
    ///
    /// # Safety
    /// `out` and `err` must each be NULL or valid for writing one pointer for the duration of the
    /// call.
    pub(crate) unsafe fn required(out: *mut *mut T, name: &'static str, err: *mut *mut panto_error) -> Self {
        // `*out` is not touched until there is something to hand out: a caller that passes a
        // variable still holding a live handle keeps it (and frees it) when the call fails.
        HandOut {
            out,
            name,
            // SAFETY: forwarded contract.
            err: unsafe { ErrOut::new(err) },
            required: true,
        }
    }

    /// For a result the caller may decline with a NULL `out`: the body runs all the same, and what
    /// it made is dropped.
    ///
    /// # Safety
    /// As for [`HandOut::required`].
    pub(crate) unsafe fn optional(out: *mut *mut T, name: &'static str, err: *mut *mut panto_error) -> Self {
        HandOut {
            required: false,
            // SAFETY: forwarded contract.
            ..unsafe { HandOut::required(out, name, err) }
        }
    }

    /// Runs `make` behind a panic guard and hands what it made to the caller: `PANTO_OK`, or the
    /// failure's code with the failure in `*err`.
    pub(crate) fn guard(self, make: impl FnOnce() -> Result<T::Value, Failure>) -> i32 {
        self.guard_status(|| make().map(Made::Value))
    }

    /// As [`HandOut::guard`], for a body that may also end without a result: a
    /// [`Made::Status`] is returned as it is, with `*out` left NULL.
    pub(crate) fn guard_status(self, make: impl FnOnce() -> Result<Made<T::Value>, Failure>) -> i32 {
        let HandOut {
            out,
            name,
            err,
            required,
        } = self;
        err.guard(|| {
            if required && out.is_null() {
                return Err(Failure::null(name));
            }
            let value = match make()? {
                Made::Value(value) => value,
                Made::Status(status) => return Ok(status),
            };
            if out.is_null() {
                // Declined (an optional result): `value` is dropped here.
                return Ok(PANTO_OK);
            }
            // SAFETY: `out` is non-NULL (checked) and writable (the contract of `required`).
            unsafe { out.write(T::into_raw(value)) };
            Ok(PANTO_OK)
        })
    }
}

/// Runs `body` behind a panic guard, for exports that return nothing (the `_free` functions).
pub(crate) fn guard_void(body: impl FnOnce()) {
    // A panic here has nowhere to be reported; swallowing it is better than unwinding into C.
    let _ = catch_unwind(AssertUnwindSafe(body));
}

/// Runs `body` behind a panic guard, returning `fallback` if it panics.
pub(crate) fn guard_or<R>(fallback: R, body: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// Borrows the handle behind `ptr`, or fails with `PANTO_ERR_NULL` naming `name`.
///
/// # Safety
/// `ptr` must be NULL or point to a live `T` that outlives the returned borrow.
pub(crate) unsafe fn handle<'a, T>(ptr: *const T, name: &str) -> Result<&'a T, Failure> {
    // SAFETY: per the contract, a non-NULL `ptr` points to a live `T`.
    unsafe { ptr.as_ref() }.ok_or_else(|| Failure::null(name))
}

/// Takes back ownership of a boxed handle, for a `_free` that does more than drop it
/// (`panto_agent_free`, which waits for a live run). `None` for NULL.
///
/// # Safety
/// `ptr` must be NULL or a pointer from `Box::into_raw` not yet freed, and the caller gives up
/// every use of it.
pub(crate) unsafe fn take<T>(ptr: *mut T) -> Option<Box<T>> {
    if ptr.is_null() {
        None
    } else {
        // SAFETY: per the contract, a non-NULL `ptr` came from Box::into_raw and is unused after.
        Some(unsafe { Box::from_raw(ptr) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{PANTO_ERR_NULL, PANTO_ERR_PANIC, PANTO_OK};
    use std::ffi::{c_char, CStr};

    fn message(err: *mut panto_error) -> String {
        // SAFETY: `err` holds the live error of a failed call; it is freed right after.
        unsafe {
            let message = CStr::from_ptr(crate::error::panto_error_message(err))
                .to_string_lossy()
                .into_owned();
            crate::error::panto_error_free(err);
            message
        }
    }

    #[test]
    fn a_panic_becomes_a_status_and_an_error() {
        let mut err: *mut panto_error = std::ptr::null_mut();
        // SAFETY: `err` is a local, writable pointer.
        let out = unsafe { ErrOut::new(&mut err) };
        let status = out.guard(|| panic!("kaboom"));
        assert_eq!(status, PANTO_ERR_PANIC);
        assert!(!err.is_null());
        assert!(message(err).contains("kaboom"));
    }

    #[test]
    fn success_leaves_no_error() {
        let mut err: *mut panto_error = std::ptr::dangling_mut();
        // SAFETY: `err` is a local, writable pointer.
        let out = unsafe { ErrOut::new(&mut err) };
        assert!(err.is_null(), "the error slot is cleared on entry");
        assert_eq!(out.guard(|| Ok(PANTO_OK)), PANTO_OK);
        assert!(err.is_null());
    }

    #[test]
    fn a_required_result_needs_its_out_parameter_before_the_body_runs() {
        let mut err: *mut panto_error = std::ptr::null_mut();
        let mut ran = false;
        // SAFETY: NULL `out` is allowed; `err` is a local.
        let call = unsafe { HandOut::<c_char>::required(std::ptr::null_mut(), "json_out", &mut err) };
        let status = call.guard(|| {
            ran = true;
            Ok("{}".to_owned())
        });
        assert_eq!(status, PANTO_ERR_NULL);
        assert!(!ran, "nothing is made for a caller that cannot take it");
        assert_eq!(message(err), "argument `json_out` is NULL");

        // A declined optional result is made and dropped; the call succeeds.
        // SAFETY: as above.
        let call = unsafe { HandOut::<c_char>::optional(std::ptr::null_mut(), "result_json", &mut err) };
        assert_eq!(call.guard(|| Ok("{}".to_owned())), PANTO_OK);
        assert!(err.is_null());
    }

    #[test]
    fn a_handed_out_string_is_the_callers_until_freed() {
        let mut json: *mut c_char = std::ptr::dangling_mut();
        // SAFETY: `json` is a local, writable pointer; no error is asked for.
        let call = unsafe { HandOut::required(&mut json, "json_out", std::ptr::null_mut()) };
        assert_eq!(call.guard(|| Ok("[1,2]".to_owned())), PANTO_OK);
        // SAFETY: `json` was just handed out, owned; freed once.
        unsafe {
            assert_eq!(CStr::from_ptr(json).to_str(), Ok("[1,2]"));
            free(json);
            free::<c_char>(std::ptr::null_mut());
        }

        // A failure leaves the output as the caller had it: a handle it still holds is not lost.
        let held: *mut c_char = std::ptr::dangling_mut();
        let mut json = held;
        // SAFETY: as above.
        let call = unsafe { HandOut::required(&mut json, "json_out", std::ptr::null_mut()) };
        assert_eq!(call.guard(|| Err(Failure::state("no"))), crate::status::PANTO_ERR_STATE);
        assert_eq!(json, held, "a failed call does not touch its output");
        // So does a panic.
        // SAFETY: as above.
        let call = unsafe { HandOut::<c_char>::required(&mut json, "json_out", std::ptr::null_mut()) };
        assert_eq!(call.guard(|| panic!("kaboom")), crate::status::PANTO_ERR_PANIC);
        assert_eq!(json, held);
    }

    #[test]
    fn a_status_without_a_result_hands_nothing_out() {
        let held: *mut c_char = std::ptr::dangling_mut();
        let mut json = held;
        let mut err: *mut panto_error = std::ptr::dangling_mut();
        // SAFETY: `json` and `err` are local, writable pointers.
        let call = unsafe { HandOut::<c_char>::required(&mut json, "event", &mut err) };
        assert_eq!(
            call.guard_status(|| Ok(Made::Status(crate::status::PANTO_END))),
            crate::status::PANTO_END
        );
        assert_eq!(json, held, "a status leaves the output untouched");
        assert!(err.is_null(), "a status is not a failure");

        // SAFETY: as above.
        let call = unsafe { HandOut::required(&mut json, "event", &mut err) };
        assert_eq!(call.guard_status(|| Ok(Made::Value("{}".to_owned()))), PANTO_OK);
        // SAFETY: `json` was just handed out, owned; freed once.
        unsafe {
            assert_eq!(CStr::from_ptr(json).to_str(), Ok("{}"));
            free(json);
        }

        // A NULL required output fails before the body runs, whatever it would have returned.
        // SAFETY: NULL `out` is allowed; `err` is a local.
        let call = unsafe { HandOut::<c_char>::required(std::ptr::null_mut(), "event", &mut err) };
        let status = call.guard_status(|| unreachable!("the body of a call without its output"));
        assert_eq!(status, PANTO_ERR_NULL);
        assert_eq!(message(err), "argument `event` is NULL");
    }
}
