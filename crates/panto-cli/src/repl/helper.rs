//! The rustyline side of the REPL: tab completion of slash commands, aliases, session ids and
//! file names after `/image`, multi-line input, and the history file.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Config, Context, Editor, EventHandler, Helper, KeyCode, KeyEvent, Modifiers};

use super::commands::COMMANDS;

/// The most history entries kept.
const HISTORY_SIZE: usize = 10_000;

/// Completion and validation for the REPL line.
#[derive(Debug, Default)]
pub struct PantoHelper {
    /// Model aliases, for `/model `.
    pub aliases: Vec<String>,
    /// Recent session ids, for `/resume ` (refreshed by `/sessions`).
    pub sessions: Arc<Mutex<Vec<String>>>,
}

/// The candidates among `options` that start with `typed`.
fn matching(options: impl IntoIterator<Item = String>, typed: &str) -> Vec<Pair> {
    options
        .into_iter()
        .filter(|o| o.starts_with(typed))
        .map(|o| Pair {
            display: o.clone(),
            replacement: o,
        })
        .collect()
}

impl Completer for PantoHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        if !before.starts_with('/') {
            return Ok((0, Vec::new()));
        }
        if before.starts_with("/image ") {
            // File names, with spaces escaped as `/image` reads them.
            return FilenameCompleter::new().complete_path(line, pos);
        }
        match before.split_once(' ') {
            None => Ok((0, matching(COMMANDS.iter().map(|c| c.name.to_owned()), before))),
            Some((command, arg)) if !arg.contains(' ') => {
                let start = command.len() + 1;
                let options: Vec<String> = match command {
                    "/model" => self.aliases.clone(),
                    "/resume" => self.sessions.lock().unwrap_or_else(|e| e.into_inner()).clone(),
                    _ => Vec::new(),
                };
                Ok((start, matching(options, arg)))
            }
            Some(_) => Ok((0, Vec::new())),
        }
    }
}

impl Hinter for PantoHelper {
    type Hint = String;
}

impl Highlighter for PantoHelper {}

impl Validator for PantoHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        // A trailing backslash continues the input on the next line.
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for PantoHelper {}

/// Turns continued input (`line\` + newline) into plain newlines.
pub fn join_continuations(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// The line editor: Emacs keys, list completion, Alt-Enter for a newline, and the history from
/// `history` when there is one (a missing file is a first run, not an error).
pub fn editor(helper: PantoHelper, history: Option<&Path>) -> rustyline::Result<Editor<PantoHelper, DefaultHistory>> {
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .history_ignore_space(true)
        .completion_type(rustyline::CompletionType::List)
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config)?;
    editor.set_helper(Some(helper));
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Simple(Cmd::Newline),
    );
    if let Some(path) = history {
        if path.exists() {
            // A damaged history file should not stop the REPL; it is rewritten on the next save.
            let _ = editor.load_history(path);
        }
    }
    Ok(editor)
}

#[cfg(test)]
mod tests {
    use rustyline::history::DefaultHistory;

    use super::*;

    fn complete(helper: &PantoHelper, line: &str) -> (usize, Vec<String>) {
        let history = DefaultHistory::new();
        let ctx = Context::new(&history);
        let (start, pairs) = helper.complete(line, line.len(), &ctx).unwrap();
        (start, pairs.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn completes_commands_aliases_and_sessions() {
        let helper = PantoHelper {
            aliases: vec!["sonnet".into(), "gpt".into()],
            sessions: Arc::new(Mutex::new(vec!["0190ab".into()])),
        };
        assert_eq!(complete(&helper, "/mo"), (0, vec!["/model".into(), "/models".into()]));
        assert_eq!(complete(&helper, "/model s"), (7, vec!["sonnet".into()]));
        assert_eq!(complete(&helper, "/resume 01"), (8, vec!["0190ab".into()]));
        assert_eq!(complete(&helper, "hello /mo").1, Vec::<String>::new());
    }

    #[test]
    fn completes_file_names_after_image() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("screen shot.png"), b"x").unwrap();
        let typed = format!("/image {}/scr", dir.path().display());
        let (start, found) = complete(&PantoHelper::default(), &typed);
        assert_eq!(start, "/image ".len());
        assert_eq!(found, [format!("{}/screen\\ shot.png", dir.path().display())]);
    }

    #[test]
    fn continuation_backslashes_become_newlines() {
        assert_eq!(join_continuations("a\\\nb\\\nc"), "a\nb\nc");
        assert_eq!(join_continuations("path C:\\dir"), "path C:\\dir");
    }
}
