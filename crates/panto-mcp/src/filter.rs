//! `allowed_tools` / `denied_tools`: which of a server's tools are offered.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The compiled `allowed_tools` and `denied_tools` of one server.
#[derive(Debug, Clone)]
pub(crate) struct ToolFilter {
    allowed: Option<GlobSet>,
    denied: GlobSet,
}

impl ToolFilter {
    /// Compiles the globs; the error names the list and the glob that does not parse.
    pub(crate) fn new(allowed: &[String], denied: &[String]) -> Result<ToolFilter, String> {
        let allowed = if allowed.is_empty() {
            None
        } else {
            Some(compile("allowed_tools", allowed)?)
        };
        Ok(ToolFilter {
            allowed,
            denied: compile("denied_tools", denied)?,
        })
    }

    /// Whether the tool the server calls `name` is offered.
    pub(crate) fn offers(&self, name: &str) -> bool {
        self.allowed.as_ref().is_none_or(|set| set.is_match(name)) && !self.denied.is_match(name)
    }
}

fn compile(list: &str, globs: &[String]) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for (i, glob) in globs.iter().enumerate() {
        // Tool names are not paths: `*` matches any characters, `/` included.
        let compiled = GlobBuilder::new(glob)
            .literal_separator(false)
            .build()
            .map_err(|e| format!("`{list}[{i}]` {glob:?} is not a valid glob: {}", e.kind()))?;
        set.add(compiled);
    }
    set.build().map_err(|e| format!("`{list}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_wins_over_allowed_and_empty_allowed_offers_all() {
        let filter = ToolFilter::new(&["read_*".into(), "echo".into()], &["read_secret*".into()]).unwrap();
        assert!(filter.offers("read_file"));
        assert!(filter.offers("echo"));
        assert!(!filter.offers("read_secrets"));
        assert!(!filter.offers("write_file"));
        let all = ToolFilter::new(&[], &["a/*".into()]).unwrap();
        assert!(all.offers("anything"));
        assert!(!all.offers("a/b/c"));
    }
}
