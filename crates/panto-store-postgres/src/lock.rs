//! One writer per session across processes and hosts: PostgreSQL session-level advisory locks,
//! held on one dedicated connection per store.
//!
//! A session's lock key is a 64-bit hash of its id, so any process on any host that talks to the
//! same database agrees on it. All the locks of one store live on the same connection: a store
//! that keeps many sessions open does not need a connection for each. If that connection dies,
//! the server releases its locks; the store notices (the connection's *generation* changes) and
//! takes each lock again before the session's next append, and the fencing token (see
//! `writer.rs`) stops any append that raced with another writer in between.
//!
//! Taking a lock also tells whether the session is stored: the look-up is pipelined behind the
//! lock on the same connection, so a session's first append costs one round trip before its
//! statement, not a lock's and then a look-up's on another connection.

use std::sync::Arc;

use panto_core::Result;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

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

/// Takes a session's lock if no other connection holds it.
const TRY_LOCK: &str = "select pg_try_advisory_lock($1)";

/// Releases a session's lock.
const UNLOCK: &str = "select pg_advisory_unlock($1)";

/// Whether a session is stored.
const STORED: &str = "select 1 from panto.sessions where id = $1";

/// The lock connection and its statements, prepared once: a statement given as text costs a
/// round trip to prepare before each execution.
struct LockConn {
    client: Client,
    try_lock: Statement,
    unlock: Statement,
    stored: Statement,
}

/// The lock connection and its generation: a new connection is a new generation, and holds none
/// of the locks an earlier one held.
struct LockState {
    conn: Option<Arc<LockConn>>,
    generation: u64,
}

/// A session's lock, just taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taken {
    /// The lock connection's generation (see [`Locker::holds`]).
    pub generation: u64,
    /// Whether the session was stored once the lock was taken.
    pub stored: bool,
}

/// The advisory locks of one store.
///
/// The connection is shared, not held: lock and unlock requests from many sessions' appends are
/// pipelined on it, and checking that a lock is still held takes no round trip. Holding the
/// connection across each round trip would make every append of a busy store wait behind every
/// other session's lock and unlock.
pub(crate) struct Locker {
    target: Target,
    state: std::sync::Mutex<LockState>,
    /// Held while a new lock connection is opened, so that only one is.
    connecting: Mutex<()>,
}

impl Locker {
    /// A locker that connects on first use.
    pub(crate) fn new(target: Target) -> Self {
        Locker {
            target,
            state: std::sync::Mutex::new(LockState {
                conn: None,
                generation: 0,
            }),
            connecting: Mutex::new(()),
        }
    }

    /// The lock connection and its generation, if it is open.
    fn current(&self) -> Option<(Arc<LockConn>, u64)> {
        // Plain data that a panic cannot leave half-updated.
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let conn = state.conn.as_ref().filter(|c| !c.client.is_closed())?;
        Some((Arc::clone(conn), state.generation))
    }

    /// The lock connection and its generation, opening a new connection (a new generation) when
    /// there is none or it closed.
    async fn connection(&self) -> Result<(Arc<LockConn>, u64)> {
        if let Some(current) = self.current() {
            return Ok(current);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(current) = self.current() {
            return Ok(current);
        }
        let client = Conn::connect(&self.target).await?.client;
        let prepared = tokio::try_join!(client.prepare(TRY_LOCK), client.prepare(UNLOCK), client.prepare(STORED));
        let (try_lock, unlock, stored) =
            prepared.map_err(|e| pg("preparing the statements of the lock connection", e))?;
        let conn = Arc::new(LockConn {
            client,
            try_lock,
            unlock,
            stored,
        });
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.generation += 1;
        state.conn = Some(Arc::clone(&conn));
        Ok((conn, state.generation))
    }

    /// Tries to take the lock of session `id` without waiting, and looks up whether the
    /// session is stored. `None` when another connection holds the lock.
    pub(crate) async fn try_lock(&self, id: &str) -> Result<Option<Taken>> {
        let (conn, generation) = self.connection().await?;
        let key = session_lock_key(id);
        // One round trip: the two statements are sent together, and the server runs the
        // look-up after it granted the lock. So the look-up sees every write of a writer that
        // held the lock before, and no writer can create the session after it.
        let (lock_params, look_up_params): ([&(dyn ToSql + Sync); 1], [&(dyn ToSql + Sync); 1]) = ([&key], [&id]);
        let (taken, stored) = tokio::join!(
            conn.client.query_one(&conn.try_lock, &lock_params),
            conn.client.query_opt(&conn.stored, &look_up_params),
        );
        let taken: bool = taken
            .map_err(|e| pg(format!("locking session {id} for writing"), e))?
            .get(0);
        if !taken {
            return Ok(None);
        }
        match stored {
            Ok(row) => Ok(Some(Taken {
                generation,
                stored: row.is_some(),
            })),
            Err(e) => {
                // Not left holding a lock the caller does not know it has.
                self.unlock(id, generation).await;
                Err(pg(format!("looking up session {id} for writing"), e))
            }
        }
    }

    /// Whether locks taken in `generation` are still held: the connection that took them is
    /// the current one and still open.
    pub(crate) fn holds(&self, generation: u64) -> bool {
        self.current().is_some_and(|(_, current)| current == generation)
    }

    /// Releases the lock of session `id` taken in `generation`. Best effort: a lock whose
    /// connection is gone is already released.
    pub(crate) async fn unlock(&self, id: &str, generation: u64) {
        let Some((conn, current)) = self.current() else {
            return;
        };
        if current == generation {
            let _ = conn.client.execute(&conn.unlock, &[&session_lock_key(id)]).await;
        }
    }

    /// Releases every lock this store holds, now.
    pub(crate) async fn unlock_all(&self) {
        if let Some((conn, _)) = self.current() {
            let _ = conn.client.execute("select pg_advisory_unlock_all()", &[]).await;
        }
    }

    /// The server process id of the lock connection, if it is open: what `pg_locks.pid` shows
    /// for this store's locks.
    pub(crate) async fn backend_pid(&self) -> Result<Option<i32>> {
        let Some((conn, _)) = self.current() else {
            return Ok(None);
        };
        let row = conn
            .client
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
