//! panto-otel's integration tests: spans through the export to the test kit's OTLP receiver on
//! 127.0.0.1, from a hand-made turn and from a real panto-core turn.

mod export;
mod turn;

/// Taken for a whole test by each test here: the exporters read the process environment
/// (`OTEL_*`), which the tests set, and `turn` installs the process's global subscriber.
static PROCESS_ENV: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Removes every `OTEL_*` variable a test before this one set (the lock's holder calls it first),
/// so that each test starts from an environment without an exporter.
fn clear_otel_env() {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("OTEL_")) {
            std::env::remove_var(name);
        }
    }
}
