//! panto-testkit's integration tests: the mock server as its users see it (over real sockets,
//! with reqwest and with raw HTTP), and the store contract suite against the stores panto-core
//! ships.

mod contract;
mod mock;
