//! libpanto: the C ABI (being written).
