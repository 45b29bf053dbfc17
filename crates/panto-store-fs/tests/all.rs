//! Tests of `JsonlStore`: the shared contract suite, and what only a file store can
//! get wrong (torn lines, corrupt lines, locks, permissions, bounded listing, the format itself).

mod fs {
    mod common;

    mod agent;
    mod compaction;
    mod contract;
    mod corrupt;
    mod decoded;
    mod format;
    mod hostile;
    mod hostile_model;
    mod listing;
    mod locking;
    mod permissions;
    mod proptests;
    mod search;
    mod torn;
    mod tree;
}
