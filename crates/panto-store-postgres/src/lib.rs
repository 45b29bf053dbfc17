//! panto-store-postgres: panto's PostgreSQL session store, for services that run many agent
//! workers on many machines against one database.
//!
//! [`PostgresStore`] implements [`SessionStore`] with the same behaviour as the file store
//! (`panto-store-fs`), and keeps an audit trail the file store does not:
//!
//! - **Schema**: everything lives in the `panto` schema (`panto.sessions`, `panto.entries`,
//!   `panto.tools`, `panto.schema_migrations`), created and migrated by versioned migrations
//!   embedded in this crate and applied by [`PostgresStore::connect`]. Applying is idempotent
//!   and safe when many processes connect at once.
//! - **Listing**: each session row carries what a listing shows (message count, last human prompt
//!   and its time, last provider identity), kept current by every append, so [`SessionStore::list`]
//!   and [`Session::latest`](panto_core::Session::latest) read only the sessions table, ordered by an index on recency.
//! - **History**: every message ever appended is an entry row (message and usage as `jsonb`,
//!   provider identity, entry id and parent id, compaction record). [`SessionStore::load`] returns
//!   the compacted view; [`PostgresStore::history`] the whole log.
//! - **Provenance**: every entry records the tools offered with it as a list of content
//!   addresses into `panto.tools`, which holds one row per distinct tool ([`ToolHash`]). The
//!   [`AUDIT_QUERY`] (and [`PostgresStore::tools_offered`]) answers "which tools did the model
//!   see at entry X".
//! - **Search**: [`SessionStore::search`] finds the candidate entries through trigram indexes
//!   (`pg_trgm`, schema version 4) over the text of prompts and answers and over tool text, so it
//!   does not read every row, and confirms each on the decoded message ([`search_sql`]).
//! - **Atomic appends**: an append is one statement (one round trip, one transaction); after an
//!   error none of the batch is stored.
//! - **One writer per session**, across processes and hosts: the first append takes a
//!   PostgreSQL advisory lock on the session and holds it while the session's
//!   [`Agent`](panto_core::Agent) lives (dropping the agent releases it, as do
//!   [`PostgresStore::release`] and dropping the store); another writer gets
//!   [`Error::SessionInUse`], as with the file store. Readers never lock. All the locks of a
//!   store live on one connection, so many live agents cost no connection each.
//! - **TLS** when the connection string says `sslmode=require` (or `verify-ca`, `verify-full`),
//!   always with the server's certificate checked, against `sslrootcert=FILE` or the Mozilla
//!   roots; plain text otherwise.
//! - **No password in messages**: errors and `Debug` name the database by host, port, database
//!   and user only; [`redact_connection_string`] is how a program shows a connection string. A
//!   URL with more than one unencoded `@` is refused (a password's `@` must be `%40`), since
//!   the database driver would otherwise take part of the password for the host.
//!
//! `docs/stores.md` explains both stores, how to choose, the schema, the audit query and how to
//! move sessions from the file store ([`import_fs`]).
//!
//! # Example
//! ```no_run
//! use panto_core::store::PersistentMessage;
//! use panto_core::{Conversation, Session, SessionStore};
//! use panto_store_postgres::PostgresStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> panto_core::Result<()> {
//! let store = PostgresStore::connect("postgres://panto@db.internal/panto").await?;
//! let mut session = Session::create(store.clone());
//! let mut conversation = Conversation::new();
//! conversation.add_user_message("What changed since yesterday?");
//! session
//!     .append(&[PersistentMessage {
//!         message: &conversation.messages[0],
//!         usage: None,
//!         wire: None,
//!         conversation: &conversation,
//!         tools_available: &[],
//!         compaction: None,
//!     }])
//!     .await?;
//! assert_eq!(store.list().await?[0].id, session.id());
//! // A service that is done with a session lets other workers resume it.
//! store.release(session.id()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! The example needs a database, so it is compiled but not run here; `tests/pg/` runs the same
//! calls against a real PostgreSQL.
//!
//! [`SessionStore`]: panto_core::SessionStore
//! [`SessionStore::list`]: panto_core::SessionStore::list
//! [`SessionStore::load`]: panto_core::SessionStore::load
//! [`SessionStore::search`]: panto_core::SessionStore::search
//! [`Error::SessionInUse`]: panto_core::Error::SessionInUse
#![deny(missing_docs)]
#![deny(unreachable_pub)]

/// The listing columns of `panto.sessions`, in the order `read::info_from_row` reads them. A
/// macro so that queries can be assembled with `concat!` into `&'static str`s.
macro_rules! info_columns {
    () => {
        "id, created, modified, last_prompt_at, message_count, last_user_message, \
         wire_api_style, wire_base_url, wire_model, wire_reasoning, forked_from_session, forked_from_entry, cwd"
    };
}

mod append_sql;
mod batch;
mod branch;
mod checkpoint;
mod db;
mod import;
mod lock;
mod migrate;
mod pool;
mod read;
mod redact;
mod search;
mod store;
mod tls;
mod tools;
mod tree;
mod view;
mod writer;

pub use import::{import_fs, ImportReport};
pub use lock::session_lock_key;
pub use migrate::SCHEMA_VERSION;
pub use read::{HistoryEntry, RecordedCompaction, ToolManifest, AUDIT_QUERY};
pub use redact::redact_connection_string;
pub use search::search_sql;
pub use store::{PostgresOptions, PostgresStore};
pub use tools::{canonical_encoding, ToolHash};
