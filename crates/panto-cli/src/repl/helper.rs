//! The rustyline side of the REPL: the completion menu and Tab completion of slash commands,
//! `@` paths, aliases, session ids and file names after `/image` (see `menu.rs`), multi-line
//! input, Shift-Tab and Ctrl-O, and the history file.

use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Context, Editor, Event, EventContext, EventHandler, Helper, KeyCode,
    KeyEvent, Modifiers, RepeatCount,
};

use super::commands::{Command, Completes};
use super::menu::{self, Menu, ProjectFiles};
use crate::tools::Approval;

/// The most history entries kept.
const HISTORY_SIZE: usize = 10_000;

/// Completion and validation for the REPL line.
#[derive(Default)]
pub struct PantoHelper {
    /// Model aliases, for `/model `.
    pub aliases: Vec<String>,
    /// Wire model names panto knows for the provider (its pricing table), for `/model ` after
    /// the aliases.
    pub models: Vec<String>,
    /// Recent session ids, for `/resume `.
    pub sessions: RecentIds,
    /// The project's files, for `@`.
    pub files: ProjectFiles,
    /// Whether the menu is drawn with styles.
    pub colour: bool,
}

/// Where a listing of session ids comes from: the store, asked when they are first needed.
type ListIds = Arc<dyn Fn() -> Option<Vec<String>> + Send + Sync>;

/// The session ids `/resume ` completes: listed the first time Tab asks for them (not at
/// start-up, where `-c` and `-r` have just listed the store, and a new session needs no
/// listing), and replaced by the ids `/sessions` showed.
#[derive(Clone, Default)]
pub struct RecentIds {
    ids: Arc<Mutex<Option<Vec<String>>>>,
    list: Option<ListIds>,
}

impl RecentIds {
    /// Ids that `list` lists on first use; `None` from it (a listing that failed) is asked again
    /// next time.
    pub fn listed_by(list: impl Fn() -> Option<Vec<String>> + Send + Sync + 'static) -> RecentIds {
        RecentIds {
            ids: Arc::default(),
            list: Some(Arc::new(list)),
        }
    }

    /// The ids, listing them first if that has not happened yet.
    pub fn get(&self) -> Vec<String> {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        if ids.is_none() {
            *ids = self.list.as_ref().and_then(|list| list());
        }
        ids.clone().unwrap_or_default()
    }

    /// Replaces the ids (with the ones `/sessions` just showed).
    pub fn set(&self, new: Vec<String>) {
        *self.ids.lock().unwrap_or_else(|e| e.into_inner()) = Some(new);
    }
}

/// A candidate shown and inserted as `text`.
fn pair(text: String) -> Pair {
    Pair {
        display: text.clone(),
        replacement: text,
    }
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
            // `@path`: the word under the cursor completes as the menu shows it.
            let word_start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
            if let Some(path) = before[word_start..].strip_prefix('@') {
                let found = menu::file_candidates(&self.files, path);
                return Ok((word_start + 1, found.into_iter().map(pair).collect()));
            }
            return Ok((0, Vec::new()));
        }
        let Some((name, arg)) = before.split_once(' ') else {
            let found = menu::command_candidates(before);
            return Ok((0, found.into_iter().map(|c| pair(c.name.to_owned())).collect()));
        };
        let completes = Command::named(name).map_or(Completes::Nothing, |c| c.spec().completes);
        let start = name.len() + 1;
        Ok(match completes {
            // Every word of the argument is a file name; spaces in one are escaped.
            Completes::Files => return FilenameCompleter::new().complete_path(line, pos),
            // One word: after a space there is nothing more to complete.
            _ if arg.contains(' ') => (0, Vec::new()),
            Completes::Alias => {
                let mut names = self.aliases.clone();
                names.extend(self.models.iter().filter(|m| !self.aliases.contains(m)).cloned());
                (start, matching(names, arg))
            }
            Completes::Session => (start, matching(self.sessions.get(), arg)),
            Completes::Mode => (
                start,
                matching(Approval::ALL.iter().map(|m| m.as_str().to_owned()), arg),
            ),
            Completes::Nothing => (start, Vec::new()),
        })
    }
}

/// The completion menu is the line's hint: the line editor draws it under the line and clears
/// it with the line.
impl Hinter for PantoHelper {
    type Hint = Menu;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<Menu> {
        menu::menu(line, pos, &self.files, crate::render::columns())
    }
}

impl Highlighter for PantoHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> std::borrow::Cow<'h, str> {
        if self.colour {
            menu::paint(hint).into()
        } else {
            hint.into()
        }
    }
}

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

/// A key that returned the line from the editor to have something done at the prompt; the line
/// then goes back into the editor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKey {
    /// Ctrl-O: the last tool result in full.
    Expand,
    /// Shift-Tab: the next approval mode.
    Cycle,
}

impl PromptKey {
    fn code(self) -> u8 {
        match self {
            PromptKey::Expand => 1,
            PromptKey::Cycle => 2,
        }
    }
}

/// The [`PromptKey`] that returned the line the editor just returned ([`PromptKey::code`]), or 0.
static RETURNED_BY: AtomicU8 = AtomicU8::new(0);

/// The key that returned the line the editor just returned, if one did (it is then forgotten).
pub fn take_key() -> Option<PromptKey> {
    match RETURNED_BY.swap(0, Ordering::SeqCst) {
        1 => Some(PromptKey::Expand),
        2 => Some(PromptKey::Cycle),
        _ => None,
    }
}

/// A [`PromptKey`] at the prompt: ends the line editing with the line as typed, [`take_key`]
/// saying why. The line editor cannot draw above itself, so the REPL does what the key asks and
/// then asks again with the same line.
struct ReturnKey(PromptKey);

impl ConditionalEventHandler for ReturnKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext<'_>) -> Option<Cmd> {
        // A line ending in `\` is continued, not returned, on Enter: nothing to do there.
        if ctx.line().ends_with('\\') {
            return Some(Cmd::Noop);
        }
        RETURNED_BY.store(self.0.code(), Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// Esc with the menu open closes it (until the line changes); otherwise Esc does what it did.
struct CloseMenu;

impl ConditionalEventHandler for CloseMenu {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext<'_>) -> Option<Cmd> {
        if !ctx.has_hint() {
            return None;
        }
        menu::dismiss(ctx.line());
        Some(Cmd::Repaint)
    }
}

/// Ctrl-C with the menu open clears the line (and so the menu) where it is; otherwise Ctrl-C
/// returns from the line editor as it did. Returning would leave the menu's rows on the screen
/// under the abandoned line.
struct InterruptMenu;

impl ConditionalEventHandler for InterruptMenu {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext<'_>) -> Option<Cmd> {
        ctx.has_hint().then_some(Cmd::Kill(rustyline::Movement::WholeBuffer))
    }
}

/// Readies the helper for a new prompt: the project's files are walked again when `@` needs
/// them, and the menu closed with Esc opens again.
pub fn new_prompt(helper: Option<&PantoHelper>) {
    if let Some(helper) = helper {
        helper.files.forget();
    }
    menu::reset();
}

/// Turns continued input (`line\` + newline) into plain newlines.
pub fn join_continuations(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// The line editor: Emacs keys, the completion menu with Tab taking its candidates in turn (Esc
/// closes it), Alt-Enter for a newline, Shift-Tab and Ctrl-O, and the history from `history`
/// when there is one (a missing file is a first run, not an error).
pub fn editor(helper: PantoHelper, history: Option<&Path>) -> rustyline::Result<Editor<PantoHelper, DefaultHistory>> {
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .history_ignore_space(true)
        // Tab puts in the menu's first candidate, the next Tab the second, and so on (Esc puts
        // back what was typed).
        .completion_type(rustyline::CompletionType::Circular)
        // A lone Esc is a key of its own (it closes the menu) after this long without another
        // key; a terminal sends Alt-key and arrow sequences in one write.
        .keyseq_timeout(Some(50))
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config)?;
    editor.set_helper(Some(helper));
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Simple(Cmd::Newline),
    );
    editor.bind_sequence(
        KeyEvent::ctrl('o'),
        EventHandler::Conditional(Box::new(ReturnKey(PromptKey::Expand))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::BackTab, Modifiers::NONE),
        EventHandler::Conditional(Box::new(ReturnKey(PromptKey::Cycle))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Esc, Modifiers::NONE),
        EventHandler::Conditional(Box::new(CloseMenu)),
    );
    editor.bind_sequence(KeyEvent::ctrl('c'), EventHandler::Conditional(Box::new(InterruptMenu)));
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
            models: Vec::new(),
            sessions: RecentIds::listed_by(|| Some(vec!["0190ab".into()])),
            ..PantoHelper::default()
        };
        assert_eq!(complete(&helper, "/mo"), (0, vec!["/model".into(), "/models".into()]));
        assert_eq!(complete(&helper, "/model s"), (7, vec!["sonnet".into()]));
        assert_eq!(complete(&helper, "/model sonnet x").1, Vec::<String>::new());
        assert_eq!(complete(&helper, "/resume 01"), (8, vec!["0190ab".into()]));
        assert_eq!(complete(&helper, "/help x").1, Vec::<String>::new());
        assert_eq!(complete(&helper, "/approve a"), (9, vec!["ask".into(), "auto".into()]));
        assert_eq!(complete(&helper, "/approve r").1, ["read-only"]);
        assert_eq!(complete(&helper, "hello /mo").1, Vec::<String>::new());
    }

    #[test]
    fn model_completes_aliases_then_the_known_wire_models() {
        let pricing = panto_core::pricing::PricingRegistry::new();
        let helper = PantoHelper {
            aliases: vec!["opus".into(), "claude-haiku-4-5".into()],
            models: pricing.known_models(panto_core::ApiStyle::AnthropicMessages),
            sessions: RecentIds::default(),
            ..PantoHelper::default()
        };
        let (start, found) = complete(&helper, "/model claude-so");
        assert_eq!(start, 7);
        assert!(found.contains(&"claude-sonnet-4".to_owned()), "{found:?}");
        assert!(found.iter().all(|m| m.starts_with("claude-so")), "{found:?}");
        // An alias first, and a model that is also an alias once.
        assert_eq!(complete(&helper, "/model o").1, ["opus"]);
        assert_eq!(complete(&helper, "/model claude-haiku-4-5").1, ["claude-haiku-4-5"]);
        assert!(!complete(&helper, "/model gpt").1.iter().any(|m| m.starts_with("gpt")));
    }

    #[test]
    fn sessions_are_listed_once_and_only_when_resume_completes() {
        let listings = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = listings.clone();
        let helper = PantoHelper {
            aliases: Vec::new(),
            models: Vec::new(),
            sessions: RecentIds::listed_by(move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Some(vec!["0190ab".into(), "0191cd".into()])
            }),
            ..PantoHelper::default()
        };
        let count = || listings.load(std::sync::atomic::Ordering::SeqCst);
        complete(&helper, "/res");
        complete(&helper, "/model x");
        assert_eq!(count(), 0, "no listing before /resume is completed");
        assert_eq!(complete(&helper, "/resume 0190").1, ["0190ab"]);
        assert_eq!(complete(&helper, "/resume 019").1, ["0190ab", "0191cd"]);
        assert_eq!(count(), 1, "listed once");
        helper.sessions.set(vec!["0192ef".into()]);
        assert_eq!(complete(&helper, "/resume ").1, ["0192ef"]);
        assert_eq!(count(), 1);
    }

    #[test]
    fn a_failed_listing_is_tried_again() {
        let failing = RecentIds::listed_by(|| None);
        assert!(failing.get().is_empty());
        let tries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = tries.clone();
        let ids = RecentIds::listed_by(move || {
            (counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0).then(|| vec!["0190ab".to_owned()])
        });
        assert!(ids.get().is_empty());
        assert_eq!(ids.get(), ["0190ab"]);
        assert_eq!(ids.get(), ["0190ab"]);
        assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 2);
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
    fn completes_file_names_after_an_at() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "").unwrap();
        let typed = format!("look at @{}/no", dir.path().display());
        let helper = PantoHelper {
            aliases: Vec::new(),
            models: Vec::new(),
            sessions: RecentIds::listed_by(|| None),
            ..PantoHelper::default()
        };
        let (start, found) = complete(&helper, &typed);
        assert_eq!(found, [format!("{}/notes.md", dir.path().display())]);
        assert_eq!(start, "look at @".len());
    }

    #[test]
    fn continuation_backslashes_become_newlines() {
        assert_eq!(join_continuations("a\\\nb\\\nc"), "a\nb\nc");
        assert_eq!(join_continuations("path C:\\dir"), "path C:\\dir");
    }
}
