//! Test support for panto (being written).
#![deny(missing_docs)]

pub mod store_contract;
