//! Drawing one turn's events in the REPL.
//!
//! Text streams to stdout as it arrives. Thinking is dimmed; tool calls show their name and
//! arguments; tool results are summarised (size, first and last lines, errors in red; Ctrl-O
//! shows the last one in full, [`super::expand`]). Those, the waiting
//! indicator, retries and the closing cost line are decorations (see [`Screen`]).
//!
//! Everything an event carries is untrusted (the model's text and thinking, tool names, arguments
//! and output, a provider's retry reason): on a terminal it is neutralised before it is drawn
//! ([`crate::safe`]), on a pipe it is written as it came.

use std::time::Instant;

use panto_core::{BlockKind, ContentDelta, Event, ToolResultContent};

use super::markdown::MarkdownStream;
use super::spinner::Spinner;
use super::Screen;
use crate::cost::thousands;
use crate::safe::Neutraliser;

/// How many first lines of a long tool result are shown.
const RESULT_HEAD_LINES: usize = 3;
/// How many last lines of a long tool result are shown (where a test run's verdict, an exit code
/// or an error's last message is).
const RESULT_TAIL_LINES: usize = 3;
/// How many characters of a tool call's arguments are shown.
const ARGS_PREVIEW_CHARS: usize = 160;

/// What the view last wrote, so blocks are separated by exactly one line end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Nothing,
    Text,
    Thinking,
}

/// The renderer of one turn.
pub struct TurnView {
    screen: Screen,
    spinner: Option<Spinner>,
    open: Open,
    /// Whether the last character written to the open stream was a line end.
    at_line_start: bool,
    /// Tool calls dispatched and not yet complete: their id, name and start.
    running_tools: Vec<(String, String, Instant)>,
    /// Neutralises the streamed text on a terminal stdout.
    text: Neutraliser,
    /// Renders the (neutralised) text as Markdown, when the screen takes it.
    markdown: Option<MarkdownStream>,
    /// Neutralises the streamed thinking on a terminal decoration stream.
    thinking: Neutraliser,
    /// Breaks the streamed thinking at spaces to the terminal's width.
    thinking_flow: super::wrap::Flowing,
    /// Whether a call of the named tool will be asked about (so the question shows it).
    asks: Option<AsksFirst>,
    /// Whether an error result is that of a call the user declined.
    declined: Option<Declined>,
    /// Attempts in all a failing request gets, for the retry line.
    max_attempts: Option<u32>,
}

/// Says whether a call of the named tool will be asked about before it runs.
pub type AsksFirst = Box<dyn Fn(&str) -> bool + Send>;

/// Says whether an error result (its text) is that of a call the user declined at a question,
/// which is shown as declined rather than as a failure.
pub type Declined = Box<dyn Fn(&str) -> bool + Send>;

impl TurnView {
    /// A view drawing on `screen`.
    pub fn new(screen: Screen) -> Self {
        TurnView {
            screen,
            spinner: None,
            open: Open::Nothing,
            at_line_start: true,
            running_tools: Vec::new(),
            text: Neutraliser::default(),
            markdown: screen.markdown.then(|| MarkdownStream::new(screen.out.is_colour())),
            thinking: Neutraliser::default(),
            thinking_flow: super::wrap::Flowing::default(),
            asks: None,
            declined: None,
            max_attempts: None,
        }
    }

    /// Tells the view how many attempts a request gets in all (`↻ retry 2/5`).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// Tells the view which tool calls will be asked about.
    pub fn with_questions(mut self, asks: AsksFirst) -> Self {
        self.asks = Some(asks);
        self
    }

    /// Tells the view which error results are those of calls the user declined.
    pub fn with_declined(mut self, declined: Declined) -> Self {
        self.declined = Some(declined);
        self
    }

    /// Shows the spinner (on a terminal only), counting from now.
    pub fn waiting(&mut self, label: &str) {
        self.waiting_since(label, Instant::now());
    }

    fn waiting_since(&mut self, label: &str, since: Instant) {
        self.stop_spinner();
        if self.screen.deco_is_tty && self.screen.deco_on_stdout {
            // bash's output, live, while a bash call runs.
            let bash_runs = self.running_tools.iter().any(|(_, name, _)| name == "bash");
            if !bash_runs {
                // What the last one printed is in its result now.
                super::tail::clear();
            }
            self.spinner = Some(Spinner::start(label, since, bash_runs));
        }
    }

    /// The spinner while tools run: the tool's name, or how many run, since the first started.
    fn tools_spinner(&mut self) {
        let deco = self.screen.deco;
        match self.running_tools.as_slice() {
            [] => self.waiting("waiting for the model…"),
            [(_, name, since)] => {
                let label = format!("running {}…", deco.safe(name));
                self.waiting_since(&label, *since);
            }
            [(_, _, since), ..] => {
                let label = format!("running {} tools…", self.running_tools.len());
                self.waiting_since(&label, *since);
            }
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(mut s) = self.spinner.take() {
            s.stop();
        }
    }

    /// Ends whatever block is open with a line end.
    fn close_block(&mut self) {
        // A CR the last piece ended with, held back in case a line feed followed.
        let held = match self.open {
            Open::Text => self.text.finish(),
            Open::Thinking if self.screen.deco.is_terminal() => {
                let columns = self.screen.columns();
                let mut held = self.thinking_flow.push(&self.thinking.finish(), columns);
                held.push_str(&self.thinking_flow.finish(columns));
                held
            }
            Open::Thinking => self.thinking.finish(),
            Open::Nothing => String::new(),
        };
        if let (Open::Text, Some(md)) = (self.open, self.markdown.as_mut()) {
            // The rest of the answer (its last line, a block waiting for its end) is drawn now,
            // for good, in place of its live rows; the rendered text always ends with a line end.
            super::footer::set_live(Vec::new());
            let mut rest = md.push(&held, self.screen.columns());
            rest.push_str(&md.finish(self.screen.columns()));
            self.screen.content(&rest);
            self.at_line_start = true;
        } else if !held.is_empty() {
            match self.open {
                Open::Text => self.screen.content(&held),
                _ => self.screen.deco_raw(&self.screen.deco.dim(&held)),
            }
            self.at_line_start = held.ends_with('\n');
        }
        if self.open != Open::Nothing && !self.at_line_start {
            match self.open {
                Open::Text => self.screen.content("\n"),
                _ => self.screen.deco_raw("\n"),
            }
        }
        self.open = Open::Nothing;
        self.at_line_start = true;
    }

    /// Draws one event.
    pub fn event(&mut self, event: &Event) {
        if shows_something(event) {
            self.stop_spinner();
        }
        match event {
            Event::BlockStart { kind, .. } => match kind {
                BlockKind::Text => {
                    self.close_block();
                    self.open = Open::Text;
                }
                BlockKind::Thinking => {
                    self.close_block();
                    self.open = Open::Thinking;
                    self.thinking_label();
                }
                BlockKind::RedactedThinking => {
                    self.close_block();
                    self.screen.note(&self.screen.deco.dim("[redacted thinking]"));
                }
                BlockKind::ToolUse => {
                    self.close_block();
                    // A call's arguments stream before it is shown (all of a file, for `write`):
                    // the spinner says panto still waits meanwhile.
                    if self.spinner.is_none() {
                        self.waiting("waiting for the model…");
                    }
                }
                _ => self.close_block(),
            },
            Event::Delta { delta, .. } => match delta {
                ContentDelta::Text(text) if !text.is_empty() => self.text_delta(text),
                ContentDelta::Thinking(text) if !text.is_empty() => {
                    if self.open != Open::Thinking {
                        self.close_block();
                        self.open = Open::Thinking;
                        self.thinking_label();
                    }
                    if self.screen.deco.is_terminal() {
                        // Broken at spaces as it streams: the last word waits for its end.
                        let safe = self.thinking.push(text);
                        let shown = self.thinking_flow.push(&safe, self.screen.columns());
                        if !shown.is_empty() {
                            self.screen.deco_raw(&self.screen.deco.dim(&shown));
                            self.at_line_start = shown.ends_with('\n');
                        }
                    } else {
                        self.screen.deco_raw(&self.screen.deco.dim(text));
                        self.at_line_start = text.ends_with('\n');
                    }
                }
                _ => {}
            },
            Event::BlockComplete { .. } | Event::MessageComplete { .. } => self.close_block(),
            Event::ToolDispatchStart { id, name, input } => {
                self.close_block();
                self.running_tools.push((id.clone(), name.clone(), Instant::now()));
                let deco = self.screen.deco;
                // A bash command about to be asked about is shown whole by the question: once.
                let asked = name == "bash" && self.asks.as_ref().is_some_and(|asks| asks(name));
                let args = if asked {
                    String::new()
                } else {
                    call_summary(name, input)
                };
                self.screen.note(&format!(
                    "{} {} {}",
                    deco.cyan("●"),
                    deco.bold(&deco.safe(name)),
                    deco.dim(&deco.safe(&args))
                ));
                if let Some(lines) = super::diff::preview(name, input, deco) {
                    for line in lines {
                        self.screen.note_whole(&line);
                    }
                }
                self.tools_spinner();
            }
            Event::ToolDispatchComplete {
                id,
                name,
                content,
                is_error,
            } => {
                self.running_tools.retain(|(running, _, _)| running != id);
                self.tool_result(name, content, *is_error);
                self.tools_spinner();
            }
            Event::ProviderRetry(info) => {
                self.close_block();
                let of = self.max_attempts.map(|m| format!("/{m}")).unwrap_or_default();
                let line = format!(
                    "↻ retry {}{of} in {:.1} s: {}",
                    info.attempt,
                    info.delay.as_secs_f64(),
                    self.screen.deco.safe(&super::brief(&info.reason))
                );
                if info.discard_partial {
                    self.screen.note(
                        &self
                            .screen
                            .deco
                            .yellow(&format!("{line} — the partial answer above is discarded")),
                    );
                    self.waiting("waiting for the model…");
                } else if self.screen.deco_is_tty && self.screen.deco_on_stdout {
                    // One line that each retry updates (the spinner's), not a line per retry: a
                    // provider that cannot be reached would otherwise fill the screen before the
                    // one error line that ends the turn.
                    self.waiting(&line);
                } else {
                    self.screen.note(&self.screen.deco.yellow(&line));
                }
            }
            Event::CompactionStart { tokens_before } => {
                self.close_block();
                self.screen.note(&self.screen.deco.dim(&format!(
                    "compacting the conversation (about {} tokens)…",
                    thousands(*tokens_before)
                )));
                self.waiting("summarising…");
            }
            Event::CompactionComplete {
                tokens_before,
                tokens_after,
                ..
            } => {
                self.screen.note(&self.screen.deco.dim(&format!(
                    "compacted: about {} → {} tokens",
                    thousands(*tokens_before),
                    thousands(*tokens_after)
                )));
                self.waiting("waiting for the model…");
            }
            Event::TurnComplete { .. } => self.close_block(),
            // A line the user sent mid-turn joined the conversation: shown where it joined.
            Event::Steer { text } | Event::FollowUpStart { text } => {
                self.close_block();
                let deco = self.screen.deco;
                self.screen.note(&format!("{} {}", deco.dim("›"), deco.safe(text)));
                self.waiting("waiting for the model…");
            }
            _ => {}
        }
    }

    /// A piece of the answer's text.
    fn text_delta(&mut self, text: &str) {
        if self.open != Open::Text {
            self.close_block();
            self.open = Open::Text;
        }
        if let Some(md) = self.markdown.as_mut() {
            // Every byte of the model's text is neutralised before it is parsed, so the
            // renderer's own styling is the only escape on screen.
            let safe = self.text.push(text);
            let columns = self.screen.columns();
            let done = md.push(&safe, columns);
            // The line being written is shown as it grows, under the lines that are complete
            // (which are drawn for good).
            if self.screen.deco_on_stdout {
                super::footer::set_live(md.preview(columns));
            }
            self.screen.content(&done);
            self.at_line_start = true;
        } else if self.screen.out.is_terminal() {
            self.screen.content(&self.text.push(text));
            self.at_line_start = text.ends_with('\n');
        } else {
            self.screen.content(text);
            self.at_line_start = text.ends_with('\n');
        }
    }

    /// A dim `thinking` label on its own line, so thinking is never taken for the answer.
    fn thinking_label(&mut self) {
        let deco = self.screen.deco;
        self.screen
            .deco_raw(&format!("{}\n", deco.dim(&deco.bold("✻ thinking"))));
        self.at_line_start = true;
    }

    fn tool_result(&mut self, name: &str, content: &[ToolResultContent], is_error: bool) {
        let mut text = String::new();
        let mut images = Vec::new();
        for part in content {
            match part {
                ToolResultContent::Text { text: t } => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(t);
                }
                ToolResultContent::Image { media_type, data } => {
                    images.push(format!(
                        "[image {}, about {} bytes]",
                        self.screen.deco.safe(media_type),
                        data.len() / 4 * 3
                    ));
                }
            }
        }
        super::expand::remember(self.screen, name, &text, is_error);
        let deco = self.screen.deco;
        let name = deco.safe(name);
        let lines: Vec<&str> = text.lines().collect();
        let size = format!(
            "{} line{}, {} bytes",
            lines.len(),
            if lines.len() == 1 { "" } else { "s" },
            thousands(text.len() as u64)
        );
        // A call the user declined did not fail: it is shown without the error's red and ✗.
        let declined = is_error && self.declined.as_ref().is_some_and(|d| d(&text));
        let is_error = is_error && !declined;
        let head = if declined {
            deco.dim(&format!("  ⊘ {name} declined"))
        } else if is_error {
            deco.red(&format!("  ✗ {name} failed ({size})"))
        } else {
            deco.dim(&format!("  ✓ {name} ({size})"))
        };
        self.screen.note(&head);
        // The first lines say what ran, the last ones how it ended (`300 passed`, an exit code,
        // an error's last message): a long result shows both, and how many lines lie between.
        let paint = |line: &str| {
            let shown = format!("    {}", deco.safe(&compact(line, 200)));
            if is_error {
                deco.red(&shown)
            } else {
                deco.dim(&shown)
            }
        };
        // Hiding a single line would take the row the line itself takes.
        let hidden = lines.len().saturating_sub(RESULT_HEAD_LINES + RESULT_TAIL_LINES);
        let (head, tail) = if hidden <= 1 {
            (&lines[..], &lines[lines.len()..])
        } else {
            (&lines[..RESULT_HEAD_LINES], &lines[lines.len() - RESULT_TAIL_LINES..])
        };
        for line in head {
            self.screen.note(&paint(line));
        }
        if hidden > 1 {
            let more = format!("    … {hidden} more lines (Ctrl-O shows all)");
            self.screen.note(&deco.dim(&more));
        }
        for line in tail {
            self.screen.note(&paint(line));
        }
        for image in images {
            self.screen.note(&deco.dim(&format!("    {image}")));
        }
    }

    /// Ends the turn: the spinner gone, the last block drawn.
    pub fn finish(&mut self) {
        self.stop_spinner();
        self.close_block();
    }

    /// Ends the turn with an error.
    pub fn failed(&mut self, message: &str) {
        self.stop_spinner();
        self.close_block();
        let deco = self.screen.deco;
        self.screen
            .note(&deco.red(&format!("error: {}", deco.safe(&super::brief(message)))));
    }

    /// Ends the turn after Ctrl-C.
    pub fn cancelled(&mut self) {
        self.stop_spinner();
        self.close_block();
        self.screen.note(
            &self
                .screen
                .deco
                .yellow("⎋ cancelled — what streamed so far is kept in the session"),
        );
    }
}

impl std::fmt::Debug for TurnView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnView")
            .field("open", &self.open)
            .field("running_tools", &self.running_tools)
            .finish_non_exhaustive()
    }
}

impl Drop for TurnView {
    fn drop(&mut self) {
        self.stop_spinner();
    }
}

/// Whether `event` shows something, so the spinner stops: a message or a text block that has
/// started has nothing to show yet, nor has a tool call whose arguments still stream.
fn shows_something(event: &Event) -> bool {
    match event {
        Event::BlockComplete { .. } | Event::MessageComplete { .. } => false,
        Event::BlockStart { kind, .. } => {
            matches!(kind, BlockKind::Thinking | BlockKind::RedactedThinking)
        }
        Event::Delta { delta, .. } => match delta {
            ContentDelta::Text(text) | ContentDelta::Thinking(text) => !text.is_empty(),
            _ => false,
        },
        _ => true,
    }
}

/// What a tool line says about a call: the path of a file tool (the diff below shows the
/// rest), a bash command, or the arguments as JSON; on one line, cut.
fn call_summary(name: &str, input: &serde_json::Value) -> String {
    let field = |key: &str| input.get(key).and_then(serde_json::Value::as_str);
    let summary = match (name, field("path"), field("command")) {
        ("read" | "write" | "edit", Some(path), _) => path.to_owned(),
        ("bash", _, Some(command)) => format!("$ {command}"),
        _ => input.to_string(),
    };
    compact(&summary, ARGS_PREVIEW_CHARS)
}

/// `text` on one line, cut to `max` characters with an ellipsis.
fn compact(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_flattens_and_cuts() {
        assert_eq!(compact("a\nb", 10), "a b");
        assert_eq!(compact("abcdef", 3), "abc…");
    }
}
