//! The keyboard while a turn runs.
//!
//! The terminal leaves canonical mode and stops echoing, so nothing typed lands in the answer.
//! A thread reads the keys: Esc cancels the turn (like Ctrl-C, which stays a signal) or, when
//! something was typed ahead, discards that first; other keys are typed ahead into a
//! [`TypeAhead`] queue shown in the footer ("queued: ..."). When the turn ends the REPL sends each
//! line finished with Enter as the next prompt and puts the unfinished rest into the prompt's
//! line editor.
//!
//! With run control (the usual case), Enter sends a finished line to the running turn instead:
//! as a steer (`typeahead = "steer"`, the default: it joins after the current step's tool
//! results) or a follow-up (`typeahead = "follow-up"`: a new turn once this one ends). The line
//! stays in the footer ("sent: ...") until the turn takes it; what the turn never took (a cancel,
//! an error) comes back as a prompt to send next, so nothing typed is lost. A command or shell
//! line (`/quit`, `!ls`) is never sent to the model: it waits, with what is typed after it, and
//! runs at the prompt when the turn ends, as if typed there.
//!
//! Ctrl-O draws the last tool result in full ([`crate::render::expand`]).
//!
//! An approval question reads its answer itself: [`pause`] gives the terminal back (cooked,
//! echoing; the question then takes single keys) and keeps the reader thread off it until the
//! answer is read.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags};
use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};
use panto_core::{CancellationToken, QueueMode, RunControl};

use super::commands::{classify, Input};
use crate::render::wrap::{Line, Span};
use crate::render::{footer, Style};

/// How long a poll waits before the stop flag is checked again, in milliseconds.
const POLL_MS: u16 = 50;
/// How long after a lone Esc byte the rest of an escape sequence may still arrive, in ms.
const ESC_WAIT_MS: u16 = 30;
/// The most characters of typed-ahead text the footer shows (its end).
const SHOWN_CHARS: usize = 60;

/// Keys typed while a turn ran.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TypeAhead {
    /// Lines finished with Enter, oldest first: prompts to send.
    pub lines: Vec<String>,
    /// The line being typed.
    pub partial: String,
    /// Lines sent to the running turn, shown until it takes them.
    pub sent: Vec<String>,
}

impl TypeAhead {
    /// Whether nothing is being typed (sent lines aside: Esc then cancels the turn).
    fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.partial.is_empty()
    }

    /// The turn took `text`: it is no longer shown as sent.
    pub fn taken(&mut self, text: &str) {
        if let Some(at) = self.sent.iter().position(|s| s == text) {
            self.sent.remove(at);
        }
    }

    /// What the footer shows: `queued: first ⏎ second ⏎ typing`, its end when long.
    fn shown(&self, style: Style) -> Option<Line> {
        if self.is_empty() {
            return self.shown_sent(style, true);
        }
        // Both: the sent lines without their hint, so the typed ones still fit the row.
        let sent = self.shown_sent(style, false);
        let mut line = self.shown_typed(style);
        if let Some(mut sent) = sent {
            sent.push(Span::plain("  "));
            sent.append(&mut line);
            line = sent;
        }
        Some(line)
    }

    /// What the footer shows of the keys being typed.
    fn shown_typed(&self, style: Style) -> Line {
        let mut parts: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        if !self.partial.is_empty() {
            parts.push(&self.partial);
        }
        let text = style.safe(&parts.join(" ⏎ ")).into_owned();
        let count = text.chars().count();
        let text = if count > SHOWN_CHARS {
            format!("…{}", text.chars().skip(count - SHOWN_CHARS).collect::<String>())
        } else {
            text
        };
        let hint = if self.lines.is_empty() {
            "(Enter sends it to the turn, Esc discards)"
        } else {
            "(sent when the turn ends; Esc discards)"
        };
        vec![
            Span::styled("queued: ", "33"),
            Span::plain(format!("{text} ")),
            Span::styled(hint, "2"),
        ]
    }

    /// What the footer shows of lines sent to the turn and not taken yet.
    fn shown_sent(&self, style: Style, hint: bool) -> Option<Line> {
        if self.sent.is_empty() {
            return None;
        }
        let text = style.safe(&self.sent.join(" ⏎ ")).into_owned();
        let count = text.chars().count();
        let text = if count > SHOWN_CHARS {
            format!("…{}", text.chars().skip(count - SHOWN_CHARS).collect::<String>())
        } else {
            text
        };
        let mut line = vec![Span::styled("sent: ", "33"), Span::plain(text)];
        if hint {
            line.push(Span::styled(" (joins after the running step; Esc cancels)", "2"));
        }
        Some(line)
    }

    /// Sends the finished lines that are messages to the running turn through `control`,
    /// keeping each as sent until the turn takes it. A command or shell line (`/quit`,
    /// `!git status`) is the REPL's, not the model's: it waits for the prompt, where it runs once
    /// the turn ends, and the lines typed after it wait with it, so that all run in the order
    /// typed.
    fn send(&mut self, control: &RunControl, mode: QueueMode) {
        let mut lines = std::mem::take(&mut self.lines).into_iter();
        while let Some(line) = lines.next() {
            let text = match classify(&line) {
                Input::Message(text) => text.into_owned(),
                Input::Command(_) | Input::Shell(_) => {
                    self.lines.push(line);
                    self.lines.extend(lines);
                    return;
                }
            };
            if control.send(mode, panto_core::UserMessage::text(text.clone())) {
                self.sent.push(text);
            } else {
                // The turn is over: the line waits for the next prompt instead.
                self.lines.push(line);
            }
        }
    }

    /// Applies the keys in `text` (decoded input, escape sequences removed).
    fn keys(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '\r' | '\n' => {
                    let line = std::mem::take(&mut self.partial);
                    if !line.trim().is_empty() {
                        self.lines.push(line);
                    }
                }
                '\u{7f}' | '\u{8}' => {
                    if self.partial.pop().is_none() {
                        // Backspace at the start of a line goes back into the last finished one.
                        self.partial = self.lines.pop().unwrap_or_default();
                    }
                }
                // Ctrl-U clears the line being typed.
                '\u{15}' => self.partial.clear(),
                '\t' => self.partial.push(' '),
                c if c.is_control() => {}
                c => self.partial.push(c),
            }
        }
    }
}

/// Whether the reader may read now, and the terminal's settings to restore.
#[derive(Debug)]
struct Keyboard {
    /// The settings before the turn, while the turn's settings are in force.
    cooked: Option<Termios>,
    paused: bool,
}

static KEYBOARD: Mutex<Keyboard> = Mutex::new(Keyboard {
    cooked: None,
    paused: false,
});

fn keyboard() -> MutexGuard<'static, Keyboard> {
    KEYBOARD.lock().unwrap_or_else(|e| e.into_inner())
}

/// The turn's settings from `cooked`: no line editing, no echo; signals stay (Ctrl-C).
fn turn_settings(cooked: &Termios) -> Termios {
    let mut t = cooked.clone();
    t.local_flags
        .remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ECHONL);
    t.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    t
}

/// The terminal given back for an approval question while the guard lives.
#[derive(Debug)]
pub struct Paused {
    restore: Option<Termios>,
}

/// Gives the terminal back in its settings before the turn (for an approval question) until
/// the guard is dropped.
/// Nothing is read by the key thread meanwhile. A no-op outside a turn.
pub fn pause() -> Paused {
    let mut k = keyboard();
    let Some(cooked) = k.cooked.clone() else {
        return Paused { restore: None };
    };
    k.paused = true;
    let stdin = std::io::stdin();
    let _ = termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &cooked);
    Paused {
        restore: Some(turn_settings(&cooked)),
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(settings) = self.restore.take() {
            let mut k = keyboard();
            let stdin = std::io::stdin();
            let _ = termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &settings);
            k.paused = false;
        }
    }
}

/// The keyboard during one turn.
#[derive(Debug)]
pub struct TurnKeys {
    stop: Arc<AtomicBool>,
    queue: Arc<Mutex<TypeAhead>>,
    thread: Option<JoinHandle<()>>,
    style: Style,
}

impl TurnKeys {
    /// Takes the keyboard for a turn that `cancel` cancels. `None` when stdin is not a terminal
    /// (piped prompts are not typed ahead).
    pub fn start(cancel: CancellationToken, run: Option<(RunControl, QueueMode)>, style: Style) -> Option<TurnKeys> {
        let stdin = std::io::stdin();
        let cooked = termios::tcgetattr(stdin.as_fd()).ok()?;
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &turn_settings(&cooked)).ok()?;
        {
            let mut k = keyboard();
            k.cooked = Some(cooked);
            k.paused = false;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let queue = Arc::new(Mutex::new(TypeAhead::default()));
        let (flag, shared) = (stop.clone(), queue.clone());
        let thread = std::thread::spawn(move || read_keys(&flag, &shared, &cancel, run.as_ref(), style));
        Some(TurnKeys {
            stop,
            queue,
            thread: Some(thread),
            style,
        })
    }

    /// The turn took `text` (a steer joined, a follow-up started): the footer stops showing it.
    pub fn taken(&self, text: &str) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.taken(text);
        footer::set_queued(q.shown(self.style));
    }

    /// Gives the keyboard back to the line editor; returns what was typed ahead.
    pub fn finish(mut self) -> TypeAhead {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        restore();
        footer::set_queued(None);
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for TurnKeys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        restore();
    }
}

/// Puts the terminal back as it was before the turn.
fn restore() {
    let mut k = keyboard();
    if let Some(cooked) = k.cooked.take() {
        let stdin = std::io::stdin();
        let _ = termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &cooked);
    }
    k.paused = false;
}

/// Waits up to `ms` for input; whether some is there.
fn readable(ms: u16) -> bool {
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, ms), Ok(n) if n > 0)
}

/// The key thread: reads until `stop`.
fn read_keys(
    stop: &AtomicBool,
    queue: &Mutex<TypeAhead>,
    cancel: &CancellationToken,
    run: Option<&(RunControl, QueueMode)>,
    style: Style,
) {
    // Bytes of a UTF-8 character cut between two reads.
    let mut pending: Vec<u8> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        if !readable(POLL_MS) {
            continue;
        }
        let mut buf = [0u8; 256];
        let n = {
            let k = keyboard();
            if k.paused || k.cooked.is_none() {
                drop(k);
                std::thread::sleep(std::time::Duration::from_millis(u64::from(POLL_MS)));
                continue;
            }
            let stdin = std::io::stdin();
            // Read while holding the lock, so `pause` never returns while a read is under way.
            match nix::unistd::read(stdin.as_fd(), &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            }
        };
        pending.extend_from_slice(&buf[..n]);
        // A lone Esc is the Esc key; an Esc followed by more is a sequence (an arrow key).
        if pending.last() == Some(&0x1b) && !readable(ESC_WAIT_MS) {
            pending.pop();
            let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
            apply(&mut q, &mut pending, style);
            if q.is_empty() {
                drop(q);
                cancel.cancel();
            } else {
                *q = TypeAhead::default();
                drop(q);
                footer::set_queued(None);
            }
            continue;
        }
        // Ctrl-O: the last tool result in full (drawn outside the queue's lock).
        let expand = pending.contains(&0x0f);
        let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
        apply(&mut q, &mut pending, style);
        if let Some((control, mode)) = run {
            if !q.lines.is_empty() {
                q.send(control, *mode);
                footer::set_queued(q.shown(style));
            }
        }
        drop(q);
        if expand {
            crate::render::expand::show_last(None);
        }
    }
}

/// Applies the complete characters of `pending` to the queue (escape sequences dropped) and
/// redraws the footer; keeps a cut-off character's first bytes.
fn apply(queue: &mut TypeAhead, pending: &mut Vec<u8>, style: Style) {
    let valid = match std::str::from_utf8(pending) {
        Ok(s) => s.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        // Invalid bytes: dropped.
        Err(_) => pending.len(),
    };
    let bytes: Vec<u8> = pending.drain(..valid).collect();
    let text = String::from_utf8_lossy(&bytes);
    queue.keys(&without_sequences(&text));
    footer::set_queued(queue.shown(style));
}

/// `text` without escape sequences (arrow keys, function keys: CSI and SS3 sequences).
fn without_sequences(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte.
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            Some('O') => {
                chars.next();
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::wrap::line_text;

    #[test]
    fn typing_ahead_queues_lines_and_edits() {
        let mut q = TypeAhead::default();
        q.keys("first\rsecx\u{7f}ond");
        assert_eq!(q.lines, ["first"]);
        assert_eq!(q.partial, "second");
        q.keys("\u{15}\r\r");
        assert_eq!(
            q,
            TypeAhead {
                lines: vec!["first".into()],
                partial: String::new(),
                sent: Vec::new(),
            }
        );
        q.keys("\u{7f}");
        assert_eq!(q.partial, "first");
    }

    #[test]
    fn commands_and_shell_lines_wait_for_the_prompt_with_the_lines_after_them() {
        let control = RunControl::default();
        let mut q = TypeAhead::default();
        q.keys("//etc is empty\r/model opus\rthen this\r");
        q.send(&control, QueueMode::Steer);
        // `//` sends a message starting with `/`; the command and the line after it wait.
        assert_eq!(q.sent, ["/etc is empty"]);
        assert_eq!(q.lines, ["/model opus", "then this"]);
        q.keys("!ls\rmore\r");
        q.send(&control, QueueMode::Steer);
        assert_eq!(q.sent, ["/etc is empty"]);
        assert_eq!(q.lines, ["/model opus", "then this", "!ls", "more"]);
        let mut q = TypeAhead::default();
        q.keys("first\r  !git status\r");
        q.send(&control, QueueMode::FollowUp);
        assert_eq!(q.sent, ["first"]);
        assert_eq!(q.lines, ["  !git status"]);
    }

    #[test]
    fn arrow_keys_are_not_text() {
        assert_eq!(without_sequences("a\u{1b}[Ab\u{1b}OBc\u{1b}[1;5Cd"), "abcd");
    }

    #[test]
    fn the_footer_shows_the_end_of_long_text() {
        let style = Style::detect(true, &crate::config::Env::from_pairs(&[("NO_COLOR", "1")]));
        let q = TypeAhead {
            lines: vec!["one".into()],
            partial: "x".repeat(100),
            sent: Vec::new(),
        };
        let shown = line_text(&q.shown(style).unwrap());
        assert!(shown.starts_with("queued: …xxx"), "{shown}");
        assert!(shown.contains("sent when the turn ends"), "{shown}");
        // Typed control characters never reach the screen.
        let q = TypeAhead {
            lines: vec![],
            partial: "a\u{1b}]0;x".into(),
            sent: Vec::new(),
        };
        assert!(line_text(&q.shown(style).unwrap()).contains("a^[]0;x"));
    }
}
