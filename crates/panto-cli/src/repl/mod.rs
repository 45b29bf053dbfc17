//! The interactive REPL.
//!
//! The loop is synchronous: rustyline reads a line (the terminal in raw mode, so Ctrl-C is a key
//! and clears the line), then the turn or command runs on the tokio runtime with the terminal back
//! in cooked mode (so Ctrl-C is SIGINT and cancels the turn).

mod approve;
mod branch;
mod commands;
mod compact;
mod context;
mod cost;
mod export;
mod helper;
mod image;
pub mod keys;
mod listing;
mod menu;
mod model;
mod model_check;
mod session;
mod totals;
mod turn;

pub(crate) use model_check::{check as check_model, Verdict as ModelVerdict};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use panto_core::pricing::PricingRegistry;
use panto_core::{Agent, ContentBlock, Conversation, Role, UserMessage};
use rustyline::error::ReadlineError;

use crate::attach::{self, Attachment};
use crate::config::{Selection, Settings};
use crate::cost::thousands;
use crate::exit::Failure;
use crate::mcp::McpTools;
use crate::render::Screen;
use crate::sessions::RECENT;
use crate::setup::{self, Launch, SessionChoice};
use crate::store::OpenStore;
use crate::terminal::TerminalAsker;
use crate::tools::{Approval, Gate, ToolName, Toolbox};
use commands::{Command, Input, Parsed};
use helper::{join_continuations, PantoHelper, RecentIds};
use totals::Totals;

/// Whether the loop goes on after a command.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// The REPL's state.
struct Repl<'r> {
    rt: &'r tokio::runtime::Runtime,
    settings: Settings,
    /// Whether sessions are kept (not with `--no-session`).
    saving: bool,
    store: OpenStore,
    gate: Arc<Gate>,
    toolbox: Toolbox,
    /// The MCP servers started with the REPL, shared by every session it opens.
    mcp: Arc<McpTools>,
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
    /// Prompts typed ahead during a turn, sent next, oldest first.
    queued: std::collections::VecDeque<String>,
    /// The unfinished line typed ahead, put into the next prompt's editor.
    typed: String,
    /// The directory `@path` and `!command` work in.
    cwd: PathBuf,
    /// Output of `!` commands, offered to the model with the next prompt.
    shell_context: Vec<String>,
    /// The context estimate `/compact` reported, for the conversation it left (see
    /// [`Repl::context_tokens`]).
    compacted: Option<Compacted>,
    /// The keys, home and prices `/export` needs.
    export_context: crate::sessions::ExportContext,
}

/// The conversation `/compact` left, and its size as reported then.
#[derive(Debug, Clone)]
struct Compacted {
    session_id: String,
    messages: usize,
    tokens: u64,
}

/// Runs the REPL until `/quit` or end of input; `first` is sent as the first message.
pub fn run(
    rt: &tokio::runtime::Runtime,
    launch: Launch,
    approval: Approval,
    first: Option<String>,
) -> Result<ExitCode, Failure> {
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
    let read_only_hint = " (/approve ask or /approve auto allows it)";
    let gate = Arc::new(Gate::new(asker));
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
    let cwd = setup::working_dir()?;
    let sandbox = setup::sandbox_for(&launch, false, approval);
    let live_tail = Arc::new(crate::render::tail::LiveTail);
    let toolbox = setup::toolbox(
        &launch,
        approval,
        sandbox,
        gate.clone(),
        read_only_hint,
        Some(live_tail),
    )?;
    notes_before.extend(toolbox.sandbox().note().map(str::to_owned));
    // The MCP servers start with the agent; one that does not start is a warning, not a failure.
    let mode = toolbox.policy().approval_mode().clone();
    let mcp = Arc::new(rt.block_on(McpTools::start(&launch.settings, &gate, &mode)));
    notes_before.extend(mcp.warnings());
    let model = setup::ModelChoice::Choose(launch.model.as_deref());
    let ready = rt.block_on(setup::open(
        &launch.settings,
        &store,
        &launch.choice,
        model,
        &toolbox,
        &mcp,
    ))?;
    let history = launch.env.history_path();
    let aliases = launch.settings.models.iter().map(|m| m.name.clone()).collect();
    let pricing = launch.settings.pricing();
    let recent = recent_ids(rt, &store, cwd.clone());
    let mut repl = Repl {
        rt,
        toolbox,
        mcp,
        pricing: pricing.clone(),
        export_context: crate::sessions::ExportContext::of(&launch.settings, &launch.env),
        settings: launch.settings,
        saving: launch.store.persists(),
        store,
        gate,
        agent: ready.agent,
        selection: ready.selection,
        screen,
        totals: Totals::new(),
        recent_ids: recent,
        home: launch.env.home(),
        pending_images: Vec::new(),
        queued: first.filter(|p| !p.trim().is_empty()).into_iter().collect(),
        typed: String::new(),
        cwd,
        shell_context: Vec::new(),
        compacted: None,
    };
    crate::render::footer::enable(screen.deco_on_stdout, screen.deco.is_colour());
    notes_before.extend(ready.notes);
    repl.banner(ready.resumed, &notes_before);

    let helper = PantoHelper {
        aliases,
        models: completion_models(&pricing, &repl.settings, &repl.selection),
        sessions: repl.recent_ids.clone(),
        files: menu::ProjectFiles::new(repl.cwd.clone()),
        colour: repl.screen.out.is_colour(),
    };
    let mut editor = helper::editor(helper, history.as_deref())
        .map_err(|e| Failure::runtime(format!("cannot start the line editor: {e}")))?;
    let out_tty = std::io::stdout().is_terminal();
    // When Ctrl-C last reached the prompt: a second one within EXIT_WINDOW exits.
    let mut last_interrupt: Option<std::time::Instant> = None;
    loop {
        // No prompt on a piped stdout: it is not content.
        let prompt = if out_tty { "> " } else { "" };
        let styled = repl.screen.out.bold(prompt);
        // A prompt typed ahead during the last turn goes next, shown as if typed now.
        if let Some(queued) = repl.queued.pop_front() {
            repl.screen.note(&format!("{styled}{}", repl.screen.deco.safe(&queued)));
            let _ = editor.add_history_entry(queued.as_str());
            if repl.input(queued) == Flow::Quit {
                break;
            }
            continue;
        }
        let typed = std::mem::take(&mut repl.typed);
        helper::new_prompt(editor.helper());
        match editor.readline_with_initial(&(prompt, styled.as_str()), (&typed, "")) {
            Ok(line) => {
                last_interrupt = None;
                if let Some(key) = helper::take_key() {
                    // Ctrl-O or Shift-Tab, then the line back to edit.
                    repl.prompt_key(key);
                    repl.typed = line;
                    continue;
                }
                let input = join_continuations(&line);
                if input.trim().is_empty() {
                    continue;
                }
                let _ = editor.add_history_entry(line.as_str());
                if let Some(path) = &history {
                    save_history(&mut editor, path, &repl.screen);
                }
                if repl.input(input) == Flow::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => {
                if last_interrupt.is_some_and(|at| at.elapsed() <= EXIT_WINDOW) {
                    break;
                }
                last_interrupt = Some(std::time::Instant::now());
                repl.screen.note(&repl.screen.deco.dim("(Ctrl-C again to exit)"));
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Failure::runtime(format!("cannot read input: {e}"))),
        }
    }
    repl.resume_hint();
    Ok(ExitCode::SUCCESS)
}

/// The model names Tab offers after `/model`. The price table knows families (`claude-sonnet-4`
/// prices `claude-sonnet-4-5`): the model in use and the configured default are offered too, so
/// Tab finds the names a user types most.
fn completion_models(pricing: &PricingRegistry, settings: &Settings, selection: &Selection) -> Vec<String> {
    let mut models = pricing.known_models(selection.provider.api_style);
    let default_model = settings.default_selection().ok().map(|s| s.model);
    for model in [Some(selection.model.clone()), default_model].into_iter().flatten() {
        if !models.contains(&model) {
            models.push(model);
        }
    }
    models.sort();
    models
}

/// How soon a second Ctrl-C at the prompt must follow the first to exit panto (as in Claude
/// Code and codex); a single one only clears the line.
const EXIT_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// The ids of the recent sessions in `store`, listed when Tab first completes `/resume `:
/// those started in `cwd` first, then the others, each newest first.
fn recent_ids(rt: &tokio::runtime::Runtime, store: &OpenStore, cwd: PathBuf) -> RecentIds {
    let (handle, store) = (rt.handle().clone(), store.store.clone());
    // The completer runs on the REPL's thread, outside the runtime, so it may block on it.
    RecentIds::listed_by(move || {
        let infos = handle.block_on(store.list()).ok()?;
        let (here, others): (Vec<_>, Vec<_>) = infos.iter().partition(|info| crate::sessions::started_in(info, &cwd));
        Some(
            here.into_iter()
                .chain(others)
                .take(RECENT)
                .map(|i| i.id.clone())
                .collect(),
        )
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
        out.push((Role::User, conversation.messages[i].prompt_text().to_owned()));
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
        self.screen.note(&self.fit(line));
    }

    fn dim(&self, line: &str) {
        self.screen.note(&self.screen.deco.dim(&self.fit(line)));
    }

    fn error(&self, line: &str) {
        self.screen
            .note(&self.screen.deco.red(&self.fit(&crate::render::brief(line))));
    }

    /// `line` made safe for the terminal and broken at spaces to its width (the terminal's own
    /// wrap would cut words in two).
    fn fit(&self, line: &str) -> String {
        crate::render::wrap::fit_lines(&self.screen.deco.safe(line), self.screen.columns())
    }

    fn banner(&self, resumed: bool, notes: &[String]) {
        let s = self.screen.deco;
        let session = if !self.saving {
            "session not saved (--no-session)".to_owned()
        } else if resumed {
            format!(
                "resumed session {} ({} messages)",
                self.short_id(self.agent.session_id()),
                self.agent.session().info.message_count
            )
        } else {
            format!("new session {}", self.short_id(self.agent.session_id()))
        };
        // Wrapped between its parts, so that a narrow terminal does not cut the session id.
        let parts = [
            format!("panto {}", env!("CARGO_PKG_VERSION")),
            s.safe(&self.selection.describe()).into_owned(),
            session,
            format!("approval {}", self.approval()),
        ];
        let banner = crate::render::wrap::join_fitted(&parts, " · ", self.screen.columns());
        self.screen.note(&banner.replacen("panto", &s.bold("panto"), 1));
        for note in notes {
            self.screen.note(&s.yellow(&s.safe(&format!("note: {note}"))));
        }
        if resumed {
            for (role, text) in recap(self.agent.conversation()) {
                let who = if role == Role::User { "you" } else { "panto" };
                if role == Role::Assistant && self.screen.markdown {
                    // The last answer as it was shown when it streamed: rendered.
                    self.dim(&format!("  {who}:"));
                    let mut md = crate::render::MarkdownStream::new(self.screen.out.is_colour());
                    let columns = self.screen.columns();
                    let mut shown = md.push(&crate::safe::neutralise(&text), columns);
                    shown.push_str(&md.finish(columns));
                    self.screen.content(&shown);
                } else {
                    self.dim(&format!("  {who}: {}", crate::sessions::one_line(&text, 300)));
                }
            }
        }
        self.dim("/help for commands · Ctrl-C cancels a turn · Ctrl-D exits");
    }

    /// One line of input: a command, or a prompt.
    fn input(&mut self, input: String) -> Flow {
        let message = match commands::classify(&input) {
            Input::Shell(command) => {
                self.shell(command);
                return Flow::Continue;
            }
            Input::Command(command) => return self.command(command),
            Input::Message(text) => text.into_owned(),
        };
        self.turn(message);
        Flow::Continue
    }

    /// `!command`: runs it, shows its output, and keeps it for the next prompt.
    fn shell(&mut self, command: &str) {
        if command.is_empty() {
            self.error("! needs a command: !git status");
            return;
        }
        let (output, status) = context::shell(command, &self.cwd);
        let deco = self.screen.deco;
        for line in output.lines() {
            self.screen.note(&format!("  {}", deco.safe(line)));
        }
        self.dim(&format!(
            "({status}; the output goes to the model with your next prompt)"
        ));
        self.shell_context
            .push(context::shell_context(command, &output, &status));
    }

    fn turn(&mut self, text: String) {
        // The prompt as typed, then what is attached to it in blocks of their own (so that
        // labels and previews show what was typed): `!` output, then the files it mentions
        // with `@`.
        let mut attached = std::mem::take(&mut self.shell_context);
        for (path, content) in context::mentions(&text, &self.cwd) {
            match content {
                Ok(content) => {
                    self.dim(&format!("with @{path} ({} bytes)", thousands(content.len() as u64)));
                    attached.push(context::file_context(&path, &content));
                }
                Err(why) => self.error(&why),
            }
        }
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
            attached,
        };
        let (gate, mcp) = (self.gate.clone(), self.mcp.clone());
        let mode = self.toolbox.policy().approval_mode().clone();
        let asks: crate::render::AsksFirst = Box::new(move |name| match ToolName::parse(name) {
            Ok(tool) => tool.needs_approval() && gate.asks(mode.get(), tool.as_str()),
            Err(_) => mcp.asks(name) == Some(true),
        });
        let gate = self.gate.clone();
        let declined: crate::render::Declined = Box::new(move |result| gate.take_declined(result));
        let outcome = self.rt.block_on(turn::run(
            &mut self.agent,
            message,
            self.screen,
            &self.pricing,
            &self.selection,
            (asks, declined),
            match self.settings.typeahead {
                crate::config::Typeahead::Steer => panto_core::QueueMode::Steer,
                crate::config::Typeahead::FollowUp => panto_core::QueueMode::FollowUp,
            },
        ));
        self.totals.add(&outcome);
        if outcome.reached_model {
            self.status(&outcome);
        }
        self.queued.extend(outcome.typed.lines);
        // What was left unfinished waits through the queued prompts' turns.
        if !outcome.typed.partial.is_empty() {
            self.typed = outcome.typed.partial;
        }
    }

    /// The status line after a turn, then a blank line and a rule.
    fn status(&self, outcome: &turn::TurnOutcome) {
        let context_used = self.context_tokens();
        let status = crate::render::TurnStatus {
            model: self.selection.wire().model.clone(),
            usage: outcome.usage,
            turn_cost: outcome.cost,
            session_cost: self.totals.cost,
            context_used,
            window: self.agent.config().compaction.context_window,
            elapsed: outcome.elapsed,
        };
        if self.screen.deco_is_tty {
            self.screen
                .deco_raw(&status.render(self.screen.deco, self.screen.columns()));
        } else {
            self.screen.note(&status.line());
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
                        for line in commands::help(self.screen.columns()) {
                            self.note(&line);
                        }
                    }
                    Command::Quit | Command::Exit => return Flow::Quit,
                    Command::Model => self.model(&args),
                    Command::Models => {
                        for row in crate::models::models_rows(&self.settings, self.selection.alias.as_deref()) {
                            self.note(&row);
                        }
                    }
                    Command::Compact => self.compact(&args),
                    Command::Image => self.image(&args),
                    Command::Sessions => self.sessions(args == "--all"),
                    Command::Resume => {
                        let choice = match args.as_str() {
                            "" => SessionChoice::Pick { all: false },
                            "--all" => SessionChoice::Pick { all: true },
                            _ => SessionChoice::Resume(args),
                        };
                        self.switch(choice, None);
                    }
                    Command::New | Command::Clear => {
                        let keep = self.selection.clone();
                        self.switch(SessionChoice::New, Some(keep));
                    }
                    Command::System => self.system(&args),
                    Command::Init => self.turn(commands::INIT_PROMPT.to_owned()),
                    Command::Tools => self.list_tools(),
                    Command::Approve => self.approve(&args),
                    Command::Mcp => self.list_mcp(),
                    Command::Cost => self.cost(),
                    Command::Status => self.show_status(),
                    Command::Rewind => self.rewind(&args),
                    Command::Fork => self.fork(),
                    Command::Tree => self.tree(),
                    Command::Export => self.export(&args),
                }
                Flow::Continue
            }
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
}
