//! The interactive REPL.
//!
//! The loop is synchronous: rustyline reads a line (the terminal in raw mode, so Ctrl-C is a key
//! and clears the line), then the turn or command runs on the tokio runtime with the terminal back
//! in cooked mode (so Ctrl-C is SIGINT and cancels the turn).

mod branch;
mod commands;
mod helper;
mod turn;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use panto_core::{Agent, ContentBlock, Conversation, PricingRegistry, Role, Usage, UserMessage};
use rustyline::error::ReadlineError;

use crate::attach::{self, Attachment};
use crate::config::{Selection, Settings};
use crate::cost::{summary_line, thousands};
use crate::exit::Failure;
use crate::render::Screen;
use crate::sessions::{short_ids, table, RECENT};
use crate::setup::{self, Launch, SessionChoice};
use crate::store::OpenStore;
use crate::terminal::TerminalAsker;
use crate::tools::{Approval, Gate, ToolContext, ToolName};
use commands::{Command, Parsed};
use helper::{join_continuations, PantoHelper, RecentIds};

/// Whether the loop goes on after a command.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// Tokens and cost of this process's turns in the current session.
#[derive(Debug, Default)]
struct Totals {
    usage: Usage,
    /// Summed cost; `None` once any turn's cost was unknown.
    cost: Option<u64>,
    turns: u32,
}

impl Totals {
    fn new() -> Self {
        Totals {
            usage: Usage::default(),
            cost: Some(0),
            turns: 0,
        }
    }

    fn add(&mut self, outcome: &turn::TurnOutcome) {
        self.add_request(&outcome.usage, outcome.cost);
        self.turns += 1;
    }

    /// Counts a request made outside a turn (a `/compact` summary).
    fn add_request(&mut self, usage: &Usage, cost: Option<u64>) {
        self.usage.accumulate(usage);
        self.cost = match (self.cost, cost) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
}

/// The REPL's state.
struct Repl<'r> {
    rt: &'r tokio::runtime::Runtime,
    settings: Settings,
    /// Whether sessions are kept (not with `--no-session`).
    saving: bool,
    store: OpenStore,
    gate: Arc<Gate>,
    tools: Vec<ToolName>,
    ctx: ToolContext,
    agent: Agent,
    selection: Selection,
    pricing: PricingRegistry,
    screen: Screen,
    totals: Totals,
    /// Session ids for `/resume` completion.
    recent_ids: RecentIds,
    /// `$HOME`, for `~/` in dragged image paths.
    home: Option<PathBuf>,
    /// Images attached with `/image`, sent with the next prompt.
    pending_images: Vec<Attachment>,
}

/// Runs the REPL until `/quit` or end of input.
pub fn run(rt: &tokio::runtime::Runtime, launch: Launch, approval: Approval) -> Result<ExitCode, Failure> {
    let screen = Screen::detect(&launch.env);
    // Answers are typed at a terminal. Piped input is prompts, not answers: a line meant as the
    // next prompt must never approve a command, so without a terminal every question is a "no"
    // (the gate refuses when it has nobody to ask), and the banner says so.
    let stdin_tty = crate::terminal::stdin_is_tty();
    let asker: Option<Arc<dyn crate::tools::Asker>> = stdin_tty.then(|| {
        // Questions go to stderr, so their colour follows stderr.
        Arc::new(TerminalAsker::new(crate::render::Style::detect(
            std::io::stderr().is_terminal(),
            &launch.env,
        ))) as Arc<dyn crate::tools::Asker>
    });
    let gate = Arc::new(Gate::new(
        approval,
        asker,
        " (start panto with --approve ask or --approve auto to allow it)",
    ));
    let mut notes_before = Vec::new();
    if approval == Approval::Ask && !stdin_tty {
        notes_before.push(
            "stdin is not a terminal, so approval questions cannot be answered: write, edit and bash \
             calls are refused (use --approve auto to allow them)"
                .to_owned(),
        );
    }
    // From here on Ctrl-C never kills the REPL: outside a turn (a slash command running) it is
    // ignored, inside one the turn's own listener cancels the turn.
    rt.block_on(async { crate::interrupt::ignore_interrupts() });
    let store = rt.block_on(launch.store.open_for_writing())?;
    let ctx = setup::tool_context(&launch.settings, setup::working_dir()?, gate.clone());
    let model = setup::ModelChoice::Choose(launch.model.as_deref());
    let ready = rt.block_on(setup::open(
        &launch.settings,
        &store,
        &launch.choice,
        model,
        &launch.tools,
        &ctx,
    ))?;
    let history = launch.env.history_path();
    let aliases = launch.settings.models.iter().map(|m| m.name.clone()).collect();
    let recent = recent_ids(rt, &store);
    let mut repl = Repl {
        rt,
        ctx,
        pricing: launch.settings.pricing(),
        settings: launch.settings,
        saving: launch.store.persists(),
        store,
        gate,
        tools: launch.tools,
        agent: ready.agent,
        selection: ready.selection,
        screen,
        totals: Totals::new(),
        recent_ids: recent,
        home: launch.env.home(),
        pending_images: Vec::new(),
    };
    notes_before.extend(ready.notes);
    repl.banner(ready.resumed, &notes_before);

    let helper = PantoHelper {
        aliases,
        sessions: repl.recent_ids.clone(),
    };
    let mut editor = helper::editor(helper, history.as_deref())
        .map_err(|e| Failure::runtime(format!("cannot start the line editor: {e}")))?;
    let out_tty = std::io::stdout().is_terminal();
    loop {
        // No prompt on a piped stdout: it is not content.
        let prompt = if out_tty { "> " } else { "" };
        let styled = repl.screen.out.bold(prompt);
        match editor.readline(&(prompt, styled.as_str())) {
            Ok(line) => {
                let input = join_continuations(&line);
                if input.trim().is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(line.as_str());
                if let Some(path) = &history {
                    save_history(&mut editor, path, &repl.screen);
                }
                let trimmed = input.trim_start();
                if let Some(literal) = trimmed.strip_prefix("//") {
                    repl.turn(format!("/{literal}"));
                } else if trimmed.starts_with('/') {
                    if repl.command(trimmed) == Flow::Quit {
                        break;
                    }
                } else {
                    repl.turn(input);
                }
            }
            Err(ReadlineError::Interrupted) => {
                repl.screen.note(&repl.screen.deco.dim("(Ctrl-D or /quit exits)"));
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Failure::runtime(format!("cannot read input: {e}"))),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The ids of the recent sessions in `store`, listed when Tab first completes `/resume `.
fn recent_ids(rt: &tokio::runtime::Runtime, store: &OpenStore) -> RecentIds {
    let (handle, store) = (rt.handle().clone(), store.store.clone());
    // The completer runs on the REPL's thread, outside the runtime, so it may block on it.
    RecentIds::listed_by(move || {
        let infos = handle.block_on(store.list()).ok()?;
        Some(infos.iter().take(RECENT).map(|i| i.id.clone()).collect())
    })
}

/// Appends the new history entry to the file, creating its directory (private) on first use.
fn save_history(
    editor: &mut rustyline::Editor<PantoHelper, rustyline::history::DefaultHistory>,
    path: &std::path::Path,
    screen: &Screen,
) {
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
    }
    if let Err(e) = editor.append_history(path) {
        screen.note(
            &screen
                .deco
                .yellow(&format!("cannot save history to {}: {e}", path.display())),
        );
    }
}

/// A short recap of where a resumed conversation left off: the last prompt and answer.
fn recap(conversation: &Conversation) -> Vec<(Role, String)> {
    let mut out = Vec::new();
    let last_prompt = conversation.messages.iter().rposition(|m| m.is_human_prompt());
    if let Some(i) = last_prompt {
        out.push((Role::User, conversation.messages[i].text()));
        let answer = conversation.messages[i + 1..]
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.content.iter().any(|b| matches!(b, ContentBlock::Text { .. })))
            .map(|m| m.text());
        if let Some(a) = answer {
            out.push((Role::Assistant, a));
        }
    }
    out
}

impl Repl<'_> {
    // The REPL's messages quote session files (a recap, a listing, a system prompt), provider
    // errors and tool descriptions: all of them are neutralised on a terminal.

    fn note(&self, line: &str) {
        self.screen.note(&self.screen.deco.safe(line));
    }

    fn dim(&self, line: &str) {
        self.screen.note(&self.screen.deco.dim(&self.screen.deco.safe(line)));
    }

    fn error(&self, line: &str) {
        self.screen.note(&self.screen.deco.red(&self.screen.deco.safe(line)));
    }

    fn banner(&self, resumed: bool, notes: &[String]) {
        let s = self.screen.deco;
        let session = if !self.saving {
            "session not saved (--no-session)".to_owned()
        } else if resumed {
            format!(
                "resumed session {} ({} messages)",
                self.agent.session_id(),
                self.agent.session().info.message_count
            )
        } else {
            format!("new session {}", self.agent.session_id())
        };
        self.screen.note(&format!(
            "{} {} · {} · {} · approval {}",
            s.bold("panto"),
            env!("CARGO_PKG_VERSION"),
            s.safe(&self.selection.describe()),
            session,
            self.gate.mode()
        ));
        for note in notes {
            self.screen.note(&s.yellow(&s.safe(&format!("note: {note}"))));
        }
        if resumed {
            for (role, text) in recap(self.agent.conversation()) {
                let who = if role == Role::User { "you" } else { "panto" };
                self.dim(&format!("  {who}: {}", crate::sessions::one_line(&text, 300)));
            }
        }
        self.dim("/help for commands · Ctrl-C cancels a turn · Ctrl-D exits");
    }

    fn turn(&mut self, text: String) {
        // Images attached with /image, then image files dropped onto the terminal (their paths
        // typed into the prompt). A dropped path that is not a readable image is said and left
        // in the text.
        let mut images: Vec<Attachment> = std::mem::take(&mut self.pending_images);
        for path in attach::dragged_paths(&text, self.home.as_deref()) {
            if images.iter().any(|a| a.path == path) {
                continue;
            }
            match attach::read(&path) {
                Ok(image) => images.push(image),
                Err(e) => self.error(&e),
            }
        }
        if !images.is_empty() {
            let names: Vec<String> = images.iter().map(Attachment::describe).collect();
            self.dim(&format!("with {}", names.join(", ")));
        }
        let message = UserMessage {
            text,
            images: images.into_iter().map(|a| a.bytes).collect(),
        };
        let wire = self.selection.wire();
        let outcome = self
            .rt
            .block_on(turn::run(&mut self.agent, message, self.screen, &self.pricing, &wire));
        self.totals.add(&outcome);
    }

    /// `/image FILE...`: attaches images to the next prompt; without a file, lists them.
    fn image(&mut self, args: &str) {
        if args.is_empty() {
            if self.pending_images.is_empty() {
                self.note("no images attached; /image FILE attaches one to your next prompt");
            } else {
                let names: Vec<String> = self.pending_images.iter().map(Attachment::describe).collect();
                self.note(&format!("attached to your next prompt: {}", names.join(", ")));
            }
            return;
        }
        let Some(words) = attach::shell_words(args) else {
            self.error("/image: a quote is left open; quote a file name with spaces as 'my file.png'");
            return;
        };
        for word in words {
            let path = match (word.strip_prefix("~/"), &self.home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(&word),
            };
            match attach::read(&path) {
                Ok(image) => {
                    self.note(&format!("attached {}: it goes with your next prompt", image.describe()));
                    self.pending_images.push(image);
                }
                Err(e) => self.error(&e),
            }
        }
    }

    fn command(&mut self, line: &str) -> Flow {
        match commands::parse(line) {
            Parsed::Unknown(name, close) => {
                if close.is_empty() {
                    self.error(&format!("unknown command {name}; /help lists the commands"));
                } else {
                    self.error(&format!("unknown command {name}; did you mean {}?", close.join(", ")));
                }
                Flow::Continue
            }
            Parsed::Command(command, args) => {
                let args = args.to_owned();
                match command {
                    Command::Help => {
                        for line in commands::help() {
                            self.note(&line);
                        }
                    }
                    Command::Quit => return Flow::Quit,
                    Command::Model => self.model(&args),
                    Command::Models => {
                        for row in crate::models::models_rows(&self.settings, self.selection.alias.as_deref()) {
                            self.note(&row);
                        }
                    }
                    Command::Compact => self.compact(&args),
                    Command::Image => self.image(&args),
                    Command::Sessions => self.sessions(),
                    Command::Resume => {
                        if args.is_empty() {
                            self.error("/resume needs a session id or prefix (see /sessions)");
                        } else {
                            self.switch(SessionChoice::Resume(args), None);
                        }
                    }
                    Command::New => {
                        let keep = self.selection.clone();
                        self.switch(SessionChoice::New, Some(keep));
                    }
                    Command::System => self.system(&args),
                    Command::Tools => self.list_tools(),
                    Command::Cost => self.cost(),
                    Command::Rewind => self.rewind(&args),
                    Command::Fork => self.fork(),
                    Command::Tree => self.tree(),
                }
                Flow::Continue
            }
        }
    }

    fn model(&mut self, args: &str) {
        if args.is_empty() {
            self.note(&format!("model: {}", self.selection.describe()));
            return;
        }
        let selection = self.settings.named_selection(args, &self.selection.provider);
        match self.settings.agent_config(&selection) {
            Ok(config) => {
                self.agent.set_config(config);
                self.note(&format!("switched to {}", selection.describe()));
                if selection.alias.is_none() && !self.settings.models.is_empty() {
                    self.dim(&format!(
                        "({args} is not a configured alias; it is sent as a model name to {})",
                        selection.provider.name
                    ));
                }
                self.selection = selection;
            }
            Err(e) => self.error(&e.message),
        }
    }

    fn compact(&mut self, args: &str) {
        let instructions = (!args.is_empty()).then_some(args);
        self.dim("compacting the conversation…");
        let result = self.rt.block_on(async {
            let (interrupted, watcher) = crate::interrupt::interrupt_token();
            // Dropping the compaction future cancels it cleanly: the conversation is replaced
            // only once the summary is stored.
            let r = tokio::select! {
                r = self.agent.compact(None, instructions) => Some(r),
                _ = interrupted.cancelled() => None,
            };
            watcher.abort();
            r
        });
        match result {
            Some(Ok(r)) => {
                self.note(&format!(
                    "compacted: {} messages summarised, {} kept; about {} → {} tokens",
                    r.messages_summarized,
                    r.messages_kept,
                    thousands(r.tokens_before),
                    thousands(r.tokens_after)
                ));
                // The summary request is paid for like a turn's; `/cost` counts it.
                if let Some(usage) = r.usage {
                    let cost = crate::cost::cost(&self.pricing, &self.selection.wire(), &usage);
                    self.totals.add_request(&usage, cost);
                    self.dim(&format!("summary request: {}", summary_line(&usage, cost)));
                }
            }
            Some(Err(e)) => self.error(&format!("compaction failed: {e}")),
            None => self.note("compaction cancelled; the conversation is unchanged"),
        }
    }

    fn sessions(&mut self) {
        match self.rt.block_on(self.store.store.list()) {
            Ok(infos) if infos.is_empty() => self.note("no sessions yet"),
            Ok(infos) => {
                let shown = &infos[..infos.len().min(RECENT)];
                let current = self.agent.session_id().to_owned();
                for (info, row) in shown.iter().zip(table(shown)) {
                    let mark = if info.id == current { "*" } else { " " };
                    self.note(&format!("{mark} {row}"));
                }
                self.recent_ids.set(short_ids(shown));
            }
            Err(e) => self.error(&format!("cannot list sessions: {e}")),
        }
    }

    /// Switches to another session: resumed (with its model pre-selected) or new (keeping
    /// `keep`).
    fn switch(&mut self, choice: SessionChoice, keep: Option<Selection>) {
        let model = match keep {
            Some(selection) => setup::ModelChoice::Keep(Box::new(selection)),
            None => setup::ModelChoice::Choose(None),
        };
        let opened = self.rt.block_on(setup::open(
            &self.settings,
            &self.store,
            &choice,
            model,
            &self.tools,
            &self.ctx,
        ));
        match opened {
            Ok(ready) => {
                self.agent = ready.agent;
                self.selection = ready.selection;
                self.totals = Totals::new();
                self.banner(ready.resumed, &ready.notes);
            }
            Err(e) => self.error(&e.message),
        }
    }

    fn system(&mut self, args: &str) {
        if args.is_empty() {
            let prompt = self.agent.conversation().effective_system_blocks().join("\n\n");
            if prompt.is_empty() {
                self.note("(no system prompt)");
            } else {
                self.note(&prompt);
            }
            return;
        }
        match self.rt.block_on(self.agent.set_system_prompt(args)) {
            Ok(()) => self.note("system prompt replaced"),
            Err(e) => self.error(&format!("cannot set the system prompt: {e}")),
        }
    }

    fn list_tools(&self) {
        let decls = self.agent.tools();
        if decls.is_empty() {
            self.note("no tools (started with --tools none)");
        }
        for decl in decls {
            let approval = match ToolName::parse(&decl.name) {
                Ok(t) if !t.needs_approval() => "runs freely".to_owned(),
                Ok(t) => match self.gate.mode() {
                    Approval::Auto => "runs without asking (--approve auto)".to_owned(),
                    Approval::ReadOnly => "refused (read-only)".to_owned(),
                    Approval::Ask if self.gate.always_allowed(t) => "always allowed".to_owned(),
                    Approval::Ask => "asks first".to_owned(),
                },
                Err(_) => String::new(),
            };
            let summary = decl.description.split(". ").next().unwrap_or("").trim_end_matches('.');
            self.note(&format!("  {:<6} {summary} — {approval}", decl.name));
        }
    }

    fn cost(&self) {
        self.note(&format!(
            "this run, {} turn{}: {}",
            self.totals.turns,
            if self.totals.turns == 1 { "" } else { "s" },
            summary_line(&self.totals.usage, self.totals.cost)
        ));
        let window = self.agent.config().compaction.context_window;
        if let Some((_, usage)) = self.agent.conversation().last_usage() {
            let used = usage.total_input_tokens() + usage.output_tokens;
            self.note(&format!(
                "context: about {} of {} tokens ({:.0}%)",
                thousands(used),
                thousands(window),
                used as f64 * 100.0 / window.max(1) as f64
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recap_shows_the_last_prompt_and_answer() {
        let mut c = Conversation::new();
        c.add_user_message("first");
        c.add_assistant_message(vec![ContentBlock::text("one")], None);
        c.add_user_message("second");
        c.add_assistant_message(vec![ContentBlock::text("two")], None);
        assert_eq!(
            recap(&c),
            vec![(Role::User, "second".to_owned()), (Role::Assistant, "two".to_owned())]
        );
        assert!(recap(&Conversation::new()).is_empty());
    }

    #[test]
    fn totals_lose_the_cost_once_unknown() {
        let mut t = Totals::new();
        t.add(&turn::TurnOutcome {
            usage: Usage::default(),
            cost: Some(5),
        });
        assert_eq!(t.cost, Some(5));
        t.add(&turn::TurnOutcome {
            usage: Usage::default(),
            cost: None,
        });
        assert_eq!(t.cost, None);
        assert_eq!(t.turns, 2);
    }

    #[test]
    fn a_compaction_request_counts_in_the_totals_but_is_no_turn() {
        let mut t = Totals::new();
        let used = Usage {
            input_tokens: 900,
            output_tokens: 30,
            ..Usage::default()
        };
        t.add_request(&used, Some(12));
        assert_eq!((t.usage, t.cost, t.turns), (used, Some(12), 0));
    }
}
