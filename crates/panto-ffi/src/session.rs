//! `panto_session`: one session of a store, new or found again, to build an agent on.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use panto_core::Session;

use crate::error::{panto_error, Failure};
use crate::guard::{free, handle, HandOut, Handle};
use crate::runtime::Rt;
use crate::status::PANTO_ERR_SESSION_NOT_FOUND;
use crate::store::{info_json, panto_store};

/// A session: an id and what a listing shows of it, bound to its store.
///
/// Ownership: created by `panto_session_create`, `panto_session_resolve` or
/// `panto_session_latest`; freed by `panto_session_free`. Agents made from it copy it, so it may
/// be freed right after `panto_agent_new`. Thread safety: immutable; may be read from several
/// threads at once.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_session {
    pub(crate) rt: Arc<Rt>,
    pub(crate) session: Session,
    id: CString,
}

impl Handle for panto_session {}

impl panto_session {
    fn new(rt: Arc<Rt>, session: Session) -> Self {
        let id = crate::cstr::to_cstring(session.id());
        panto_session { rt, session, id }
    }
}

/// Shared body of the functions that hand out a session.
///
/// # Safety
/// `store` must be NULL or live; `out` and `err` NULL or writable.
unsafe fn hand_out(
    store: *const panto_store,
    out: *mut *mut panto_session,
    err: *mut *mut panto_error,
    find: impl FnOnce(&panto_store) -> Result<Session, Failure>,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: forwarded contract.
        let store = unsafe { handle(store, "store") }?;
        Ok(panto_session::new(store.rt.clone(), find(store)?))
    })
}

/// A new session with a fresh id (a UUIDv7). Nothing is written until its first assistant
/// message.
///
/// Ownership: `store` is borrowed for the call; `*out` receives an owned session (only on success; on failure it is left as it was). Thread safety: callable from any thread.
///
/// # Safety
/// `store` must be NULL or a live store; `out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_create(
    store: *const panto_store,
    out: *mut *mut panto_session,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { hand_out(store, out, err, |s| Ok(Session::create(s.store.clone()))) }
}

/// The session whose id is `id_or_prefix`, or else the only one whose id starts with it.
///
/// Errors: `PANTO_ERR_SESSION_NOT_FOUND` when none matches, `PANTO_ERR_SESSION_AMBIGUOUS` when
/// several do (the message lists them), `PANTO_ERR_INVALID_ARGUMENT` when `id_or_prefix` could
/// not be an id (ids are lowercase hex and `-`), `PANTO_ERR_STORE` when the store cannot be read.
///
/// Ownership: `store` and `id_or_prefix` are borrowed for the call; `*out` receives an owned
/// session (only on success; on failure it is left as it was). Thread safety: callable from any thread; blocks while the store
/// reads. Not callable from inside a tool callback.
///
/// # Safety
/// `store` must be NULL or a live store; `id_or_prefix` NULL or NUL-terminated; `out` and `err`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_resolve(
    store: *const panto_store,
    id_or_prefix: *const c_char,
    out: *mut *mut panto_session,
    err: *mut *mut panto_error,
) -> i32 {
    let find = |s: &panto_store| {
        // SAFETY: the contract makes `id_or_prefix` NULL or NUL-terminated.
        let id = unsafe { crate::cstr::arg(id_or_prefix, "id_or_prefix") }?;
        let found =
            s.rt.block_on("panto_session_resolve", Session::resolve(s.store.clone(), &id))??;
        found.ok_or_else(|| Failure::new(PANTO_ERR_SESSION_NOT_FOUND, format!("no session matches {id:?}")))
    };
    // SAFETY: forwarded contract.
    unsafe { hand_out(store, out, err, find) }
}

/// The most recent session (by the last human prompt).
///
/// Errors: `PANTO_ERR_SESSION_NOT_FOUND` when the store holds no session, `PANTO_ERR_STORE` when
/// it cannot be read.
///
/// Ownership and thread safety: as `panto_session_resolve`.
///
/// # Safety
/// `store` must be NULL or a live store; `out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_latest(
    store: *const panto_store,
    out: *mut *mut panto_session,
    err: *mut *mut panto_error,
) -> i32 {
    let find = |s: &panto_store| {
        let found =
            s.rt.block_on("panto_session_latest", Session::latest(s.store.clone()))??;
        found.ok_or_else(|| Failure::new(PANTO_ERR_SESSION_NOT_FOUND, "the store holds no sessions"))
    };
    // SAFETY: forwarded contract.
    unsafe { hand_out(store, out, err, find) }
}

/// The session's id, or NULL when `session` is NULL.
///
/// Ownership: borrowed from `session`; valid until `panto_session_free(session)`. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `session` must be NULL or a live session.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_id(session: *const panto_session) -> *const c_char {
    crate::guard::guard_or(std::ptr::null(), || {
        // SAFETY: the contract makes `session` NULL or live.
        unsafe { session.as_ref() }.map_or(std::ptr::null(), |s| s.id.as_ptr())
    })
}

/// What a listing shows of the session, as one JSON object (the element shape of
/// `panto_store_list_json`), as of when the session handle was made.
///
/// Ownership: `*json_out` receives an owned string (only on success; on failure it is left as it was), freed with
/// `panto_string_free`. Thread safety: callable from any thread.
///
/// # Safety
/// `session` must be NULL or a live session; `json_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_info_json(
    session: *const panto_session,
    json_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `json_out` and `err` NULL or writable.
    unsafe { HandOut::required(json_out, "json_out", err) }.guard(|| {
        // SAFETY: the contract makes `session` NULL or live.
        let session = unsafe { handle(session, "session") }?;
        Ok(info_json(&session.session.info).to_string())
    })
}

/// Starts a new session in the same store whose history is this session's path up to and
/// including entry `entry_id` (an id from `panto_agent_message_ids_json`; the messages keep their
/// ids, and the new session records where it came from: `forked_from` in its info JSON). The
/// original is left as it is. Make an agent on `*out` with `panto_agent_new` to continue there.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_STATE` (no such entry, or the store
/// keeps no forks), `PANTO_ERR_SESSION_NOT_FOUND`, store errors. Ownership: `entry_id` is copied;
/// `*out` receives an owned session (only on success; on failure it is left as it was), freed with `panto_session_free`. Thread
/// safety: callable from any thread; blocks while the new session is written.
///
/// # Safety
/// `session` must be NULL or a live session; `entry_id` NULL or NUL-terminated; `out` and `err`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_fork(
    session: *const panto_session,
    entry_id: *const c_char,
    out: *mut *mut panto_session,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes `session` NULL or live and `entry_id` NULL or NUL-terminated.
        let (session, entry) = unsafe { (handle(session, "session")?, crate::cstr::arg(entry_id, "entry_id")?) };
        let fork = session
            .rt
            .block_on("panto_session_fork", session.session.fork(&entry))??;
        Ok(panto_session::new(session.rt.clone(), fork))
    })
}

/// Frees a session handle. `panto_session_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per session.
///
/// # Safety
/// `session` must be NULL or a session not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_session_free(session: *mut panto_session) {
    // SAFETY: the caller gives up a live session handle (or NULL).
    unsafe { free(session) }
}
