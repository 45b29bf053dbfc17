//! One writer per session across processes and hosts: PostgreSQL session-level advisory locks,
//! held on one dedicated connection per store.
//!
//! A session's lock key is a 64-bit hash of its id, so any process on any host that talks to the
//! same database agrees on it. All the locks of one store live on the same connection: a store
//! that keeps many sessions open does not need a connection for each. If that connection dies,
//! the server releases its locks; the store notices (the connection's *generation* changes) and
//! takes each lock again before the session's next append, and the fencing token (see
//! `writer.rs`) stops any append that raced with another writer in between.

use panto_core::Result;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio_postgres::Client;

use crate::tls::Target;

use crate::db::pg;
use crate::pool::Conn;

/// The advisory lock key of session `id`: the first 8 bytes of SHA-256("panto:session:" + id),
/// big-endian. `pg_locks` shows it as `classid` (high 32 bits) and `objid` (low 32 bits).
pub fn session_lock_key(id: &str) -> i64 {
    key_of("panto:session:", id)
}

/// The advisory lock key that serialises schema migrations.
pub(crate) fn migration_lock_key() -> i64 {
    key_of("panto:migrations", "")
}

fn key_of(namespace: &str, id: &str) -> i64 {
    let digest = Sha256::new().chain_update(namespace).chain_update(id).finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// The lock connection and its generation: a new connection is a new generation, and holds none
/// of the locks an earlier one held.
struct LockState {
    client: Option<Client>,
    generation: u64,
}

/// The advisory locks of one store.
pub(crate) struct Locker {
    target: Target,
    state: Mutex<LockState>,
}

impl Locker {
    /// A locker that connects on first use.
    pub fn new(target: Target) -> Self {
        Locker {
            target,
            state: Mutex::new(LockState {
                client: None,
                generation: 0,
            }),
        }
    }

    /// Tries to take the lock of session `id` without waiting. `Some(generation)` when taken,
    /// `None` when another connection holds it.
    pub async fn try_lock(&self, id: &str) -> Result<Option<u64>> {
        let mut state = self.state.lock().await;
        let open = state.client.as_ref().is_some_and(|c| !c.is_closed());
        if !open {
            state.client = Some(Conn::connect(&self.target).await?.client);
            state.generation += 1;
        }
        let generation = state.generation;
        let Some(client) = state.client.as_ref() else {
            unreachable!("the lock connection was just opened")
        };
        let row = client
            .query_one("select pg_try_advisory_lock($1)", &[&session_lock_key(id)])
            .await
            .map_err(|e| pg(format!("locking session {id} for writing"), e))?;
        let taken: bool = row.get(0);
        Ok(taken.then_some(generation))
    }

    /// Whether locks taken in `generation` are still held: the connection that took them is
    /// the current one and still open.
    pub async fn holds(&self, generation: u64) -> bool {
        let state = self.state.lock().await;
        state.generation == generation && state.client.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Releases the lock of session `id` taken in `generation`. Best effort: a lock whose
    /// connection is gone is already released.
    pub async fn unlock(&self, id: &str, generation: u64) {
        let state = self.state.lock().await;
        if state.generation != generation {
            return;
        }
        if let Some(client) = state.client.as_ref() {
            let _ = client
                .execute("select pg_advisory_unlock($1)", &[&session_lock_key(id)])
                .await;
        }
    }

    /// Releases every lock this store holds, now.
    pub async fn unlock_all(&self) {
        let state = self.state.lock().await;
        if let Some(client) = state.client.as_ref() {
            let _ = client.execute("select pg_advisory_unlock_all()", &[]).await;
        }
    }

    /// The server process id of the lock connection, if it is open: what `pg_locks.pid` shows
    /// for this store's locks.
    pub async fn backend_pid(&self) -> Result<Option<i32>> {
        let state = self.state.lock().await;
        let Some(client) = state.client.as_ref().filter(|c| !c.is_closed()) else {
            return Ok(None);
        };
        let row = client
            .query_one("select pg_backend_pid()", &[])
            .await
            .map_err(|e| pg("asking for the lock connection's process id", e))?;
        Ok(Some(row.get(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_stable_and_distinct() {
        // Fixed values: other processes and hosts must compute the same keys.
        let a = session_lock_key("019a0000-0000-7000-8000-000000000000");
        assert_eq!(a, session_lock_key("019a0000-0000-7000-8000-000000000000"));
        assert_ne!(a, session_lock_key("019a0000-0000-7000-8000-000000000001"));
        assert_ne!(a, migration_lock_key());
        let digest = Sha256::digest(b"panto:session:abc");
        assert_eq!(
            session_lock_key("abc").to_be_bytes().as_slice(),
            &digest[..8],
            "the key is the first 8 bytes of the digest"
        );
    }
}
