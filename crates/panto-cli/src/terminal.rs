//! Terminal input outside rustyline: approval questions and the keys of the pickers.
//!
//! An approval question is asked while a turn runs, and Ctrl-C must be able to cancel the turn
//! while the question waits. A plain blocking read cannot be interrupted, and a reader left
//! blocked would swallow input meant for the prompt. So input is read straight from file
//! descriptor 0, after `poll` says some is ready, checking the cancel token between polls. A
//! question is answered on one key (the terminal leaves canonical mode while it is asked; Esc
//! declines), and a picker ([`crate::picker`]) is driven by keys too. Piped input is read
//! through std's buffered stdin instead, the buffer rustyline reads pipes through.

use std::io::{BufRead, IsTerminal, Write};
use std::os::fd::AsFd;

use nix::poll::{poll, PollFd, PollFlags};
use panto_core::CancellationToken;

use crate::render::Style;
use crate::tools::{approval_key, Answer, Asker};

/// How long a question waits for pending tool lines to be drawn.
const RENDER_GRACE: std::time::Duration = std::time::Duration::from_millis(40);

/// How long one poll waits before the cancel token is checked again, in milliseconds.
const POLL_MS: u16 = 100;

/// A question longer than this many characters, or than [`LONG_QUESTION_LINES`] lines, ends with
/// its size: its start may have scrolled out of sight.
const LONG_QUESTION_CHARS: usize = 400;
/// See [`LONG_QUESTION_CHARS`].
const LONG_QUESTION_LINES: usize = 8;

/// Reads one line from stdin, returning `None` at end of input or when `cancel` fires first.
/// The line is returned without its line end.
pub fn read_line(cancel: Option<&CancellationToken>) -> Option<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        // Piped input: rustyline reads it through std's buffered stdin, which may already hold
        // the next line, so read through the same buffer (a pipe is not typed at, so there is
        // no Ctrl-C to wait for).
        let mut line = String::new();
        return match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
        };
    }
    let fd = stdin.as_fd();
    let mut line = Vec::new();
    loop {
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            return None;
        }
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, POLL_MS) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        }
        // In canonical mode the terminal reports "readable" once a whole line is typed; reading
        // a byte at a time never takes more than the line, so nothing meant for rustyline is
        // consumed here.
        let mut byte = [0u8; 1];
        match nix::unistd::read(fd, &mut byte) {
            Ok(0) => {
                return (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
            }
            Ok(_) if byte[0] == b'\n' => {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
            Ok(_) => line.push(byte[0]),
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
            Err(_) => return None,
        }
    }
}

/// Whether stdin is a terminal.
pub fn stdin_is_tty() -> bool {
    std::io::stdin().is_terminal()
}

/// Discards whatever input waits unread on the terminal: keys typed ahead, and bytes a program
/// queued there. Called right before a question is drawn, so its answer is always typed after
/// the question appeared: a `y⏎` queued while a tool ran (by the user, or by a process that
/// reached the terminal) cannot answer a question it never saw. A no-op when stdin is not a
/// terminal (the REPL then asks no question at all: approvals come only from a terminal).
fn discard_pending_input() {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let _ = nix::sys::termios::tcflush(stdin.as_fd(), nix::sys::termios::FlushArg::TCIFLUSH);
    }
}

/// Asks approval questions on stderr and reads the answers from stdin.
#[derive(Debug)]
pub struct TerminalAsker {
    style: Style,
}

impl TerminalAsker {
    /// An asker drawing with `style` (the colour decision for stderr).
    pub fn new(style: Style) -> Self {
        TerminalAsker { style }
    }
}

impl TerminalAsker {
    /// The question as drawn: every character of the call visible ([`crate::safe::exact`]: no
    /// control sequence can redraw it, no padding can hide part of it), continuation lines marked
    /// with a gutter, and the size of a long call said at the end, next to the answer; the
    /// choices on a line of their own when they do not fit beside the question in `columns`.
    fn draw(&self, question: &str, columns: usize) -> String {
        let style = self.style;
        let shown = crate::safe::exact(question, |m| style.mark(m));
        let mut lines = shown.split('\n');
        let mut out = format!("\n{}", style.yellow(&format!("? {}", lines.next().unwrap_or(""))));
        let mut multi_line = false;
        for line in lines {
            multi_line = true;
            out.push_str(&format!("\n{}{}", style.dim("│ "), style.yellow(line)));
        }
        let chars = question.chars().count();
        let line_count = question.lines().count().max(1);
        if chars > LONG_QUESTION_CHARS || line_count > LONG_QUESTION_LINES {
            let size = format!(
                "(the call above is {chars} characters on {line_count} line{}: read all of it before answering)",
                if line_count == 1 { "" } else { "s" }
            );
            out.push_str(&format!(
                "\n{}",
                style.dim(&crate::render::wrap::fit_lines(&size, columns))
            ));
            multi_line = true;
        }
        let tool = question
            .strip_prefix("allow ")
            .and_then(|q| q.split(':').next())
            .filter(|t| t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or("this tool");
        let parts = [
            "[y]es".to_owned(),
            "[n]o".to_owned(),
            format!("[a]lways for {tool}"),
            "[f]eedback (no, and say why):".to_owned(),
        ];
        let choices = parts.join(" / ");
        // The choices go on a line of their own when they would not fit beside the question,
        // and on two when they do not fit on one, broken between two choices: a terminal's wrap
        // would cut a choice in two. Room is left for the ` /` that ends a row.
        let fits = || {
            let asked = format!("? {shown} {choices}");
            crate::render::wrap::width(&asked) < columns
        };
        out.push_str(if multi_line || !fits() { "\n" } else { " " });
        let rows = crate::render::wrap::join_fitted(&parts, " / ", columns.saturating_sub(3));
        let rows: Vec<String> = rows.split('\n').map(|row| style.dim(row)).collect();
        out.push_str(&rows.join(" /\n"));
        out.push(' ');
        out
    }
}

impl Asker for TerminalAsker {
    fn ask(&self, question: &str, cancel: &CancellationToken) -> Option<Answer> {
        // The tool call's own line is queued for rendering when the tool starts; a moment's wait
        // lets it reach the screen before the question about it.
        std::thread::sleep(RENDER_GRACE);
        let _console = crate::render::console();
        // The footer (spinner, typed-ahead keys) is off the screen and the key thread off the
        // terminal until the answer is read.
        let _held = crate::render::footer::hold();
        let _paused = crate::repl::keys::pause();
        // Answered on one key, nothing echoed but the answer.
        let _keys = KeyMode::enter();
        // Only what is typed once the question is on the screen answers it: what waits unread
        // now goes before the question is drawn (so a key typed as soon as it shows is kept).
        discard_pending_input();
        let _ = std::io::stdout().flush();
        let mut err = std::io::stderr();
        let _ = write!(err, "{}", self.draw(question, crate::render::columns()));
        let _ = err.flush();
        loop {
            let answer = match read_key(cancel)? {
                // Esc and Ctrl-D at the question decline the call; the turn goes on.
                Key::Esc | Key::EndOfInput => Answer::No,
                Key::Char(c) => match approval_key(c) {
                    Some(answer) => answer,
                    None if c.is_control() => continue,
                    None => {
                        let _ = write!(err, "\n{} ", self.style.dim("please answer y, n, a or f (Esc is no):"));
                        let _ = err.flush();
                        continue;
                    }
                },
                // Enter, arrows, Backspace: not answers (an Enter typed out of habit after
                // the answer key is ignored too).
                Key::Enter | Key::Backspace | Key::ClearLine | Key::Interrupt | Key::Up | Key::Down | Key::Other => {
                    continue
                }
            };
            let _ = writeln!(err, "{}", self.style.bold(echo(&answer)));
            if answer != Answer::Feedback {
                let _ = err.flush();
                return Some(answer);
            }
            let _ = write!(err, "{} ", self.style.dim("what should the model do instead?"));
            let _ = err.flush();
            let why = read_text(cancel);
            let _ = writeln!(err);
            let _ = err.flush();
            return Some(match why? {
                Some(why) if !why.trim().is_empty() => Answer::NoBecause(why.trim().to_owned()),
                // Esc, or nothing said: a plain no.
                _ => Answer::No,
            });
        }
    }
}

/// What is echoed after the question for `answer`.
fn echo(answer: &Answer) -> &'static str {
    match answer {
        Answer::Yes => "yes",
        Answer::No | Answer::NoBecause(_) => "no",
        Answer::Always => "always",
        Answer::Feedback => "no, and say why",
    }
}

/// One key read at a question or a picker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// A character (control characters without a meaning here included).
    Char(char),
    /// Enter.
    Enter,
    /// Esc on its own.
    Esc,
    /// Backspace.
    Backspace,
    /// Ctrl-U.
    ClearLine,
    /// Ctrl-D.
    EndOfInput,
    /// Ctrl-C, read as a key (only when the terminal's signals are off: [`KeyMode::picking`]).
    Interrupt,
    /// The up arrow.
    Up,
    /// The down arrow.
    Down,
    /// Another escape sequence (a function key, Alt and a key) or bytes that are not UTF-8.
    Other,
}

/// The terminal taking keys one at a time, unechoed, while the guard lives; the settings on
/// entry come back on drop. At a question signals stay on: Ctrl-C still cancels the turn.
#[derive(Debug)]
pub(crate) struct KeyMode {
    saved: Option<nix::sys::termios::Termios>,
}

impl KeyMode {
    fn enter() -> KeyMode {
        KeyMode::with_signals(true)
    }

    /// Keys for a picker: Ctrl-C is a key ([`Key::Interrupt`], giving up), not a signal.
    pub(crate) fn picking() -> KeyMode {
        KeyMode::with_signals(false)
    }

    fn with_signals(signals: bool) -> KeyMode {
        use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg, SpecialCharacterIndices};
        let stdin = std::io::stdin();
        let Ok(saved) = tcgetattr(stdin.as_fd()) else {
            return KeyMode { saved: None };
        };
        let mut keys = saved.clone();
        keys.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ECHONL);
        if !signals {
            keys.local_flags.remove(LocalFlags::ISIG);
        }
        keys.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        keys.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        let _ = tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &keys);
        KeyMode { saved: Some(saved) }
    }
}

impl Drop for KeyMode {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            let stdin = std::io::stdin();
            let _ = nix::sys::termios::tcsetattr(stdin.as_fd(), nix::sys::termios::SetArg::TCSANOW, &saved);
        }
    }
}

/// How long after an Esc byte the rest of an escape sequence may still arrive, in milliseconds.
const ESC_WAIT_MS: u16 = 30;

/// One byte from stdin once one is there: `None` when `cancel` fires first, input ended, or
/// (with `within`) nothing came within that many milliseconds.
fn next_byte(cancel: &CancellationToken, within: Option<u16>) -> Option<u8> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    loop {
        if cancel.is_cancelled() {
            return None;
        }
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, within.unwrap_or(POLL_MS)) {
            Ok(0) if within.is_some() => return None,
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return None,
        }
        let mut byte = [0u8; 1];
        match nix::unistd::read(fd, &mut byte) {
            Ok(0) => return None,
            Ok(_) => return Some(byte[0]),
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
            Err(_) => return None,
        }
    }
}

/// Reads one key (the terminal in [`KeyMode`]); `None` when `cancel` fires or input ends first.
/// Only the key's own bytes are read: what is typed after it stays for the prompt.
pub(crate) fn read_key(cancel: &CancellationToken) -> Option<Key> {
    let first = next_byte(cancel, None)?;
    let arrow = |last: Option<u8>| match last {
        Some(b'A') => Key::Up,
        Some(b'B') => Key::Down,
        _ => Key::Other,
    };
    Some(match first {
        b'\r' | b'\n' => Key::Enter,
        0x7f | 0x08 => Key::Backspace,
        0x15 => Key::ClearLine,
        0x04 => Key::EndOfInput,
        0x03 => Key::Interrupt,
        0x1b => match next_byte(cancel, Some(ESC_WAIT_MS)) {
            // Nothing follows at once: the Esc key.
            None => Key::Esc,
            Some(b'[') => {
                // Parameters and intermediates, then one final byte (`A` or `B`: an arrow).
                let mut last = None;
                while let Some(b) = next_byte(cancel, Some(ESC_WAIT_MS)) {
                    if (0x40..=0x7e).contains(&b) {
                        last = Some(b);
                        break;
                    }
                }
                arrow(last)
            }
            Some(b'O') => arrow(next_byte(cancel, Some(ESC_WAIT_MS))),
            // Alt and a key.
            Some(_) => Key::Other,
        },
        b if b.is_ascii() => Key::Char(char::from(b)),
        lead => {
            let len = match lead {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                _ => return Some(Key::Other),
            };
            let mut bytes = vec![lead];
            for _ in 1..len {
                match next_byte(cancel, Some(ESC_WAIT_MS)) {
                    Some(b) => bytes.push(b),
                    None => return Some(Key::Other),
                }
            }
            match std::str::from_utf8(&bytes).ok().and_then(|s| s.chars().next()) {
                Some(c) => Key::Char(c),
                None => Key::Other,
            }
        }
    })
}

/// Reads a line of text with the terminal in [`KeyMode`], echoing it (neutralised) and taking
/// Backspace and Ctrl-U: `Some(Some(text))` at Enter, `Some(None)` at Esc, `None` when `cancel`
/// fires or input ends first.
fn read_text(cancel: &CancellationToken) -> Option<Option<String>> {
    let mut text = String::new();
    let mut err = std::io::stderr();
    let erase = |err: &mut std::io::Stderr, c: char| {
        let columns = crate::render::wrap::width(&crate::safe::neutralise(&c.to_string()));
        let _ = write!(err, "{}", "\u{8} \u{8}".repeat(columns));
    };
    loop {
        match read_key(cancel)? {
            Key::Enter => return Some(Some(text)),
            Key::Esc => return Some(None),
            Key::EndOfInput if text.is_empty() => return None,
            Key::EndOfInput => return Some(Some(text)),
            Key::Backspace => {
                if let Some(c) = text.pop() {
                    erase(&mut err, c);
                }
            }
            Key::ClearLine => {
                while let Some(c) = text.pop() {
                    erase(&mut err, c);
                }
            }
            Key::Char('\t') => {
                text.push(' ');
                let _ = write!(err, " ");
            }
            Key::Char(c) if c.is_control() => continue,
            Key::Char(c) => {
                text.push(c);
                let _ = write!(err, "{}", crate::safe::neutralise(&c.to_string()));
            }
            Key::Interrupt | Key::Up | Key::Down | Key::Other => continue,
        }
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Env;

    #[test]
    fn the_choices_take_a_line_of_their_own_when_they_would_not_fit_beside_the_question() {
        let asker = TerminalAsker::new(Style::detect(false, &Env::from_pairs(&[])));
        let question = "allow edit: edit notes.md at line 2 (1 occurrence)";
        let wide = asker.draw(question, 200);
        assert_eq!(
            wide,
            "\n? allow edit: edit notes.md at line 2 (1 occurrence) [y]es / [n]o / [a]lways for edit / [f]eedback (no, and say why): "
        );
        let narrow = asker.draw(question, 80);
        assert_eq!(
            narrow,
            "\n? allow edit: edit notes.md at line 2 (1 occurrence)\n[y]es / [n]o / [a]lways for edit / [f]eedback (no, and say why): "
        );
        // Too narrow for all the choices on one line: broken between two of them.
        let narrower = asker.draw(question, 60);
        assert_eq!(
            narrower,
            "\n? allow edit: edit notes.md at line 2 (1 occurrence)\n[y]es / [n]o / [a]lways for edit /\n[f]eedback (no, and say why): "
        );
    }
}
