//! docs/ARCHITECTURE.md against the tree, so that the map cannot drift from the territory: every
//! file or directory it names in backticks exists, its table of panto-core's public surface
//! lists exactly what the crate root and its public modules export, and panto-tools' entry names
//! every item and public module of that crate's root.
//!
//! A path is looked up in the crate (or program) whose `### \`…\`` section of the code map names
//! it: a bare file name (`writer.rs`) must be that crate's, a path with a directory
//! (`agent/dispatch.rs`, `tests/cli/screen.rs`) may also be another crate's, as the text sometimes
//! names a neighbour's file. Text before the code map describes panto-core.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::store_api::pub_use_names;

/// The document checked, relative to the workspace root.
pub(super) const DOC: &str = "docs/ARCHITECTURE.md";

/// The crate the bird's-eye view describes, and whose surface the table lists.
const CORE: &str = "crates/panto-core";

/// The crate whose code-map entry must name everything its root exports (its surface is grouped
/// into public modules by user; the entry says what stays at the root).
const TOOLS: &str = "crates/panto-tools";

/// The heading of the surface table.
const SURFACE_HEADING: &str = "## Public surface of `panto-core`";

/// File name endings that make a backticked word a path.
const PATH_ENDINGS: &[&str] = &[".rs", ".md", ".json", ".toml", ".txt", ".h", ".c", ".go", ".sh"];

/// Adds a violation for every stale path and every difference between the surface table and the
/// crate's exports.
pub(super) fn check(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    let doc = std::fs::read_to_string(root.join(DOC)).with_context(|| format!("reading {DOC}"))?;
    let tree = Tree::list(root)?;
    violations.extend(stale_paths(&doc, &tree));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).with_context(|| format!("reading {path}"));
    let exports = Exports {
        root: pub_use_names(&read(&format!("{CORE}/src/lib.rs"))?)
            .into_iter()
            .map(|(_, name)| name)
            .collect(),
        modules: public_modules(&read(&format!("{CORE}/src/lib.rs"))?)
            .into_iter()
            .map(|module| {
                let text = read(&format!("{CORE}/src/{module}.rs"))
                    .or_else(|_| read(&format!("{CORE}/src/{module}/mod.rs")))?;
                Ok((module, module_exports(&text)))
            })
            .collect::<Result<_>>()?,
    };
    violations.extend(surface_differences(&doc, &exports));
    let tools_lib = read(&format!("{TOOLS}/src/lib.rs"))?;
    let mut tools_root = module_exports(&tools_lib);
    tools_root.extend(public_modules(&tools_lib));
    violations.extend(unnamed_exports(&doc, TOOLS, &tools_root));
    Ok(())
}

/// The names of `exports` (a crate's root) that the code-map entry of `section` does not name in
/// backticks (`builtin(&Options)` names `builtin`).
fn unnamed_exports(doc: &str, section: &str, exports: &BTreeSet<String>) -> Vec<String> {
    let heading = format!("### `{section}`");
    let Some(start) = doc.lines().position(|l| l == heading) else {
        return vec![format!("{DOC}: has no code-map entry \"{heading}\"")];
    };
    let named: BTreeSet<&str> = doc
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with('#'))
        .flat_map(code_spans)
        .map(|span| {
            let end = span
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(span.len());
            &span[..end]
        })
        .collect();
    exports
        .iter()
        .filter(|name| !named.contains(name.as_str()))
        .map(|name| {
            format!(
                "{DOC}: the code map's `{section}` entry does not name `{name}`, which {section}/src/lib.rs exports at the root"
            )
        })
        .collect()
}

/// Every file and directory of the workspace (relative paths with `/`, directories ending in
/// `/`), without build outputs and version control.
struct Tree {
    entries: BTreeSet<String>,
}

impl Tree {
    fn list(root: &Path) -> Result<Tree> {
        let mut entries = BTreeSet::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(dir) = stack.pop() {
            let read = std::fs::read_dir(root.join(&dir)).with_context(|| format!("listing {}", dir.display()))?;
            for entry in read {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if dir.as_os_str().is_empty() && matches!(name.as_str(), "target" | ".git") || name == "node_modules" {
                    continue;
                }
                let path = dir.join(&name);
                let text = path.to_string_lossy().replace('\\', "/");
                if entry.file_type()?.is_dir() {
                    entries.insert(format!("{text}/"));
                    stack.push(path);
                } else {
                    entries.insert(text);
                }
            }
        }
        Ok(Tree { entries })
    }

    #[cfg(test)]
    fn of(paths: &[&str]) -> Tree {
        let mut entries = BTreeSet::new();
        for path in paths {
            let mut prefix = String::new();
            for part in path.split_inclusive('/') {
                prefix.push_str(part);
                entries.insert(prefix.clone());
            }
        }
        Tree { entries }
    }

    /// Whether `path` names something inside `section` (a crate's directory), or, when it has a
    /// directory part, anywhere in the workspace.
    fn has(&self, section: &str, path: &str) -> bool {
        let inside = format!("{section}/");
        let bare = !path.contains('/');
        let path = path.trim_end_matches('/');
        let ends_with = |entry: &str| {
            let entry = entry.trim_end_matches('/');
            entry == path || entry.ends_with(&format!("/{path}"))
        };
        if self.entries.iter().any(|e| e.starts_with(&inside) && ends_with(e)) {
            return true;
        }
        !bare && self.entries.iter().any(|e| ends_with(e))
    }
}

/// The paths the document names that do not exist, as violations naming the document's line.
fn stale_paths(doc: &str, tree: &Tree) -> Vec<String> {
    let mut section = CORE.to_owned();
    let mut out = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("### `").and_then(|h| h.strip_suffix('`')) {
            section = heading.to_owned();
            continue;
        }
        if line.starts_with("## ") {
            section = CORE.to_owned();
        }
        for path in code_spans(line).filter(|s| is_path(s)) {
            if !tree.has(&section, path) {
                out.push(format!(
                    "{DOC}:{}: names `{path}`, which is not in {section} nor anywhere in the workspace",
                    i + 1
                ));
            }
        }
    }
    out
}

/// The text of each inline code span on a line.
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

/// Whether a code span is a path in the tree: one word of path characters that ends like a
/// source file, ends with `/` (a directory), or starts with one of the workspace's top-level
/// directories (`bindings/go`). A media type or a protocol method (`text/event-stream`,
/// `notifications/cancelled`) is none of these; build outputs (`target/…`) are not in a clean
/// tree.
fn is_path(span: &str) -> bool {
    let chars = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    let file = PATH_ENDINGS.iter().any(|e| span.ends_with(e));
    let top = TOP_LEVEL_DIRS
        .iter()
        .any(|d| span.strip_prefix(d).is_some_and(|rest| rest.starts_with('/')));
    chars && (file || span.ends_with('/') || top) && !span.starts_with(['/', '-']) && !span.starts_with("target/")
}

/// The workspace's top-level directories a path may start with.
const TOP_LEVEL_DIRS: &[&str] = &[
    "crates", "docs", "xtask", "tests", "include", "bindings", "examples", "fuzz",
];

/// What panto-core exports: the names its root re-exports, and each public module's names.
struct Exports {
    root: BTreeSet<String>,
    modules: Vec<(String, BTreeSet<String>)>,
}

/// The public modules `lib.rs` declares, without the hidden ones (`#[doc(hidden)]`).
fn public_modules(lib: &str) -> Vec<String> {
    let lines: Vec<&str> = lib.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = line.strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';')) else {
            continue;
        };
        let attributes = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("#[") || l.starts_with("///"));
        if !attributes.clone().any(|l| l.contains("doc(hidden)")) {
            out.push(name.to_owned());
        }
    }
    out
}

/// The names a module file exports: its `pub use` names and its top-level public items.
fn module_exports(text: &str) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = pub_use_names(text).into_iter().map(|(_, name)| name).collect();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("pub ") else {
            continue;
        };
        let rest = rest.strip_prefix("async ").unwrap_or(rest);
        for kind in ["fn ", "struct ", "enum ", "const ", "static ", "trait ", "type "] {
            if let Some(item) = rest.strip_prefix(kind) {
                let name: String = item
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                names.insert(name);
            }
        }
    }
    names
}

/// The differences between the surface table's first column and the exports.
fn surface_differences(doc: &str, exports: &Exports) -> Vec<String> {
    let Some(start) = doc.lines().position(|l| l.starts_with(SURFACE_HEADING)) else {
        return vec![format!("{DOC}: has no section \"{SURFACE_HEADING}\"")];
    };
    let mut listed_root: Vec<(usize, String)> = Vec::new();
    let mut listed_modules: Vec<(usize, String, String)> = Vec::new();
    for (i, line) in doc.lines().enumerate().skip(start + 1) {
        if line.starts_with("## ") {
            break;
        }
        let Some(cell) = line.strip_prefix("| ").and_then(|r| r.split(" | ").next()) else {
            continue;
        };
        for span in code_spans(cell) {
            match span.split_once("::{") {
                Some((module, names)) => listed_modules.extend(
                    names
                        .trim_end_matches('}')
                        .split(',')
                        .map(|n| (i + 1, module.to_owned(), n.trim().to_owned())),
                ),
                None => listed_root.push((i + 1, span.to_owned())),
            }
        }
    }
    let mut out = Vec::new();
    let root_listed: BTreeSet<&str> = listed_root.iter().map(|(_, n)| n.as_str()).collect();
    for (line, name) in &listed_root {
        if !exports.root.contains(name) {
            out.push(format!(
                "{DOC}:{line}: the surface table lists `{name}`, which panto-core's root does not export"
            ));
        }
    }
    for name in exports.root.iter().filter(|n| !root_listed.contains(n.as_str())) {
        out.push(format!(
            "{DOC}: panto-core's root exports `{name}` (crates/panto-core/src/lib.rs), which the surface table does not list"
        ));
    }
    for (module, names) in &exports.modules {
        let listed: BTreeSet<&str> = listed_modules
            .iter()
            .filter(|(_, m, _)| m == module)
            .map(|(_, _, n)| n.as_str())
            .collect();
        for name in names.iter().filter(|n| !listed.contains(n.as_str())) {
            out.push(format!(
                "{DOC}: `panto_core::{module}` exports `{name}`, which the surface table does not list (as `{module}::{{{name}}}`)"
            ));
        }
    }
    for (line, module, name) in &listed_modules {
        let exported = exports
            .modules
            .iter()
            .any(|(m, names)| m == module && names.contains(name));
        if !exported {
            out.push(format!(
                "{DOC}:{line}: the surface table lists `{module}::{name}`, which panto-core does not export"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        Tree::of(&[
            "crates/panto-core/src/agent/dispatch.rs",
            "crates/panto-core/src/event/json.rs",
            "crates/panto-cli/src/safe.rs",
            "crates/panto-cli/tests/cli/screen.rs",
            "crates/panto-tools/src/child/namespace.rs",
            "docs/stores.md",
        ])
    }

    #[test]
    fn a_stale_path_fails_and_a_present_one_passes() {
        let doc = "Intro: `agent/dispatch.rs` and `agent/gone.rs`, `cargo xtask arch`, `target/xtask`.\n\
                   ### `crates/panto-cli`\n\
                   `safe.rs`, `tests/cli/screen.rs`, `child/`, `docs/stores.md`, `json.rs`\n";
        assert_eq!(
            stale_paths(doc, &tree()),
            vec![
                format!(
                    "{DOC}:1: names `agent/gone.rs`, which is not in crates/panto-core nor anywhere in the workspace"
                ),
                // A bare file name must be the section's crate's own.
                format!("{DOC}:3: names `json.rs`, which is not in crates/panto-cli nor anywhere in the workspace"),
            ]
        );
    }

    #[test]
    fn words_that_are_not_paths_are_not_checked() {
        for word in [
            "Agent::run",
            "cargo xtask ci",
            "PANTO_LOG",
            "panto*",
            "libpanto.so",
            "--release",
            "target/xtask",
            "text/event-stream",
        ] {
            assert!(!is_path(word), "{word}");
        }
        for word in [
            "event/",
            "agent/dispatch.rs",
            "writer.rs",
            "bindings/go",
            "docs/events.schema.json",
        ] {
            assert!(is_path(word), "{word}");
        }
    }

    #[test]
    fn the_surface_table_must_equal_the_exports() {
        let doc = format!(
            "{SURFACE_HEADING}\n\n| item | why |\n| --- | --- |\n| `Agent`, `Gone` | run |\n| `store::{{new_session_id, old}}` | ids |\n\n## Next\n| `Ignored` | x |\n"
        );
        let exports = Exports {
            root: ["Agent", "Stream"].map(String::from).into(),
            modules: vec![(
                "store".to_owned(),
                ["new_session_id", "compact_view"].map(String::from).into(),
            )],
        };
        assert_eq!(
            surface_differences(&doc, &exports),
            vec![
                format!("{DOC}:5: the surface table lists `Gone`, which panto-core's root does not export"),
                format!("{DOC}: panto-core's root exports `Stream` (crates/panto-core/src/lib.rs), which the surface table does not list"),
                format!("{DOC}: `panto_core::store` exports `compact_view`, which the surface table does not list (as `store::{{compact_view}}`)"),
                format!("{DOC}:6: the surface table lists `store::old`, which panto-core does not export"),
            ]
        );
    }

    #[test]
    fn the_tools_entry_must_name_every_root_export() {
        let doc = format!(
            "### `{TOOLS}`\nThe root keeps `builtin(&Options)`, `Toolbox`; modules `policy` and `files.rs`.\n\n### `crates/panto-mcp`\n`Gone`\n"
        );
        let exports = ["builtin", "Toolbox", "policy", "process", "Gone"]
            .map(String::from)
            .into();
        assert_eq!(
            unnamed_exports(&doc, TOOLS, &exports),
            vec![
                format!("{DOC}: the code map's `{TOOLS}` entry does not name `Gone`, which {TOOLS}/src/lib.rs exports at the root"),
                format!("{DOC}: the code map's `{TOOLS}` entry does not name `process`, which {TOOLS}/src/lib.rs exports at the root"),
            ]
        );
        assert_eq!(
            unnamed_exports("## Elsewhere\n", TOOLS, &exports),
            vec![format!("{DOC}: has no code-map entry \"### `{TOOLS}`\"")]
        );
    }

    #[test]
    fn hidden_modules_are_not_part_of_the_surface() {
        let lib =
            "#[cfg(feature = \"x\")]\n#[doc(hidden)]\npub mod __bench;\nmod agent;\npub mod secret;\npub mod store;\n";
        assert_eq!(public_modules(lib), vec!["secret", "store"]);
        let module = "use x::y;\npub use a::{b, c as d};\npub fn looks(s: &str) -> bool {}\npub(crate) fn hidden() {}\npub const MAX: u64 = 1;\n    pub fn method() {}\n";
        assert_eq!(
            module_exports(module),
            ["b", "d", "looks", "MAX"].map(String::from).into()
        );
    }
}
