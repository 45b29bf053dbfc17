//! `#[path]` includes stay inside their crate. Code that several crates need lives in a crate
//! they depend on (test and bench support in panto-testkit), never in one crate's files included
//! by path into another: such a file is compiled into each includer with its own copy of every
//! item, and the crate that owns it cannot tell who else builds it.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

/// The trees whose Rust files are checked: every crate of the workspace, and the fuzz project.
const TREES: &[&str] = &["crates", "xtask", "fuzz"];

/// Adds a violation for every `#[path = "…"]` that leads out of the crate of the file it is in.
pub(super) fn check(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    for tree in TREES {
        let tree = root.join(tree);
        if !tree.exists() {
            continue;
        }
        // Build output (`target`) and hidden directories are not sources.
        let sources = super::rust_files_where(&tree, |dir| {
            dir.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n != "target" && !n.starts_with('.'))
        })?;
        for file in sources {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let Some(krate) = crate_root_of(&file) else {
                continue;
            };
            let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
            for (line, target) in path_attributes(&text) {
                let dir = file.parent().unwrap_or(root);
                if !normalize(&dir.join(&target)).starts_with(&krate) {
                    violations.push(format!(
                        "{shown}:{line}: `#[path = \"{target}\"]` includes a file of another crate; share it through \
                         a crate (test and bench support: panto-testkit) instead"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The directory of the nearest `Cargo.toml` at or above `file`'s directory.
fn crate_root_of(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.toml").is_file())
        .map(Path::to_path_buf)
}

/// The targets of the `#[path = "…"]` attributes in `text`, with their lines (1-based); lines
/// that are comments are skipped.
fn path_attributes(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(rest) = squeezed.strip_prefix("#[path=\"") else {
            continue;
        };
        if let Some(end) = rest.find('"') {
            out.push((i + 1, rest[..end].to_owned()));
        }
    }
    out
}

/// `path` with `.` and `..` resolved lexically (the files need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_path_attributes_but_not_comments() {
        let src = "#[path = \"a/b.rs\"]\nmod b;\n// #[path = \"../x.rs\"]\n  #[path=\"../../c/d.rs\"] mod d;\n";
        assert_eq!(
            path_attributes(src),
            vec![(1, "a/b.rs".to_owned()), (4, "../../c/d.rs".to_owned())]
        );
    }

    #[test]
    fn an_include_from_another_crate_leaves_the_crate() {
        let krate = Path::new("/w/crates/panto-store-fs");
        let bench_dir = krate.join("benches");
        assert!(!normalize(&bench_dir.join("../../panto-core/benches/common/mod.rs")).starts_with(krate));
        assert!(normalize(&bench_dir.join("../tests/support.rs")).starts_with(krate));
        assert!(normalize(&bench_dir.join("data/mod.rs")).starts_with(krate));
    }
}
