//! What the benches share: where results go, and the facts file `cargo xtask bench` reads.
//!
//! Criterion records times; it does not know how many wire events a body held or what a
//! latency percentile was. Each bench binary therefore writes the facts the targets need to
//! `target/bench-results/<bench>.tsv`, one `id<TAB>key<TAB>value` row each, and `cargo xtask
//! bench` joins them with criterion's estimates.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The workspace's target directory (`CARGO_TARGET_DIR`, else `<workspace>/target`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    }
}

/// Facts gathered by one bench binary, written out by [`Facts::save`].
#[derive(Debug)]
pub struct Facts {
    bench: &'static str,
    rows: String,
}

impl Facts {
    /// An empty set of facts for the bench binary `bench`.
    pub fn new(bench: &'static str) -> Self {
        Facts {
            bench,
            rows: String::new(),
        }
    }

    /// Records `key = value` for the benchmark `id` (criterion's `group/function` id).
    pub fn add(&mut self, id: &str, key: &str, value: impl std::fmt::Display) {
        let _ = writeln!(self.rows, "{id}\t{key}\t{value}");
    }

    /// Writes `target/bench-results/<bench>.tsv`, replacing the previous run's.
    pub fn save(&self) {
        let dir = target_dir().join("bench-results");
        let path = dir.join(format!("{}.tsv", self.bench));
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &self.rows)) {
            panic!("writing bench facts to {}: {e}", path.display());
        }
    }
}
