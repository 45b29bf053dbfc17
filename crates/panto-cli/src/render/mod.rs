//! Terminal presentation: when to use colour, where decorations go, and how a turn is drawn.
//!
//! Two rules hold everywhere: colour only on a terminal and never when `NO_COLOR` is set (which
//! takes away colour and style only: the layout of an answer stays); and
//! when stdout is not a terminal, it receives only content (the model's text), while everything
//! decorative (tool lines, summaries, notes) goes to stderr.

mod blocks;
mod diff;
pub mod expand;
pub mod footer;
mod highlight;
mod markdown;
mod spinner;
mod status;
mod table;
pub mod tail;
mod turn;
pub mod wrap;

use std::io::{IsTerminal, Write};
use std::sync::{Mutex, MutexGuard};

pub use highlight::CodeHighlighter;
pub use markdown::MarkdownStream;
pub use status::TurnStatus;
pub use turn::{AsksFirst, Declined, TurnView};

use crate::config::Env;

/// Serialises everything written to the terminal: the turn's rendering, the spinner thread, and
/// approval questions (which hold it from the question until the answer, so no tool line lands in
/// the middle of a question).
static CONSOLE: Mutex<()> = Mutex::new(());

/// Takes the terminal for a sequence of writes that must not be interleaved.
pub fn console() -> MutexGuard<'static, ()> {
    // Writers keep no state under the lock, so a poisoned lock is still usable.
    CONSOLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// How one output stream is drawn: ANSI styling or none, and whether untrusted text written to it
/// must be neutralised (it is a terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    colour: bool,
    terminal: bool,
}

impl Style {
    /// Colour when the stream is a terminal, `NO_COLOR` is not set to a non-empty value and
    /// `TERM` is not `dumb` (a terminal that understands no escape sequences).
    pub fn detect(is_tty: bool, env: &Env) -> Style {
        Style {
            colour: is_tty && env.get("NO_COLOR").is_none() && env.get("TERM") != Some("dumb"),
            terminal: is_tty,
        }
    }

    /// Whether this style emits escape sequences.
    pub fn is_colour(self) -> bool {
        self.colour
    }

    /// Whether the stream is a terminal.
    pub fn is_terminal(self) -> bool {
        self.terminal
    }

    /// Untrusted `text` (from a model, a tool, a server, a session file) as it may be written to
    /// this stream: neutralised on a terminal, verbatim on a pipe (see [`crate::safe`]).
    pub fn safe(self, text: &str) -> std::borrow::Cow<'_, str> {
        crate::safe::for_stream(text, self.terminal)
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Dimmed (thinking, secondary information).
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Red (errors).
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Green (added lines).
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow (questions, retries).
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Cyan (tool names).
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }

    /// Bold.
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Reverse video, for marks inside other styled text: it is switched off on its own (SGR 27)
    /// rather than by a reset, so the surrounding colour goes on after it.
    pub fn mark(self, text: &str) -> String {
        if self.colour {
            format!("\x1b[7m{text}\x1b[27m")
        } else {
            text.to_owned()
        }
    }
}

/// Where REPL output goes: content to stdout; decorations to stdout on a terminal, else stderr.
#[derive(Debug, Clone, Copy)]
pub struct Screen {
    /// Style of content on stdout.
    pub out: Style,
    /// Style of decorations.
    pub deco: Style,
    /// Whether decorations share stdout (it is a terminal).
    pub deco_on_stdout: bool,
    /// Whether the decoration stream is a terminal (so a spinner may be drawn).
    pub deco_is_tty: bool,
    /// Whether the model's Markdown is rendered (wrapped, laid out, its markup gone; styled
    /// when [`Screen::out`] takes colour): stdout is a terminal that understands escape
    /// sequences (`TERM` is not `dumb`). `NO_COLOR` takes the colour away, not the layout.
    /// Otherwise the text is written as it came (neutralised on a terminal).
    pub markdown: bool,
}

impl Screen {
    /// Detects terminals and colour for the process's stdout and stderr.
    pub fn detect(env: &Env) -> Screen {
        let out_tty = std::io::stdout().is_terminal();
        let err_tty = std::io::stderr().is_terminal();
        let deco_is_tty = out_tty || err_tty;
        Screen {
            out: Style::detect(out_tty, env),
            deco: Style::detect(deco_is_tty, env),
            deco_on_stdout: out_tty,
            deco_is_tty,
            markdown: out_tty && env.get("TERM") != Some("dumb"),
        }
    }

    /// The width of the terminal stdout is, read now (so a resize counts from the next block
    /// on); 80 when it cannot be read.
    pub fn columns(&self) -> usize {
        columns()
    }

    /// Writes `text` to the decoration stream, as is.
    pub fn deco_raw(&self, text: &str) {
        let _console = console();
        if self.deco_on_stdout {
            footer::write_around(&mut std::io::stdout().lock(), text);
        } else {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }

    /// Writes one decoration line (or several, `\n` between them); on a terminal each is broken
    /// at spaces to its width, under its own start ([`wrap::fit_styled`]): the terminal's own
    /// wrap would cut words in two.
    pub fn note(&self, line: &str) {
        if self.deco_is_tty {
            self.deco_raw(&format!("{}\n", wrap::fit_styled(line, self.columns())));
        } else {
            self.deco_raw(&format!("{line}\n"));
        }
    }

    /// Writes one decoration line as it is, for the terminal to wrap (a line of code, which
    /// copies whole only if it is not broken).
    pub fn note_whole(&self, line: &str) {
        self.deco_raw(&format!("{line}\n"));
    }

    /// Writes content to stdout.
    pub fn content(&self, text: &str) {
        let _console = console();
        footer::write_around(&mut std::io::stdout().lock(), text);
    }
}

/// The most of one error message the REPL shows, in characters: a provider's error is a line
/// or two, but a server that answers with a whole page (a proxy's HTML, up to the 64 KiB that
/// panto-core keeps of an error body) would fill the screen many times over.
const SHOWN_ERROR_CHARS: usize = 2_000;

/// `message` as the REPL shows an error: at most [`SHOWN_ERROR_CHARS`] characters, saying how
/// many more there were.
pub fn brief(message: &str) -> std::borrow::Cow<'_, str> {
    let total = message.chars().count();
    if total <= SHOWN_ERROR_CHARS {
        return message.into();
    }
    let shown: String = message.chars().take(SHOWN_ERROR_CHARS).collect();
    format!("{shown} … ({} more characters not shown)", total - SHOWN_ERROR_CHARS).into()
}

/// The height of the terminal stdout is, read now; 24 when it cannot be read.
pub fn rows() -> usize {
    terminal_size::terminal_size_of(std::io::stdout())
        .map(|(_, h)| usize::from(h.0))
        .filter(|&h| h > 0)
        .unwrap_or(24)
}

/// The width of the terminal stdout is, read now; 80 when it cannot be read.
pub fn columns() -> usize {
    terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| usize::from(w.0))
        .filter(|&w| w > 0)
        .unwrap_or(80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_is_shown_cut_with_how_much_was_left_out() {
        assert_eq!(brief("HTTP 401: denied"), "HTTP 401: denied");
        let page = format!("HTTP 401: <html>{}", "é".repeat(65_536));
        let shown = brief(&page);
        assert!(shown.starts_with("HTTP 401: <html>éé"), "{}", &shown[..40]);
        assert!(
            shown.ends_with(" … (63552 more characters not shown)"),
            "{}",
            &shown[shown.len() - 60..]
        );
        assert_eq!(
            shown.chars().count(),
            SHOWN_ERROR_CHARS + " … (63552 more characters not shown)".chars().count()
        );
    }

    #[test]
    fn no_color_and_pipes_disable_colour() {
        let env = Env::from_pairs(&[]);
        assert!(Style::detect(true, &env).is_colour());
        assert!(!Style::detect(false, &env).is_colour());
        let env = Env::from_pairs(&[("NO_COLOR", "1")]);
        assert!(!Style::detect(true, &env).is_colour());
        assert_eq!(Style::detect(true, &env).red("x"), "x");
        // The spec: an empty NO_COLOR does not count.
        let env = Env::from_pairs(&[("NO_COLOR", "")]);
        assert!(Style::detect(true, &env).is_colour());
    }
}
