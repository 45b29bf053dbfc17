//! The [`SessionStore`] contract suite: the behaviour every store must show, written once and run
//! against every store (`MemoryStore` here, `JsonlStore` in panto-store-fs,
//! `PostgresStore` in panto-store-postgres, and any store an embedder writes).
//!
//! [`store_contract_tests!`](crate::store_contract_tests) turns the suite into one `#[tokio::test]`
//! per case, in the module where it is invoked, so every failing case is reported on its own.
//! Give it a closure that makes a fresh, empty store per case: an `Arc` of the store, or a pair
//! of the store and something to keep alive until the case ends (a temporary directory):
//!
//! ```
//! use panto_core::MemoryStore;
//!
//! panto_testkit::store_contract_tests!(|| async { MemoryStore::new() });
//! # fn main() {}
//! ```
//!
//! Every case is also public on its own, taking one fresh store, so a case can be run by hand (on
//! a runtime of another flavour, say). A case that finds the store misbehaving panics with a
//! message naming the case and what differed, as a test assertion does.
//!
//! Sessions are written the way the agent writes them: through [`Session::append`], with the
//! whole conversation, a realistic [`ProviderIdentity`] on every non-system message and the tools
//! offered; and they are made the way the agent's embedder makes them, with
//! [`Session::create`], [`Session::resolve`] and [`Session::latest`].
//!
//! [`Session::append`]: panto_core::Session::append
//! [`Session::create`]: panto_core::Session::create
//! [`Session::resolve`]: panto_core::Session::resolve
//! [`Session::latest`]: panto_core::Session::latest
//! [`ProviderIdentity`]: panto_core::wire::ProviderIdentity

use std::any::Any;
use std::sync::Arc;

use panto_core::SessionStore;

mod binding;
mod content;
mod driver;
mod listing;
mod lookup;
mod messages;
mod search;
mod tree;

pub use binding::{
    a_wrapper_store_sees_every_append, primitives_agree_with_the_listing, sessions_are_bound_to_the_store_asked,
};
pub use content::{
    compaction_inside_a_batch, compaction_loads_the_compacted_view, conversation_metadata_is_fixed_at_creation,
    round_trip_every_content_kind,
};
pub use driver::{append_offering, append_one, ids, info_of, must_list, must_load, tick, Driver};
pub use listing::{
    a_session_lists_its_directory, latest_is_the_most_recent, list_orders_by_last_human_prompt, listing_info_is_exact,
    synthetic_closer_does_not_move_a_session_up,
};
pub use lookup::{never_appended_session_is_not_found, resolve_by_id_and_prefix, unknown_sessions_load_as_none};
pub use messages::{
    anthropic_wire, assistant, local_openai_wire, reply, summary, system, tool_result, tools, user, PNG_1X1,
};
pub use search::{
    must_search, search_by_regex, search_finds_a_word_said_once, search_finds_tool_text_only_when_asked,
    search_is_newest_first, search_says_which_branch,
};
pub use tree::{
    a_branch_switch_rewinds_and_keeps_the_log, a_fork_carries_the_file_changes_of_its_path,
    a_fork_copies_the_path_and_records_its_origin, branch_errors_name_the_entry, branches_are_reported_unsupported,
    checkpoint_records_belong_to_the_tip, checkpoints_are_reported_unsupported, checkpoints_round_trip_byte_for_byte,
    compaction_on_one_branch_leaves_the_other,
};

/// What the store maker of [`store_contract_tests!`](crate::store_contract_tests) may return: a
/// store, or a store and a value that must live as long as the case (a temporary directory, a
/// server handle).
pub trait StoreUnderTest {
    /// The store as the agent holds it, and what to keep alive beside it.
    fn into_store(self) -> (Arc<dyn SessionStore>, Box<dyn Any>);
}

impl<S: SessionStore + 'static> StoreUnderTest for Arc<S> {
    fn into_store(self) -> (Arc<dyn SessionStore>, Box<dyn Any>) {
        (self, Box::new(()))
    }
}

impl StoreUnderTest for Arc<dyn SessionStore> {
    fn into_store(self) -> (Arc<dyn SessionStore>, Box<dyn Any>) {
        (self, Box::new(()))
    }
}

impl<S: StoreUnderTest, K: 'static> StoreUnderTest for (S, K) {
    fn into_store(self) -> (Arc<dyn SessionStore>, Box<dyn Any>) {
        let (store, kept) = self.0.into_store();
        (store, Box::new((kept, self.1)))
    }
}

/// Defines one `#[tokio::test]` per case of the [store contract](crate::store_contract), each
/// on a fresh store from `$make`: a closure returning a future of a [`StoreUnderTest`](crate::store_contract::StoreUnderTest) (an
/// `Arc` of the store, or the store and what to keep alive beside it). Each test runs on a
/// multi-threaded runtime of two workers; the calling crate needs `tokio` with the `macros` and
/// `rt-multi-thread` features.
///
/// A store in a directory returns the directory beside the store, so that it is removed only
/// when the case ends: `(JsonlStore::new(dir.path().join("sessions")), dir)` in
/// panto-store-fs's `tests/fs/contract.rs`.
#[macro_export]
macro_rules! store_contract_tests {
    ($make:expr) => {
        $crate::store_contract_tests!(@base ($make)
            a_branch_switch_rewinds_and_keeps_the_log
            a_fork_copies_the_path_and_records_its_origin
            compaction_on_one_branch_leaves_the_other
            branch_errors_name_the_entry
            checkpoints_round_trip_byte_for_byte
            checkpoint_records_belong_to_the_tip
            a_fork_carries_the_file_changes_of_its_path
            search_says_which_branch
        );
    };
    // A store that keeps one chain per session and no file checkpoints: every case but the
    // branch and checkpoint ones, and cases holding it to saying so (`Error::Unsupported`) while
    // still giving entry ids.
    ($make:expr, without_branches) => {
        $crate::store_contract_tests!(@base ($make)
            branches_are_reported_unsupported
            checkpoints_are_reported_unsupported
        );
    };
    (@base ($make:expr) $($extra:ident)*) => {
        $crate::store_contract_tests!(@cases ($make)
            round_trip_every_content_kind
            conversation_metadata_is_fixed_at_creation
            list_orders_by_last_human_prompt
            synthetic_closer_does_not_move_a_session_up
            listing_info_is_exact
            a_session_lists_its_directory
            resolve_by_id_and_prefix
            latest_is_the_most_recent
            unknown_sessions_load_as_none
            never_appended_session_is_not_found
            compaction_loads_the_compacted_view
            compaction_inside_a_batch
            primitives_agree_with_the_listing
            sessions_are_bound_to_the_store_asked
            a_wrapper_store_sees_every_append
            search_finds_a_word_said_once
            search_finds_tool_text_only_when_asked
            search_by_regex
            search_is_newest_first
            $($extra)*
        );
    };
    (@cases ($make:expr) $($case:ident)*) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let (store, _kept) = $crate::store_contract::StoreUnderTest::into_store(($make)().await);
                $crate::store_contract::$case(store).await;
            }
        )*
    };
}
