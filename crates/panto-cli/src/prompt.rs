//! The effective system prompt: the configured prompt (or panto's default) plus `AGENTS.md` from
//! the working directory.
//!
//! The result is one text. A fresh session is seeded with it; a resumed session whose recorded
//! prompt differs gets it through `set_system_prompt`, so the log shows when and how it changed.

use std::path::Path;

use crate::config::{PromptSource, Settings};
use crate::exit::Failure;

/// The file of project instructions read from the working directory.
pub const AGENTS_FILE: &str = "AGENTS.md";

/// panto's prompt when none is configured. `{cwd}` is replaced by the working directory.
const DEFAULT_PROMPT: &str = "\
You are panto, a coding agent working in a terminal with the user. You can read files, write and \
edit them, and run shell commands with your tools. Work in small verified steps: read before you \
edit, run the tests or the program after a change, and report what you did and what you found in \
a few plain sentences. Ask when a request is ambiguous. Never invent file contents or command \
output.

The working directory is {cwd}. Relative paths in tool calls are relative to it.";

/// Builds the effective system prompt for `cwd`.
pub fn compose(settings: &Settings, cwd: &Path) -> Result<String, Failure> {
    let mut prompt = match &settings.prompt {
        PromptSource::Default => DEFAULT_PROMPT.replace("{cwd}", &cwd.display().to_string()),
        PromptSource::Text(text) => text.clone(),
        PromptSource::File(path) => std::fs::read_to_string(path).map_err(|e| {
            Failure::usage(format!(
                "cannot read system_prompt_file {} (set in {}): {e}",
                path.display(),
                settings.config_path_display()
            ))
        })?,
    };
    if settings.agents_md {
        let path = cwd.join(AGENTS_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => {
                if !prompt.is_empty() {
                    prompt.push_str("\n\n");
                }
                prompt.push_str(&format!(
                    "# Project instructions ({})\n\n{}",
                    path.display(),
                    text.trim_end()
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Failure::runtime(format!("cannot read {}: {e}", path.display()))),
        }
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::Env;

    fn settings(prompt: PromptSource) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "").unwrap();
        let mut s = Settings::load(Some(&path), &Env::from_pairs(&[])).unwrap();
        s.prompt = prompt;
        s
    }

    #[test]
    fn default_prompt_names_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let p = compose(&settings(PromptSource::Default), dir.path()).unwrap();
        assert!(p.contains(&dir.path().display().to_string()), "{p}");
    }

    #[test]
    fn agents_md_is_appended_to_the_configured_prompt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
        let p = compose(&settings(PromptSource::Text("Be brief.".into())), dir.path()).unwrap();
        assert!(p.starts_with("Be brief.\n\n# Project instructions"), "{p}");
        assert!(p.ends_with("Use tabs."), "{p}");
        let mut s = settings(PromptSource::Text("Be brief.".into()));
        s.agents_md = false;
        assert_eq!(compose(&s, dir.path()).unwrap(), "Be brief.");
    }

    #[test]
    fn missing_prompt_file_is_a_usage_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = PathBuf::from("/nonexistent/prompt.md");
        let e = compose(&settings(PromptSource::File(missing)), dir.path()).unwrap_err();
        assert_eq!(e.code, crate::exit::EXIT_USAGE);
        assert!(e.message.contains("/nonexistent/prompt.md"), "{}", e.message);
    }
}
