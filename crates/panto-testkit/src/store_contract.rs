//! The SessionStore contract suite (being written).
