//! panto-store-fs (being written).
#![deny(missing_docs)]
