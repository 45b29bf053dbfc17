//! The footer: what sits under the output while a turn runs and is redrawn around every write:
//! the answer's line being written (the live rows, rendered as it will be once complete), then
//! one line holding the spinner (what panto is waiting for, for how long) and the keys typed
//! ahead ("queued: ...").
//!
//! The footer is drawn only when the cursor is at the start of a line. Each live row ends with a
//! line end and the last line has none, so erasing it (`CR`, up as many rows as were live, erase
//! to the end of the screen) puts the cursor back exactly where the output goes on. The live rows
//! are at most the screen's height less two, so the rows to erase are always on screen.
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
    /// The rows of the answer's unfinished line, painted, each without its line end.
    live: Vec<String>,
    /// How many live rows are on screen now.
    live_shown: usize,
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
    live: Vec::new(),
    live_shown: 0,
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
        let mut room = super::columns().saturating_sub(1).max(1);
        // Cut with `…` when it does not fit.
        let long = spans.iter().map(|s| width(&s.text)).sum::<usize>() > room;
        if long {
            room -= 1;
        }
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
        if long {
            let sgr = cut.last().map(|s| s.sgr.clone()).unwrap_or_default();
            push(&mut cut, "…", &sgr);
        }
        Some(paint(&cut, self.colour))
    }

    fn erase(&mut self, out: &mut impl Write) {
        if self.live_shown > 0 {
            let _ = write!(out, "\r\x1b[{}A\x1b[J", self.live_shown);
            self.live_shown = 0;
            self.shown = false;
        } else if self.shown {
            let _ = out.write_all(b"\r\x1b[K");
            self.shown = false;
        }
    }

    fn draw(&mut self, out: &mut impl Write) {
        if !self.enabled || self.held || !self.at_line_start {
            return;
        }
        // The rows that fit above the footer line, with one to spare; the first ones are the
        // ones left out (they would have scrolled off the screen anyway). A row wider than the
        // terminal (a line of code) takes as many screen rows as the terminal wraps it into.
        let room = super::rows().saturating_sub(2).max(1);
        let columns = super::columns();
        let mut from = self.live.len();
        let mut taken = 0;
        while from > 0 {
            let rows = screen_rows(&self.live[from - 1], columns);
            if taken + rows > room {
                break;
            }
            taken += rows;
            from -= 1;
        }
        for row in &self.live[from..] {
            let _ = out.write_all(row.as_bytes());
            let _ = out.write_all(b"\n");
        }
        self.live_shown = taken;
        if let Some(text) = self.text() {
            let _ = out.write_all(text.as_bytes());
            self.shown = true;
        }
    }
}

/// How many screen rows `painted` (text with SGR sequences) takes on a terminal `columns` wide.
fn screen_rows(painted: &str, columns: usize) -> usize {
    let mut visible = String::new();
    let mut chars = painted.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: parameters up to a final byte in `@`..=`~`.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) && c != '[' {
                    break;
                }
            }
        } else {
            visible.push(c);
        }
    }
    width(&visible).div_ceil(columns.max(1)).max(1)
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

/// Sets the live rows (painted, without line ends; empty for none), to be drawn from the next
/// write through [`write_around`] on (a write follows every change, so there is no redraw here).
pub fn set_live(rows: Vec<String>) {
    footer().live = rows;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_wider_than_the_terminal_takes_the_rows_it_wraps_into() {
        assert_eq!(screen_rows("", 10), 1);
        assert_eq!(screen_rows("\x1b[1;36mabcdefghij\x1b[0m", 10), 1);
        assert_eq!(screen_rows("\x1b[36mabcdefghijk\x1b[0m", 10), 2);
        assert_eq!(screen_rows("界界界界界界", 10), 2);
    }
}
