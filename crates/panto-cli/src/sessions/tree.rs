//! `/tree`: a session's branches as text lines.

use std::collections::{HashMap, HashSet};

use panto_core::store::SessionTree;

/// How many characters of a prompt a line shows.
const PREVIEW: usize = 60;

/// The prompts of every branch of `tree`, depth first in append order, indented one step at each
/// point where the conversation branched; `*` marks the prompts of the active branch and `(you
/// are here)` its last one.
pub fn tree_lines(tree: &SessionTree) -> Vec<String> {
    let mut children: HashMap<Option<&str>, Vec<usize>> = HashMap::new();
    for (i, e) in tree.entries.iter().enumerate() {
        children.entry(e.entry.parent.as_deref()).or_default().push(i);
    }
    let index: HashMap<&str, usize> = tree
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.entry.id.as_str(), i))
        .collect();
    let mut active: HashSet<usize> = HashSet::new();
    let mut next = tree.tip.as_deref().and_then(|t| index.get(t).copied());
    while let Some(i) = next {
        active.insert(i);
        next = tree.entries[i]
            .entry
            .parent
            .as_deref()
            .and_then(|p| index.get(p).copied());
    }
    let last_active_prompt = tree
        .entries
        .iter()
        .enumerate()
        .filter(|(i, e)| e.is_prompt && active.contains(i))
        .map(|(i, _)| i)
        .max();

    let mut lines = Vec::new();
    // An explicit stack: a long session is a deep chain, too deep to recurse on.
    let mut stack: Vec<(Option<&str>, usize)> = vec![(None, 0)];
    while let Some((parent, depth)) = stack.pop() {
        let kids = children.get(&parent).map(Vec::as_slice).unwrap_or(&[]);
        let child_depth = if kids.len() > 1 { depth + 1 } else { depth };
        for &i in kids.iter().rev() {
            stack.push((Some(tree.entries[i].entry.id.as_str()), child_depth));
        }
        let Some(parent) = parent else { continue };
        let i = index[parent];
        let e = &tree.entries[i];
        if !e.is_prompt {
            continue;
        }
        let mark = if active.contains(&i) { "*" } else { " " };
        let here = if Some(i) == last_active_prompt {
            "  (you are here)"
        } else {
            ""
        };
        lines.push(format!("{mark} {}{}{here}", "  ".repeat(depth), preview(&e.preview)));
    }
    if lines.is_empty() {
        lines.push("(no prompts yet)".to_owned());
    }
    lines
}

fn preview(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(PREVIEW) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panto_core::store::{EntryRef, TreeEntry};
    use panto_core::Role;

    fn entry(id: &str, parent: Option<&str>, prompt: bool, text: &str) -> TreeEntry {
        TreeEntry {
            entry: EntryRef {
                id: id.to_owned(),
                parent: parent.map(str::to_owned),
            },
            role: if prompt { Role::User } else { Role::Assistant },
            preview: text.to_owned(),
            is_prompt: prompt,
        }
    }

    #[test]
    fn branches_are_indented_and_the_active_one_marked() {
        let tree = SessionTree {
            entries: vec![
                entry("1", None, true, "q1"),
                entry("2", Some("1"), false, "a1"),
                entry("3", Some("2"), true, "q2"),
                entry("4", Some("3"), false, "a2"),
                entry("5", Some("2"), true, "q2 again"),
                entry("6", Some("5"), false, "a2'"),
            ],
            tip: Some("6".to_owned()),
        };
        assert_eq!(tree_lines(&tree), ["* q1", "    q2", "*   q2 again  (you are here)"]);
    }
}
