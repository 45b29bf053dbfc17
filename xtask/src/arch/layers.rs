//! panto-core's top modules are layered, and no two of them import each other: data
//! (`conversation`, `tool`, `config`, `event`, …) below `provider` and `store`, below `agent`,
//! with `trace` beside `agent` (docs/ARCHITECTURE.md, "Layers of panto-core"). [`ALLOWED`] lists
//! the modules each top module may name; any other `crate::X` path in its code is a forbidden
//! edge, reported with its file and line.
//!
//! Comments (doc links included) and `#[cfg(test)]` code are not read: neither builds an import
//! the library's modules depend on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

const CORE_SRC: &str = "crates/panto-core/src";

/// Each top module of panto-core and the top modules its code may use. Read from the bottom
/// up: a module only names modules listed before it, so the table is a layering and no cycle
/// can pass the check.
pub(super) const ALLOWED: &[(&str, &[&str])] = &[
    // Leaves.
    ("secret", &[]),
    ("image", &[]),
    // Data: the protocol and identity on the wire, configuration, the conversation (with the
    // tool declarations a request offers), errors, events, prices.
    ("identity", &[]),
    // The public face of `identity` (`panto_core::wire`).
    ("wire", &["identity"]),
    ("config", &["identity"]),
    ("conversation", &["identity"]),
    ("error", &["conversation"]),
    ("event", &["conversation", "error"]),
    ("pricing", &["config", "conversation", "identity"]),
    // Keeping sessions (and the file checkpoints a tool records in them).
    ("store", &["config", "identity", "conversation", "error"]),
    // Tools: a call carries the session's file checkpoints, so tools sit on the store.
    ("tool", &["conversation", "error", "store"]),
    ("registry", &["tool", "error"]),
    // Talking to the provider.
    (
        "provider",
        &["config", "identity", "conversation", "error", "event", "registry"],
    ),
    // Running the agent, and tracing it beside it (trace takes numbers, never an agent type).
    (
        "trace",
        &["config", "identity", "conversation", "error", "event", "provider"],
    ),
    (
        "agent",
        &[
            "config",
            "identity",
            "conversation",
            "error",
            "event",
            "image",
            "store",
            "tool",
            "registry",
            "provider",
            "trace",
        ],
    ),
    // Benchmark access to internals: above everything it measures.
    (
        "bench_internals",
        &["config", "conversation", "error", "tool", "provider"],
    ),
];

/// Files included with `#[path]` under `#[cfg(test)]`, which the declaration scan cannot see:
/// test code, not read.
const TEST_FILES: &[&str] = &["registry_proptests.rs"];

/// Adds a violation for every forbidden edge between panto-core's top modules.
pub(super) fn check(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    let src = root.join(CORE_SRC);
    for found in forbidden_edges(&src, ALLOWED)? {
        violations.push(format!(
            "{}:{}: `crate::{}` is an edge {} -> {} that panto-core's layers forbid (xtask/src/arch/layers.rs)",
            Path::new(CORE_SRC).join(&found.file).display(),
            found.line,
            found.path,
            found.from,
            found.to
        ));
    }
    Ok(())
}

/// One use of a module its module may not use.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Edge {
    /// The file, relative to the crate's `src`.
    pub file: PathBuf,
    pub line: usize,
    pub from: String,
    pub to: String,
    /// The path as written after `crate::`.
    pub path: String,
}

/// The forbidden edges of the crate whose sources are in `src`, under `allowed`. A top module
/// the table does not list is itself a violation (so a new module is placed in the layers when
/// it is added), reported as an edge to `?`.
pub(super) fn forbidden_edges(src: &Path, allowed: &[(&str, &[&str])]) -> Result<Vec<Edge>> {
    let root_names = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).context("reading lib.rs")?);
    let table: BTreeMap<&str, &[&str]> = allowed.iter().copied().collect();
    let files = super::rust_files(src, false)?;
    let test_only = super::test_only_files(&files)?;
    let mut out = Vec::new();
    for file in files.iter().filter(|f| !test_only.iter().any(|t| f.starts_with(t))) {
        let relative = file.strip_prefix(src).unwrap_or(file).to_path_buf();
        if TEST_FILES.iter().any(|t| relative == Path::new(t)) {
            continue;
        }
        let Some(from) = top_module(&relative) else {
            continue;
        };
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let Some(may) = table.get(from.as_str()) else {
            out.push(Edge {
                file: relative,
                line: 1,
                from,
                to: "?".to_owned(),
                path: "(a top module missing from the table of layers)".to_owned(),
            });
            continue;
        };
        for (line, path) in crate_paths(&text) {
            let first = path.split("::").next().unwrap_or_default();
            let to = if table.contains_key(first) {
                first.to_owned()
            } else if let Some(module) = root_names.get(first) {
                module.clone()
            } else {
                // A macro or an item of lib.rs itself.
                continue;
            };
            if to != from && !may.contains(&to.as_str()) {
                out.push(Edge {
                    file: relative.clone(),
                    line,
                    from: from.clone(),
                    to,
                    path,
                });
            }
        }
    }
    Ok(out)
}

/// The top module a file belongs to (`config.rs` and `provider/http.rs` give `config` and
/// `provider`); `None` for the crate root.
fn top_module(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_owned())
}

/// The paths after `crate::` in a file's code, with their line: `crate::a::b` gives `a::b`, and
/// `crate::{a::b, c}` gives `a::b` and `c`. Comments are skipped, and so is everything from the
/// first `#[cfg(test)]` item with a body on (a file's tests come last); a `#[cfg(test)] mod x;`
/// declaration is skipped alone.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut after_cfg_test = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            after_cfg_test = true;
            continue;
        }
        if after_cfg_test && !trimmed.starts_with("#[") && !trimmed.starts_with("//") {
            if trimmed.ends_with(';') {
                // `#[cfg(test)] mod tests;`: the declaration only (its file is skipped as test-only).
                after_cfg_test = false;
                continue;
            }
            // A test module or item with a body: a file's tests come last.
            break;
        }
        let code = trimmed.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or_default();
                for item in inner.split(',') {
                    let item = item.trim();
                    if !item.is_empty() {
                        out.push((i + 1, item.split_whitespace().next().unwrap_or(item).to_owned()));
                    }
                }
                continue;
            }
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let path = path.trim_end_matches(':').to_owned();
            if !path.is_empty() {
                out.push((i + 1, path));
            }
        }
    }
    out
}

/// The names lib.rs re-exports from its modules (`pub use config::{ApiStyle, Config}` maps both to
/// `config`), so that `crate::Config` counts as an edge to `config`.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut statement = String::new();
    for line in lib.lines() {
        let code = line.split("//").next().unwrap_or_default().trim();
        if statement.is_empty() && !code.starts_with("pub use ") {
            continue;
        }
        statement.push_str(code);
        statement.push(' ');
        if !code.ends_with(';') {
            continue;
        }
        let body = statement
            .trim()
            .trim_start_matches("pub use ")
            .trim_end_matches(';')
            .trim();
        let module = body.split("::").next().unwrap_or_default().trim().to_owned();
        let names = match body.find('{') {
            Some(open) => body[open + 1..].trim_end_matches('}').to_owned(),
            None => body.rsplit("::").next().unwrap_or_default().to_owned(),
        };
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap_or(name).trim();
            if !name.is_empty() {
                out.insert(name.to_owned(), module.clone());
            }
        }
        statement.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate of three modules in a tree under a temporary directory.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    const TABLE: &[(&str, &[&str])] = &[("data", &[]), ("provider", &["data"]), ("agent", &["data", "provider"])];

    #[test]
    fn a_layered_tree_passes_and_an_upward_edge_is_named_with_its_file_and_line() {
        let lib = "mod agent;\nmod data;\nmod provider;\npub use data::{Message, Role as R};\n";
        let good = tree(&[
            ("lib.rs", lib),
            (
                "data.rs",
                "// crate::agent in a comment is no edge\npub struct Message;\n",
            ),
            ("provider/mod.rs", "use crate::data::Message;\nfn f(_: crate::R) {}\n"),
            ("agent.rs", "use crate::{data, provider::x};\n"),
        ]);
        assert_eq!(forbidden_edges(good.path(), TABLE).unwrap(), Vec::new());

        let bad = tree(&[
            ("lib.rs", lib),
            ("data.rs", "pub struct Message;\n"),
            (
                "provider/http.rs",
                "#[cfg(test)]\nmod tests;\nuse crate::data::Message;\nfn f() { crate::agent::run(); }\n#[cfg(test)]\nmod t { use crate::agent; }\n",
            ),
            ("agent.rs", "pub fn run() {}\n"),
        ]);
        let found = forbidden_edges(bad.path(), TABLE).unwrap();
        assert_eq!(
            found,
            vec![Edge {
                file: PathBuf::from("provider/http.rs"),
                line: 4,
                from: "provider".to_owned(),
                to: "agent".to_owned(),
                path: "agent::run".to_owned(),
            }]
        );
    }

    #[test]
    fn a_root_reexport_counts_as_its_module_and_an_unlisted_module_is_refused() {
        let dir = tree(&[
            (
                "lib.rs",
                "mod agent;\nmod data;\nmod extra;\npub use agent::{\n    Agent,\n};\n",
            ),
            ("data.rs", "fn f(_: &crate::Agent) {}\n"),
            ("agent.rs", "pub struct Agent;\n"),
            ("extra.rs", "\n"),
        ]);
        let found = forbidden_edges(dir.path(), TABLE).unwrap();
        let described: Vec<(String, String)> = found.iter().map(|e| (e.from.clone(), e.to.clone())).collect();
        assert_eq!(
            described,
            [
                ("data".to_owned(), "agent".to_owned()),
                ("extra".to_owned(), "?".to_owned())
            ]
        );
    }

    #[test]
    fn the_table_is_a_layering() {
        for (i, (module, may)) in ALLOWED.iter().enumerate() {
            for used in *may {
                let below = ALLOWED[..i].iter().any(|(m, _)| m == used);
                assert!(below, "{module} may use {used}, which is not listed before it");
            }
        }
    }
}
