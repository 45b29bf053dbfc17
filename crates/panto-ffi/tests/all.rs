//! libpanto's Rust-side integration tests: the C ABI driven from Rust against the mock LLM server
//! on 127.0.0.1, and the committed header's version defines. (The C and Go programs in `tests/c/`
//! and `bindings/go/` cover the same ground from the other side; `cargo xtask ffi-test` runs
//! them.)

mod abi;
mod header;
