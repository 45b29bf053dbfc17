//! panto-mcp against `mcp-fault-server` (panto-testkit): one integration-test binary.

mod agent;
mod basics;
mod faults;
mod hostile;
mod processes;
mod support;
