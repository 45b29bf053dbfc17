//! What a session store implementer needs beyond the [`SessionStore`](crate::SessionStore) trait:
//! the one definition of session ids, of recency, of the listing's prompt preview, of what a
//! compaction does to the view and of the `panto.store.append` span ([`AppendSpan`]), which every
//! store shares so that they all behave alike (the store contract suite in `panto-testkit` holds
//! them to it).
//!
//! # The seam
//! A store implements [`SessionStore`](crate::SessionStore): small `&self` primitives over its
//! storage (`list`, `info`, `ids_with_prefix`, `latest_info`, `load`, `append`). panto-core
//! builds everything else on them, once: [`Session::create`](crate::Session::create),
//! [`Session::resolve`](crate::Session::resolve) (exact id, else unique prefix, else
//! [`Error::AmbiguousSession`](crate::Error::AmbiguousSession)) and
//! [`Session::latest`](crate::Session::latest). A session handed out by them is bound to the
//! store it was asked of, so a wrapper store (one that adds caching, metrics or access control
//! and delegates to an inner store) hands out sessions whose appends go through the wrapper.
//!
//! A wrapper store implements [`StoreWrapper`] rather than the seam: it names its inner store and
//! overrides only the methods it changes; every other method forwards to the inner store's own.
//!
//! It also holds the session tree's types: what [`SessionStore::load`](crate::SessionStore::load)
//! and [`SessionStore::append`](crate::SessionStore::append) exchange ([`PersistentMessage`],
//! [`LoadedBranch`], [`CompactionRecord`], [`CheckpointRecord`]) and what browsing a tree returns
//! ([`SessionTree`], [`TreeEntry`], [`EntryRef`], [`ForkOrigin`]). The types every user of a store
//! handles ([`Session`](crate::Session), [`SessionInfo`](crate::SessionInfo),
//! [`MemoryStore`](crate::MemoryStore), …) are at the crate root.

pub(crate) mod checkpoint;
pub(crate) mod files;
mod id;
pub(crate) mod info;
pub(crate) mod memory;
pub(crate) mod null;
pub(crate) mod seam;
pub(crate) mod search;
pub(crate) mod session;
mod span;
mod view;
mod wrapper;

pub use checkpoint::{
    checkpoint_address, validate_checkpoint_address, CheckpointRecord, StoredCheckpoint, MAX_CHECKPOINT_BYTES,
};
pub use id::{new_session_id, validate_session_id, EntryIds};
pub use info::{sort_by_recency, LAST_USER_MESSAGE_CHARS};
pub use memory::StoredRecord;
pub use seam::{CompactionRecord, EntryRef, ForkOrigin, LoadedBranch, PersistentMessage, SessionTree, TreeEntry};
pub use search::{
    finish_hits, scan_search, MatchSource, MessageMatch, SearchHit, SearchMatcher, SearchQuery, SNIPPET_CONTEXT_CHARS,
    SNIPPET_MATCH_CHARS,
};
pub use span::AppendSpan;
pub use view::compact_view;
pub use wrapper::StoreWrapper;
