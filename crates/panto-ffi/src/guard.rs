//! The boundary: panic guards, and safe wrappers over the out-parameters of every export.
//!
//! A panic must never unwind into C (that aborts the process, or worse). Every export runs its
//! body through one of the guards here, which turn a panic into `PANTO_ERR_PANIC` (or a neutral
//! return value for functions without an error out-parameter).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{panto_error, Failure};

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
        let handle = Box::into_raw(Box::new(panto_error::from_failure(failure)));
        // SAFETY: `self.0` is non-NULL and writable (checked at construction, per the contract).
        unsafe { self.0.write(handle) };
    }
}

/// A required `T **out` out-parameter, cleared to NULL on entry so it is NULL on any failure.
#[derive(Debug)]
pub(crate) struct Out<T> {
    ptr: *mut *mut T,
    name: &'static str,
}

impl<T> Out<T> {
    /// Wraps `ptr` (named `name` in errors) and clears `*ptr` when it is not NULL.
    ///
    /// # Safety
    /// `ptr` must be NULL or valid for writing one pointer for the duration of the call.
    pub(crate) unsafe fn new(ptr: *mut *mut T, name: &'static str) -> Self {
        if !ptr.is_null() {
            // SAFETY: non-NULL `ptr` is writable (the function's contract).
            unsafe { ptr.write(std::ptr::null_mut()) };
        }
        Out { ptr, name }
    }

    /// Fails with `PANTO_ERR_NULL` when the caller passed NULL. Call it before doing any work, so
    /// nothing is done (and then dropped) for a call that cannot return its result.
    pub(crate) fn check(&self) -> Result<(), Failure> {
        if self.ptr.is_null() {
            Err(Failure::null(self.name))
        } else {
            Ok(())
        }
    }

    /// Hands `value` to the caller, who owns it from now on.
    pub(crate) fn write(self, value: *mut T) -> Result<i32, Failure> {
        self.check()?;
        // SAFETY: `self.ptr` is non-NULL (checked) and writable (the function's contract).
        unsafe { self.ptr.write(value) };
        Ok(crate::status::PANTO_OK)
    }

    /// Hands a boxed handle to the caller.
    pub(crate) fn write_box(self, value: T) -> Result<i32, Failure> {
        self.check()?;
        self.write(Box::into_raw(Box::new(value)))
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

/// Takes back ownership of a handle the caller frees. `None` for NULL.
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

    #[test]
    fn a_panic_becomes_a_status_and_an_error() {
        let mut err: *mut panto_error = std::ptr::null_mut();
        // SAFETY: `err` is a local, writable pointer.
        let out = unsafe { ErrOut::new(&mut err) };
        let status = out.guard(|| panic!("kaboom"));
        assert_eq!(status, PANTO_ERR_PANIC);
        assert!(!err.is_null());
        // SAFETY: `err` was just set to a live error handle, freed right after.
        unsafe {
            let message = std::ffi::CStr::from_ptr(crate::error::panto_error_message(err));
            assert!(message.to_string_lossy().contains("kaboom"), "{message:?}");
            crate::error::panto_error_free(err);
        }
    }

    #[test]
    fn success_leaves_no_error_and_null_outputs_fail() {
        let mut err: *mut panto_error = std::ptr::dangling_mut();
        // SAFETY: `err` is a local, writable pointer.
        let out = unsafe { ErrOut::new(&mut err) };
        assert!(err.is_null(), "the error slot is cleared on entry");
        assert_eq!(out.guard(|| Ok(PANTO_OK)), PANTO_OK);
        assert!(err.is_null());

        // SAFETY: a NULL out-parameter is allowed by `Out::new`.
        let missing: Out<u8> = unsafe { Out::new(std::ptr::null_mut(), "out") };
        let status = out.guard(|| missing.write_box(1));
        assert_eq!(status, PANTO_ERR_NULL);
        // SAFETY: `err` now holds the error of the failed call.
        unsafe {
            let message = std::ffi::CStr::from_ptr(crate::error::panto_error_message(err));
            assert_eq!(message.to_str(), Ok("argument `out` is NULL"));
            crate::error::panto_error_free(err);
        }
    }
}
