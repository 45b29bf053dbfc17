//! The root of panto-core's API holds what users of a session store handle (`Session`,
//! `SessionInfo`, the stores panto-core ships); what only store implementers need (ids, recency,
//! the compacted view, `MemoryStore`'s records) is under `panto_core::store`, so the root stays
//! the short list a user reads. A helper re-exported at the root as well would be two paths to
//! one item, and the root would grow with every helper.

use std::path::Path;

use anyhow::{Context, Result};

/// The facade of the implementer helpers, and the crate root.
const STORE_MODULE: &str = "crates/panto-core/src/store/mod.rs";
const CRATE_ROOT: &str = "crates/panto-core/src/lib.rs";

/// Adds a violation for every name that both the `store` module and the crate root re-export.
pub(super) fn check(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    let read = |path: &str| std::fs::read_to_string(root.join(path)).with_context(|| format!("reading {path}"));
    let helpers = pub_use_names(&read(STORE_MODULE)?);
    if helpers.is_empty() {
        violations.push(format!(
            "{STORE_MODULE}: re-exports no store-implementer helpers; if they moved, update xtask/src/arch/store_api.rs"
        ));
    }
    for (line, name) in pub_use_names(&read(CRATE_ROOT)?) {
        if helpers.iter().any(|(_, helper)| *helper == name) {
            violations.push(format!(
                "{CRATE_ROOT}:{line}: `{name}` is a store-implementer helper; it belongs under panto_core::store only"
            ));
        }
    }
    Ok(())
}

/// The names a file's `pub use` items bring in (the alias where there is one), each with the
/// line of its `pub use`.
pub(super) fn pub_use_names(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut statement: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim();
        match &mut statement {
            None if code.starts_with("pub use ") => statement = Some((i + 1, code["pub use ".len()..].to_owned())),
            None => continue,
            Some((_, text)) => {
                text.push(' ');
                text.push_str(code);
            }
        }
        if let Some((line, text)) = statement.take_if(|(_, text)| text.ends_with(';')) {
            out.extend(imported_names(&text).into_iter().map(|name| (line, name)));
        }
    }
    out
}

/// The names a use tree (`a::b::{c, d as e}`) imports: its leaves, aliases taken.
fn imported_names(tree: &str) -> Vec<String> {
    let tree = tree.trim_end_matches(';');
    let leaves = match (tree.find('{'), tree.rfind('}')) {
        (Some(open), Some(close)) if open < close => &tree[open + 1..close],
        _ => tree,
    };
    leaves
        .split(',')
        .filter_map(|leaf| {
            let leaf = leaf.trim();
            let name = match leaf.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => leaf.rsplit("::").next().unwrap_or(leaf).trim(),
            };
            (!name.is_empty() && name != "self" && name != "*").then(|| name.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pub_use_names_across_lines_with_aliases() {
        let src = "mod a;\npub use a::{x, y as z};\n// pub use gone::w;\npub use b::{\n    c,\n    d,\n};\nuse private::p;\npub use e::f;\n";
        let names: Vec<(usize, String)> = ["x", "z"]
            .iter()
            .map(|n| (2, n.to_string()))
            .chain(["c", "d"].iter().map(|n| (4, n.to_string())))
            .chain([(9, "f".to_owned())])
            .collect();
        assert_eq!(pub_use_names(src), names);
    }
}
