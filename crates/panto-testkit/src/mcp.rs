//! The `mcp-fault-server` binary (src/bin/mcp-fault-server.rs), for tests and benches of other
//! crates: cargo builds a package's binaries only for that package's own tests, so the first
//! caller builds it.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The path of `mcp-fault-server`, built (once per process, with the cargo running the tests
/// and the same profile directory) if it is not there yet. Panics with cargo's output when the
/// build fails.
pub fn fault_server() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
            // The whole workspace's feature resolution: with `-p panto-testkit` alone the
            // dependencies resolved other features, and every test binary that started this
            // rebuilt most of the graph (minutes in CI). It is still not quite what `cargo test
            // --workspace` built, which adds the dev-dependencies' features, so under CI the
            // first caller builds the binary once more (about three minutes on two cores).
            let mut command = crate::cargo_command();
            command.args(["build", "--quiet", "--workspace", "--bin", "mcp-fault-server"]);
            if profile == "release" {
                command.arg("--release");
            }
            let output = command
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap_or_else(|e| panic!("running cargo to build mcp-fault-server: {e}"));
            assert!(
                output.status.success(),
                "building mcp-fault-server failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            crate::bench::target_dir().join(profile).join("mcp-fault-server")
        })
        .clone()
}
