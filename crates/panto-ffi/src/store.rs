//! `panto_store`: where sessions are persisted (a directory of JSONL files, or nowhere).

use std::ffi::c_char;
use std::sync::Arc;

use panto_core::{NullStore, SessionInfo, SessionStore};
use panto_store_fs::JsonlStore;
use serde_json::{json, Value};

use crate::error::{panto_error, Failure};
use crate::guard::{free, handle, HandOut, Handle};
use crate::runtime::{panto_runtime, Rt};

/// A session store.
///
/// Ownership: created by `panto_store_open_fs` or `panto_store_new_null`, freed by
/// `panto_store_free`. Sessions and agents made from it keep the store alive, so it may be freed
/// before them. A filesystem store holds a lock on each session it has written until the store
/// and every session and agent made from it are freed. Thread safety: may be used from several
/// threads at once.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_store {
    pub(crate) rt: Arc<Rt>,
    pub(crate) store: Arc<dyn SessionStore>,
}

impl Handle for panto_store {}

impl panto_store {
    fn new(runtime: &panto_runtime, store: Arc<dyn SessionStore>) -> Self {
        panto_store {
            rt: runtime.rt.clone(),
            store,
        }
    }
}

/// The JSON form of a session's info, as `panto_store_list_json` and `panto_session_info_json`
/// return it.
pub(crate) fn info_json(info: &SessionInfo) -> Value {
    json!({
        "id": info.id,
        "created": info.created.to_rfc3339(),
        "modified": info.modified.to_rfc3339(),
        "last_prompt_at": info.last_prompt_at.map(|t| t.to_rfc3339()),
        "message_count": info.message_count,
        "last_user_message": info.last_user_message,
        "wire": info.wire,
        "forked_from": info.forked_from.as_ref().map(|f| json!({"session": f.session, "entry": f.entry})),
        "cwd": info.cwd.as_deref().and_then(std::path::Path::to_str),
    })
}

/// Opens the filesystem store over directory `dir`: one JSONL file per session. Nothing is
/// created until a session is first written (the directory then gets mode 0700, files 0600).
///
/// Ownership: `runtime` and `dir` are borrowed for the call (the store keeps its own reference to
/// the runtime). `*out` receives an owned store (only on success; on failure it is left as it was). Thread safety: callable from
/// any thread.
///
/// # Safety
/// `runtime` must be NULL or a live runtime; `dir` NULL or NUL-terminated; `out` and `err` NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_store_open_fs(
    runtime: *const panto_runtime,
    dir: *const c_char,
    out: *mut *mut panto_store,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes `runtime` NULL or live, and `dir` NULL or NUL-terminated.
        let (runtime, dir) = unsafe { (handle(runtime, "runtime")?, crate::cstr::arg(dir, "dir")?) };
        if dir.is_empty() {
            return Err(Failure::invalid("argument `dir` is empty; give a directory path"));
        }
        Ok(panto_store::new(runtime, JsonlStore::new(dir)))
    })
}

/// A store that persists nothing: sessions from it start empty and are never written. For
/// ephemeral agents.
///
/// Ownership: as `panto_store_open_fs`. Thread safety: callable from any thread.
///
/// # Safety
/// `runtime` must be NULL or a live runtime; `out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_store_new_null(
    runtime: *const panto_runtime,
    out: *mut *mut panto_store,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes `runtime` NULL or live.
        let runtime = unsafe { handle(runtime, "runtime") }?;
        Ok(panto_store::new(runtime, NullStore::shared()))
    })
}

/// Lists the store's sessions, newest first (by the last human prompt), as a JSON array of
/// objects: `{"id", "created", "modified", "last_prompt_at", "message_count",
/// "last_user_message", "wire", "forked_from", "cwd"}` (times are RFC 3339; see docs/ffi.md).
///
/// Ownership: `*json_out` receives an owned string (only on success; on failure it is left as it was), freed with
/// `panto_string_free`. Thread safety: callable from any thread; blocks while the store reads.
/// Not callable from inside a tool callback (`PANTO_ERR_STATE`).
///
/// # Safety
/// `store` must be NULL or a live store; `json_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_store_list_json(
    store: *const panto_store,
    json_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `json_out` and `err` NULL or writable.
    unsafe { HandOut::required(json_out, "json_out", err) }.guard(|| {
        // SAFETY: the contract makes `store` NULL or live.
        let store = unsafe { handle(store, "store") }?;
        let infos = store.rt.block_on("panto_store_list_json", store.store.list())??;
        let list: Vec<Value> = infos.iter().map(info_json).collect();
        Ok(Value::Array(list).to_string())
    })
}

/// Frees the caller's store handle. Sessions and agents made from it keep the store alive.
/// `panto_store_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per store.
///
/// # Safety
/// `store` must be NULL or a store not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_store_free(store: *mut panto_store) {
    // SAFETY: the caller gives up a live store handle (or NULL).
    unsafe { free(store) }
}
