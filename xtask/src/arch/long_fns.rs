//! A function of library code longer than [`MAX_LINES`] lines says why in a comment: a line
//! starting `// Long:` (or `/// Long:`) among the comments and attributes above it. Long
//! functions are where one concept hides several; the comment makes the length a decision.
//!
//! The sources are rustfmt's output, so a function ends at the first line after its signature
//! that is its indentation followed by `}`. Tests (a `#[test]` function, an inline
//! `#[cfg(test)]` module, a file only tests compile) are not library code.

use std::path::Path;

use anyhow::{Context, Result};

/// The longest a function may be, in lines from its signature to its closing brace, without a
/// reason.
pub(super) const MAX_LINES: usize = 150;

/// Adds a violation for every library function over [`MAX_LINES`] lines with no `Long:` comment.
pub(super) fn check(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    for dir in super::expand(root, &["crates/*/src", "examples/service/src"])? {
        if !dir.exists() {
            continue;
        }
        let files = super::rust_files(&dir, true)?;
        let test_only = super::test_only_files(&files)?;
        for file in files.iter().filter(|f| !test_only.iter().any(|t| f.starts_with(t))) {
            let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
            for (line, name, length) in long_functions(&text) {
                violations.push(format!(
                    "{}:{line}: fn {name} is {length} lines (over {MAX_LINES}) with no `// Long:` comment saying why",
                    file.strip_prefix(root).unwrap_or(file).display()
                ));
            }
        }
    }
    Ok(())
}

/// The functions of `text` over [`MAX_LINES`] lines without a reason: line (1-based), name,
/// length.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    // The closing line of the test module being skipped.
    let mut skip_until: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(end) = &skip_until {
            if line == end {
                skip_until = None;
            }
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let above = preamble(&lines[..i]);
        if line.trim_start().starts_with("mod ") && line.ends_with('{') && above.iter().any(|l| l.contains("cfg(test)"))
        {
            skip_until = Some(format!("{indent}}}"));
            continue;
        }
        let Some(name) = fn_name(line.trim_start()) else {
            continue;
        };
        if line.ends_with(';')
            || above
                .iter()
                .any(|l| l.contains("#[test]") || l.contains("::test]") || l.contains("::test("))
        {
            continue;
        }
        let end = format!("{indent}}}");
        let Some(length) = lines[i + 1..].iter().position(|l| *l == end).map(|n| n + 2) else {
            continue;
        };
        let reasoned = above.iter().any(|l| {
            let l = l.trim_start();
            l.starts_with("// Long:") || l.starts_with("/// Long:")
        });
        if length > MAX_LINES && !reasoned {
            out.push((i + 1, name.to_owned(), length));
        }
    }
    out
}

/// The doc comments, comments and attributes directly above a line.
fn preamble<'a>(before: &[&'a str]) -> Vec<&'a str> {
    before
        .iter()
        .rev()
        .take_while(|l| {
            let l = l.trim_start();
            l.starts_with("//") || l.starts_with("#[") || l.starts_with("#![")
        })
        .copied()
        .collect()
}

/// The name a line declares a function of, if it does.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line;
    for qualifier in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
        "extern \"C\" ",
    ] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(name: &str, attrs: &str, body_lines: usize) -> String {
        format!(
            "{attrs}    pub(crate) async fn {name}(&mut self) -> u32 {{\n{}    }}\n",
            "        x += 1;\n".repeat(body_lines)
        )
    }

    #[test]
    fn a_long_function_needs_a_reason_and_tests_do_not() {
        let text = format!(
            "impl A {{\n{}{}{}{}}}\n#[cfg(test)]\nmod tests {{\n{}}}\n",
            function("short", "", 10),
            function("long", "    /// Does a lot.\n", 200),
            function(
                "reasoned",
                "    // Long: one arm per event kind, in wire order.\n    #[inline]\n",
                200
            ),
            function("a_test", "    #[tokio::test]\n", 200),
            function("in_tests_module", "", 200),
        );
        assert_eq!(long_functions(&text), vec![(15, "long".to_owned(), 202)]);
    }

    #[test]
    fn declarations_without_bodies_are_not_functions_here() {
        assert_eq!(
            fn_name("pub unsafe extern \"C\" fn panto_run(x: u8) -> i32 {"),
            Some("panto_run")
        );
        assert_eq!(fn_name("let f = 1;"), None);
        assert!(long_functions("trait T {\n    fn f(&self);\n}\n").is_empty());
    }
}
