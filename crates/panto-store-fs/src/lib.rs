//! panto-store-fs: panto's embedded session store, one append-only JSONL file per session.
//!
//! [`JsonlStore`] implements [`SessionStore`] over a directory:
//!
//! - Each session is `<dir>/<session id>.jsonl` (mode 0600; the directory is created 0700 on the
//!   first append). Line 1 is a header written once; every later line is one message entry.
//!   Committed bytes are never rewritten.
//! - An append writes its whole batch with one `write` of whole lines and, by default, `fsync`s
//!   before returning ([`Durability`]). A failed batch is cut off again, so it stores nothing.
//! - Each entry carries the session's running activity (message count, last human prompt and
//!   its time, last provider identity), so [`SessionStore::list`] reads only the header and the last
//!   line of each file: a bounded number of bytes however long the log is.
//! - A compaction is recorded on the summary entry; [`SessionStore::load`] returns the compacted
//!   view while the file keeps the full history.
//! - The first append to a session takes an exclusive advisory lock (`flock`) on its file and
//!   holds it while the session's [`Agent`](panto_core::Agent) lives: dropping the agent closes
//!   the file (as do [`JsonlStore::release`] and dropping the store). So a process holds one
//!   descriptor per live agent, not per session it ever wrote. A second writer, in another
//!   process or through another store, gets [`Error::SessionInUse`]. Readers never lock.
//! - A crash mid-append leaves at most a torn final line: reads skip it and the next writer cuts
//!   it off. A crash between creating a new session's file and its first write leaves an empty
//!   file, which holds no session. A bad line anywhere else is [`Error::CorruptSession`] naming
//!   the file and line.
//! - The directory's contents are not trusted: a session file is opened only if it is a regular
//!   file, never through a symbolic link, and never waiting on a FIFO; anything else is an error
//!   naming the file and what it is (and [`SessionStore::list`] skips it). No line may exceed
//!   [`MAX_LINE`] bytes: the writer refuses to write one and readers refuse to hold one, so a
//!   damaged file costs bounded memory. [`check_dir`] finds what makes a directory unsafe (other
//!   users can write it, it is not the user's, it holds links or FIFOs named like sessions),
//!   for a program to show its user.
//!
//! - [`SessionStore::search`] streams the files with ripgrep's searcher and decodes only the
//!   lines that could hold a match, then confirms each on the decoded message (a match in a key,
//!   an id or an entry's copy of the last prompt does not count).
//!
//! - [`JsonlStore::session_file`] reads a session whole, every entry of every branch as written,
//!   for moving it to another store: the format has this one reader (panto-store-postgres's
//!   import reads through it), besides the crash harness's check written from the specification.
//!
//! The format is specified in `docs/session-format.md`.
//!
//! # Example
//! ```
//! use panto_core::store::PersistentMessage;
//! use panto_core::{Conversation, Session, SessionStore};
//! use panto_store_fs::JsonlStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> panto_core::Result<()> {
//! let dir = tempfile::tempdir().expect("a temporary directory");
//! let store = JsonlStore::new(dir.path().join("sessions"));
//!
//! // Creating a session does no I/O; the first append creates its file.
//! let mut session = Session::create(store.clone());
//! let mut conversation = Conversation::with_metadata(r#"{"project":"demo"}"#);
//! conversation.add_user_message("What is in this directory?");
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
//!
//! // Listing reads the header and last line of each file.
//! let listed = store.list().await?;
//! assert_eq!(listed[0].id, session.id());
//! assert_eq!(listed[0].message_count, 1);
//! assert_eq!(listed[0].last_user_message.as_deref(), Some("What is in this directory?"));
//!
//! // A session can be found again by a prefix of its id, and loaded.
//! let found = Session::resolve(store.clone(), &session.id()[..13]).await?.expect("the session");
//! assert_eq!(found.load().await?, conversation);
//! # Ok(())
//! # }
//! ```
//!
//! [`SessionStore`]: panto_core::SessionStore
//! [`SessionStore::list`]: panto_core::SessionStore::list
//! [`SessionStore::search`]: panto_core::SessionStore::search
//! [`SessionStore::load`]: panto_core::SessionStore::load
//! [`Error::SessionInUse`]: panto_core::Error::SessionInUse
//! [`Error::CorruptSession`]: panto_core::Error::CorruptSession
#![deny(missing_docs)]
#![deny(unreachable_pub)]

mod batch;
mod checkpoint;
mod commit;
mod dir;
mod edges;
mod fork;
mod format;
mod history;
mod json;
mod lines;
mod listing;
mod log;
mod open;
mod read;
mod search;
mod skim;
mod store;
mod timestamp;
mod writer;

pub use commit::Durability;
pub use dir::{check_dir, DirWarning};
pub use format::MAX_LINE;
pub use history::{FileCompaction, FileEntry, FileEntryKind, SessionFile};
pub use store::{JsonlStore, UnreadableFiles};
