//! One live agent writes a session, also within one process.
//!
//! A store keeps two processes (or two store instances) from writing one session with a lock
//! on the session (the file store's `flock`, PostgreSQL's advisory lock). Two agents built on
//! the same store instance share that lock, so the store alone would let both append: their
//! entries would interleave in one chain mixing two conversations, and the first agent to be
//! dropped would release the lock the other still relies on. This module keeps the rule for
//! them: the first agent to write a session through a store holds it until it is dropped (or
//! moves to a fork); another agent that writes it meanwhile gets [`Error::SessionInUse`].

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::{Error, Result};
use crate::store::seam::SessionStore;

/// A store instance (the address of the value its `Arc`s share) and a session id.
type Key = (usize, String);

/// The sessions a live agent of this process writes, by store instance.
fn held() -> MutexGuard<'static, HashSet<Key>> {
    static HELD: OnceLock<Mutex<HashSet<Key>>> = OnceLock::new();
    // The set is plain data that a panic cannot leave half-updated.
    HELD.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn key(store: &Arc<dyn SessionStore>, id: &str) -> Key {
    // The address is stable while any `Arc` of the store lives, and the holder keeps one.
    (Arc::as_ptr(store).cast::<()>() as usize, id.to_owned())
}

/// An agent's hold on the session it writes; dropping it lets the session go, in this process
/// and in the store (`SessionStore::release_writer`).
#[derive(Debug)]
pub(super) struct Writer {
    store: Arc<dyn SessionStore>,
    id: String,
}

impl Writer {
    /// Takes session `id` of `store` for the caller, or [`Error::SessionInUse`] when another
    /// live agent of this process holds it.
    pub(super) fn take(store: &Arc<dyn SessionStore>, id: &str) -> Result<Writer> {
        if !held().insert(key(store, id)) {
            return Err(Error::SessionInUse { id: id.to_owned() });
        }
        Ok(Writer {
            store: store.clone(),
            id: id.to_owned(),
        })
    }

    /// Whether another live agent of this process holds session `id` of `store`.
    pub(super) fn is_held(store: &Arc<dyn SessionStore>, id: &str) -> bool {
        held().contains(&key(store, id))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let mut held = held();
        held.remove(&key(&self.store, &self.id));
        if held.is_empty() {
            // A process whose agents are all gone keeps no table here: an embedder checking
            // for leaks at exit (valgrind on a libpanto program) sees nothing of panto's.
            *held = HashSet::new();
        }
        drop(held);
        self.store.release_writer(&self.id);
    }
}
