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
            // Built as `cargo test --workspace` builds it: a package's binaries are built with
            // the feature resolution of the command that builds them, and `cargo build` leaves
            // out the dev-dependencies' features that a test build unifies in. Building the
            // workspace's `all` tests (one per package, this package's among them) with
            // `--no-run` makes cargo build the binary exactly as the test step did, so under CI it
            // is found fresh; with `-p panto-testkit`, or with
            // `cargo build --workspace`, other features were resolved and every first caller
            // rebuilt most of the dependency graph (minutes on two cores).
            let mut command = crate::cargo_command();
            command.args(["test", "--quiet", "--workspace", "--no-run", "--test", "all"]);
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
