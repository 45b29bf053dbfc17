//! The footer: one line under the output while a turn runs, holding the spinner (what panto is
//! waiting for, for how long) and the keys typed ahead ("queued: ...").
//!
//! The footer is drawn only when the cursor is at the start of a line, without a line end after
//! it, so erasing it (`CR`, erase line) puts the cursor back exactly where the output goes on.
//! Every write through [`super::Screen`] erases it first and draws it again after; an approval
//! question holds it off ([`hold`]) while it is on screen.

use std::io::Write;
use std::sync::Mutex;

use super::wrap::{paint, push, width, Line};

/// The footer's state. Guarded by its own lock, always taken inside the console lock.
#[derive(Debug)]
struct Footer {
    /// The spinner's text, when one runs.
    spinner: Option<Line>,
    /// The keys typed ahead, as shown (neutralised, styled spans), when there are any.
    queued: Option<Line>,
    /// Whether styles are drawn.
    colour: bool,
    /// Whether the footer is on screen now.
    shown: bool,
    /// Whether the output's cursor is at the start of a line.
    at_line_start: bool,
    /// Held off while a question is on screen.
    held: bool,
    /// Whether the footer may be drawn at all: stdout is a terminal.
    enabled: bool,
}

static FOOTER: Mutex<Footer> = Mutex::new(Footer {
    spinner: None,
    queued: None,
    colour: false,
    shown: false,
    at_line_start: true,
    held: false,
    enabled: false,
});

fn footer() -> std::sync::MutexGuard<'static, Footer> {
    FOOTER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lets the footer be drawn on stdout (it is a terminal, and decorations go there), in colour
/// or not.
pub fn enable(on: bool, colour: bool) {
    let mut f = footer();
    f.enabled = on;
    f.colour = colour;
}

impl Footer {
    /// The footer as drawn: one row, cut to the terminal's width (a footer that wrapped could not
    /// be erased with one erase-line).
    fn text(&self) -> Option<String> {
        let mut spans = Line::new();
        if let Some(s) = &self.spinner {
            spans.extend(s.iter().cloned());
        }
        if let Some(q) = &self.queued {
            if !spans.is_empty() {
                push(&mut spans, "  ", "");
            }
            spans.extend(q.iter().cloned());
        }
        if spans.is_empty() {
            return None;
        }
        let room = super::columns().saturating_sub(1).max(1);
        let mut cut = Line::new();
        let mut used = 0;
        for span in spans {
            let mut text = String::new();
            for c in span.text.chars() {
                let w = width(c.encode_utf8(&mut [0; 4]));
                if used + w > room {
                    break;
                }
                used += w;
                text.push(c);
            }
            push(&mut cut, &text, &span.sgr);
        }
        Some(paint(&cut, self.colour))
    }

    fn erase(&mut self, out: &mut impl Write) {
        if self.shown {
            let _ = out.write_all(b"\r\x1b[K");
            self.shown = false;
        }
    }

    fn draw(&mut self, out: &mut impl Write) {
        if !self.enabled || self.held || !self.at_line_start {
            return;
        }
        if let Some(text) = self.text() {
            let _ = out.write_all(text.as_bytes());
            self.shown = true;
        }
    }
}

/// Writes `text` to `out` (the console lock held): the footer erased before, drawn after.
pub fn write_around(out: &mut impl Write, text: &str) {
    let mut f = footer();
    f.erase(out);
    let _ = out.write_all(text.as_bytes());
    if let Some(last) = text.chars().last() {
        f.at_line_start = last == '\n';
    }
    f.draw(out);
    let _ = out.flush();
}

/// Redraws the footer after a change (the console lock is taken here).
fn redraw(change: impl FnOnce(&mut Footer)) {
    let _console = super::console();
    let mut out = std::io::stdout().lock();
    let mut f = footer();
    f.erase(&mut out);
    change(&mut f);
    f.draw(&mut out);
    let _ = out.flush();
}

/// Sets (or clears) the spinner's part.
pub fn set_spinner(text: Option<Line>) {
    redraw(|f| f.spinner = text);
}

/// Sets (or clears) the typed-ahead part.
pub fn set_queued(text: Option<Line>) {
    redraw(|f| f.queued = text);
}

/// The footer held off the screen while the guard lives (an approval question is on screen).
#[derive(Debug)]
pub struct Held(());

/// Erases the footer and keeps it off until the guard is dropped. Takes no console lock: the
/// caller (the asker) holds it already.
pub fn hold() -> Held {
    let mut out = std::io::stdout().lock();
    let mut f = footer();
    f.erase(&mut out);
    f.held = true;
    let _ = out.flush();
    Held(())
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut f = footer();
        f.held = false;
        // The question left the cursor after the answer's line end: a line start.
        f.at_line_start = true;
    }
}
