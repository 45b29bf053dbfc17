//! Running cargo from inside a program cargo started (a test, the xtask).

use std::process::Command;

/// The cargo that started this program (per `CARGO`, else `cargo` on `PATH`), without the
/// variables cargo set for this program alone (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`,
/// `CARGO_BIN_EXE_*`, `OUT_DIR`, …).
///
/// Build scripts fingerprint the variables they read (ring's reads `CARGO_MANIFEST_DIR`): a
/// build started with a test's or the xtask's `CARGO_MANIFEST_DIR` looked new to cargo, and it
/// rebuilt ring and every crate above it, minutes on two cores, once per test binary that built
/// a helper.
pub fn cargo_command() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let set_for_this_program = name.to_str().is_some_and(|name| {
            name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_BIN_EXE_")
                || matches!(
                    name,
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_BIN_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "OUT_DIR"
                )
        });
        if set_for_this_program {
            command.env_remove(name);
        }
    }
    command
}
