//! Strings across the boundary: C strings in (copied, checked for NULL and UTF-8), owned C
//! strings out (freed with `panto_string_free`).
//!
//! Every input string is copied before the call returns, so a caller may free or reuse its
//! buffer at once; Go callers rely on this, having no way to pin Go memory (Go 1.19).

use std::ffi::{c_char, CStr, CString};
use std::ptr::NonNull;

use crate::error::Failure;
use crate::guard::{free, Owned};
use crate::status::PANTO_ERR_UTF8;

/// Copies the required string argument `name` from `ptr`.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string readable for the duration of the call.
pub(crate) unsafe fn arg(ptr: *const c_char, name: &str) -> Result<String, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(name));
    }
    // SAFETY: non-NULL and NUL-terminated (the contract).
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    utf8(bytes, name)
}

/// Copies the optional string argument `name` from `ptr`: NULL is `None`.
///
/// # Safety
/// As for [`arg`].
pub(crate) unsafe fn opt_arg(ptr: *const c_char, name: &str) -> Result<Option<String>, Failure> {
    if ptr.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded contract.
        unsafe { arg(ptr, name) }.map(Some)
    }
}

/// Decodes `bytes` as UTF-8, naming the argument and the offset of the first bad byte.
pub(crate) fn utf8(bytes: &[u8], name: &str) -> Result<String, Failure> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => Err(Failure::new(
            PANTO_ERR_UTF8,
            format!(
                "argument `{name}` is not valid UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            ),
        )),
    }
}

/// A C string of `text`. Interior NULs (which C cannot hold) become U+FFFD, so a message is
/// never lost; JSON produced by serde_json never contains one (it escapes them).
pub(crate) fn to_cstring(text: impl Into<String>) -> CString {
    let text = text.into();
    match CString::new(text) {
        Ok(c) => c,
        Err(e) => {
            let cleaned = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{FFFD}");
            // The replacement removed every NUL, so this cannot fail; fall back to empty anyway
            // rather than panic.
            CString::new(cleaned).unwrap_or_default()
        }
    }
}

/// Owned strings (the JSON documents exports hand out) are C strings from `CString::into_raw`,
/// freed with `panto_string_free`.
impl Owned for c_char {
    type Value = String;

    fn into_raw(value: String) -> *mut c_char {
        to_cstring(value).into_raw()
    }

    unsafe fn drop_raw(ptr: NonNull<c_char>) {
        // SAFETY: `ptr` came from CString::into_raw in `into_raw` and is unused after (the
        // contract).
        drop(unsafe { CString::from_raw(ptr.as_ptr()) });
    }
}

/// Frees a string libpanto returned as owned (a `char **` out-parameter: JSON documents).
/// `panto_string_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per string.
///
/// # Safety
/// `s` must be NULL or a string returned owned by libpanto and not yet freed. Never pass strings
/// that are borrowed (`const char *` returns) or that the caller allocated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_string_free(s: *mut c_char) {
    // SAFETY: the caller gives up a string libpanto handed out (or NULL).
    unsafe { free(s) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::PANTO_ERR_NULL;

    #[test]
    fn null_and_bad_utf8_name_the_argument() {
        // SAFETY: NULL is allowed by `arg`.
        let null = unsafe { arg(std::ptr::null(), "text") }.unwrap_err();
        assert_eq!(null.code, PANTO_ERR_NULL);
        assert_eq!(null.message, "argument `text` is NULL");

        let bad = c"ab\xffcd";
        // SAFETY: a NUL-terminated literal.
        let e = unsafe { arg(bad.as_ptr(), "text") }.unwrap_err();
        assert_eq!(e.code, PANTO_ERR_UTF8);
        assert_eq!(
            e.message,
            "argument `text` is not valid UTF-8 (invalid byte at offset 2)"
        );

        // SAFETY: a NUL-terminated literal.
        assert_eq!(unsafe { arg(c"héllo".as_ptr(), "text") }.unwrap(), "héllo");
        // SAFETY: NULL is allowed by `opt_arg`.
        assert_eq!(unsafe { opt_arg(std::ptr::null(), "x") }.unwrap(), None);
    }

    #[test]
    fn interior_nuls_are_replaced_not_lost() {
        assert_eq!(to_cstring("a\0b").to_str(), Ok("a\u{FFFD}b"));
    }
}
