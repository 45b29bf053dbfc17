//! The interactive REPL.
//!
//! The loop is synchronous: rustyline reads a line (the terminal in raw mode, so Ctrl-C is a key
//! and clears the line), then the turn or command runs on the tokio runtime with the terminal back
//! in cooked mode (so Ctrl-C is SIGINT and cancels the turn).

mod branch;
mod commands;
mod context;
mod helper;
pub mod keys;
mod model_check;
mod turn;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use panto_core::{Agent, ContentBlock, Conversation, PricingRegistry, Role, Usage, UserMessage};
use rustyline::error::ReadlineError;

use crate::attach::{self, Attachment};
use crate::config::{Selection, Settings};
use crate::cost::{cache_line, summary_line, thousands};
use crate::exit::Failure;
use crate::mcp::McpTools;
use crate::render::Screen;
use crate::sessions::{short_ids, table, RECENT};
use crate::setup::{self, Launch, SessionChoice};
use crate::store::OpenStore;
use crate::terminal::TerminalAsker;
use crate::tools::{Approval, Gate, ToolName, Toolbox};
use commands::{Command, Input, Parsed};
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
    /// What the same requests would have cost with no prompt cache; `None` as `cost`.
    uncached_cost: Option<u64>,
    turns: u32,
}

impl Totals {
    fn new() -> Self {
        Totals {
            usage: Usage::default(),
            cost: Some(0),
            uncached_cost: Some(0),
            turns: 0,
        }
    }

    fn add(&mut self, outcome: &turn::TurnOutcome) {
        self.add_request(&outcome.usage, outcome.cost, outcome.uncached_cost);
        self.turns += 1;
    }

    /// Counts a request made outside a turn (a `/compact` summary).
    fn add_request(&mut self, usage: &Usage, cost: Option<u64>, uncached_cost: Option<u64>) {
        self.usage.accumulate(usage);
        let sum = |total: Option<u64>, more: Option<u64>| match (total, more) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        self.cost = sum(self.cost, cost);
        self.uncached_cost = sum(self.uncached_cost, uncached_cost);
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
    let read_only_hint = " (start panto with --approve ask or --approve auto to allow it)";
    let gate = Arc::new(Gate::new(approval, asker));
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
    let mcp = Arc::new(rt.block_on(McpTools::start(&launch.settings, &gate)));
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
    let recent = recent_ids(rt, &store);
    let mut repl = Repl {
        rt,
        toolbox,
        mcp,
        pricing: pricing.clone(),
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
        models: pricing.known_models(repl.selection.provider.api_style),
        sessions: repl.recent_ids.clone(),
    };
    let mut editor = helper::editor(helper, history.as_deref())
        .map_err(|e| Failure::runtime(format!("cannot start the line editor: {e}")))?;
    let out_tty = std::io::stdout().is_terminal();
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
        match editor.readline_with_initial(&(prompt, styled.as_str()), (&typed, "")) {
            Ok(line) => {
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
                repl.screen.note(&repl.screen.deco.dim("(Ctrl-D or /quit exits)"));
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Failure::runtime(format!("cannot read input: {e}"))),
        }
    }
    repl.resume_hint();
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
                self.agent.session_id(),
                self.agent.session().info.message_count
            )
        } else {
            format!("new session {}", self.agent.session_id())
        };
        // Wrapped between its parts, so that a narrow terminal does not cut the session id.
        let parts = [
            format!("panto {}", env!("CARGO_PKG_VERSION")),
            s.safe(&self.selection.describe()).into_owned(),
            session,
            format!("approval {}", self.gate.mode()),
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
                    let mut md = crate::render::MarkdownStream::new(true);
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
        // `!` output first, then the prompt, then the files it mentions with `@`.
        let mut files = Vec::new();
        for (path, content) in context::mentions(&text, &self.cwd) {
            match content {
                Ok(content) => {
                    self.dim(&format!("with @{path} ({} bytes)", thousands(content.len() as u64)));
                    files.push((path, content));
                }
                Err(why) => self.error(&why),
            }
        }
        let mut full = std::mem::take(&mut self.shell_context);
        full.push(context::with_files(&text, &files));
        let text = full.join("\n\n");
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
        let (gate, mcp) = (self.gate.clone(), self.mcp.clone());
        let asks: crate::render::AsksFirst = Box::new(move |name| match ToolName::parse(name) {
            Ok(tool) => tool.needs_approval() && gate.asks(tool.as_str()),
            Err(_) => mcp.asks(name) == Some(true),
        });
        let outcome = self.rt.block_on(turn::run(
            &mut self.agent,
            message,
            self.screen,
            &self.pricing,
            &wire,
            asks,
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

    /// On the way out: how to come back to this session (`panto -r ID`), with the shortest id
    /// prefix (8 characters at least) that no other stored session shares.
    fn resume_hint(&self) {
        if !self.saving || self.agent.conversation().messages.is_empty() {
            return;
        }
        let id = self.agent.session_id().to_owned();
        let others = self.rt.block_on(self.store.store.list()).unwrap_or_default();
        let len = others
            .iter()
            .filter(|info| info.id != id)
            .map(|info| info.id.chars().zip(id.chars()).take_while(|(a, b)| a == b).count() + 1)
            .fold(8, usize::max)
            .min(id.chars().count());
        let short: String = id.chars().take(len).collect();
        self.dim(&format!("resume this session with: panto -r {short}"));
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
                        for line in commands::help(self.screen.columns()) {
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
                        let choice = if args.is_empty() {
                            SessionChoice::Pick
                        } else {
                            SessionChoice::Resume(args)
                        };
                        self.switch(choice, None);
                    }
                    Command::New => {
                        let keep = self.selection.clone();
                        self.switch(SessionChoice::New, Some(keep));
                    }
                    Command::System => self.system(&args),
                    Command::Tools => self.list_tools(),
                    Command::Mcp => self.list_mcp(),
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
                // A wire name is checked before a paid request can fail on it.
                if selection.alias.is_none() {
                    let check = model_check::check(&self.pricing, &config.provider, &selection.provider.name);
                    match self.rt.block_on(check) {
                        model_check::Verdict::Known => {}
                        model_check::Verdict::Unknown(refusal) => {
                            self.error(&refusal);
                            return;
                        }
                        model_check::Verdict::Unchecked(note) => self.dim(&note),
                    }
                }
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
        // The size before as `/cost` showed it, so the two agree.
        let shown_before = self.context_tokens();
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
                let before = shown_before.unwrap_or(r.tokens_before);
                self.compacted = Some(Compacted {
                    session_id: self.agent.session_id().to_owned(),
                    messages: self.agent.conversation().messages.len(),
                    tokens: r.tokens_after,
                });
                self.note(&compaction_line(&r, before));
                // The summary request is paid for like a turn's; `/cost` counts it.
                if let Some(usage) = r.usage {
                    let cost = crate::cost::cost(&self.pricing, &self.selection.wire(), &usage);
                    let uncached = crate::cost::uncached_cost(&self.pricing, &self.selection.wire(), &usage);
                    self.totals.add_request(&usage, cost, uncached);
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
                    // A row a line: the last prompt's preview is cut to the terminal.
                    self.note(&crate::render::wrap::cut(
                        &format!("{mark} {row}"),
                        self.screen.columns(),
                    ));
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
        let found = match self.rt.block_on(setup::find(&self.store, &choice)) {
            Ok(found) => found,
            Err(e) => return self.error(&e.message),
        };
        if found.existing() && found.session_id() == self.agent.session_id() {
            // The session this agent works in: it stays (a second agent could not write the
            // session while this one lives), with its system prompt brought up to date.
            match self
                .rt
                .block_on(setup::refresh(&self.settings, &mut self.agent, &self.toolbox))
            {
                Ok(notes) => self.banner(true, &notes),
                Err(e) => self.error(&e.message),
            }
            return;
        }
        let opened = self.rt.block_on(setup::open_found(
            &self.settings,
            found,
            model,
            &self.toolbox,
            &self.mcp,
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

    /// `/mcp`: the configured MCP servers, their status and tools.
    fn list_mcp(&self) {
        let lines = self.rt.block_on(crate::mcp::render(&self.mcp, Some(self.gate.mode())));
        if lines.is_empty() {
            self.note(&format!(
                "no MCP servers configured (add [mcp.servers.NAME] tables to {})",
                self.settings.config_path_display()
            ));
        }
        for line in lines {
            self.note(&line);
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
                    Approval::Ask if self.gate.always_allowed(t.as_str()) => "always allowed".to_owned(),
                    Approval::Ask => "asks first".to_owned(),
                },
                Err(_) => match self.mcp.tool(&decl.name) {
                    Some((_, tool)) if tool.annotations.is_read_only() => "runs freely (read-only)".to_owned(),
                    Some(_) => match self.gate.mode() {
                        Approval::Auto => "runs without asking (--approve auto)".to_owned(),
                        Approval::ReadOnly => "refused (read-only)".to_owned(),
                        Approval::Ask if self.mcp.asks(&decl.name) == Some(false) => "always allowed".to_owned(),
                        Approval::Ask => "asks first".to_owned(),
                    },
                    None => String::new(),
                },
            };
            let summary = decl.description.split(". ").next().unwrap_or("").trim_end_matches('.');
            let label = format!("  {:<6}", decl.name);
            for line in
                crate::render::wrap::labelled(&label, &format!("{summary} — {approval}"), 9, self.screen.columns())
            {
                self.note(&line);
            }
        }
    }

    /// The context's size in tokens as `/cost`, the status line and `/compact` show it: the
    /// estimate `/compact` gave while its conversation is unchanged (the last request's usage
    /// still counts the messages it summarised away), else the last request's input and output.
    fn context_tokens(&self) -> Option<u64> {
        let conversation = self.agent.conversation();
        if let Some(c) = &self.compacted {
            if c.session_id == self.agent.session_id() && c.messages == conversation.messages.len() {
                return Some(c.tokens);
            }
        }
        conversation
            .last_usage()
            .map(|(_, u)| u.total_input_tokens() + u.output_tokens)
    }

    fn cost(&self) {
        self.note(&format!(
            "this run, {} turn{}: {}",
            self.totals.turns,
            if self.totals.turns == 1 { "" } else { "s" },
            summary_line(&self.totals.usage, self.totals.cost)
        ));
        if let Some(line) = cache_line(&self.totals.usage, self.totals.cost, self.totals.uncached_cost) {
            self.note(&line);
        }
        let window = self.agent.config().compaction.context_window;
        if let Some(used) = self.context_tokens() {
            self.note(&format!(
                "context: about {} of {} tokens ({:.0}%)",
                thousands(used),
                thousands(window),
                used as f64 * 100.0 / window.max(1) as f64
            ));
        }
    }
}

/// The note after `/compact`: what it did and the context's size before and after, in the
/// measure `/cost` uses. A summary no smaller than what it replaced is said in words, never as a
/// rise.
fn compaction_line(r: &panto_core::CompactionResult, before: u64) -> String {
    let done = format!(
        "compacted: {} messages summarised, {} kept",
        r.messages_summarized, r.messages_kept
    );
    if r.tokens_after < before {
        format!(
            "{done}; about {} → {} tokens",
            thousands(before),
            thousands(r.tokens_after)
        )
    } else {
        format!(
            "{done}; about {} tokens (the summary is no smaller than what it replaced)",
            thousands(r.tokens_after)
        )
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
            uncached_cost: Some(5),
            ..Default::default()
        });
        assert_eq!(t.cost, Some(5));
        t.add(&turn::TurnOutcome {
            usage: Usage::default(),
            cost: None,
            uncached_cost: None,
            ..Default::default()
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
        t.add_request(&used, Some(12), Some(12));
        assert_eq!((t.usage, t.cost, t.turns), (used, Some(12), 0));
    }
}
