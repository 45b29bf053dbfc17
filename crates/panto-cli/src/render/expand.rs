//! The last tool result in full. A long result is drawn as its first and last lines
//! ([`super::TurnView`]); Ctrl-O, at the prompt or while a turn runs, draws the whole of the last
//! one.

use std::sync::Mutex;

use super::Screen;

/// The last tool result drawn.
struct Last {
    name: String,
    text: String,
    is_error: bool,
    screen: Screen,
}

static LAST: Mutex<Option<Last>> = Mutex::new(None);

/// Keeps the result a tool call just returned, for [`show_last`].
pub(super) fn remember(screen: Screen, name: &str, text: &str, is_error: bool) {
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(Last {
        name: name.to_owned(),
        text: text.to_owned(),
        is_error,
        screen,
    });
}

/// Draws the last tool result in full: every line, neutralised, none cut (the terminal wraps a
/// long one). On `screen` when given (the prompt's), which also says when there is no result
/// yet; else on the screen the result was drawn on (a turn's).
pub fn show_last(screen: Option<&Screen>) {
    let (screen, out) = {
        let last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        let Some(last) = last.as_ref() else {
            if let Some(screen) = screen {
                screen.note(
                    &screen
                        .deco
                        .dim("(no tool result yet: Ctrl-O shows the last one in full)"),
                );
            }
            return;
        };
        let screen = screen.copied().unwrap_or(last.screen);
        (screen, in_full(&screen, last))
    };
    // One write, so a turn's output cannot land between its lines.
    screen.deco_raw(&out);
}

/// The lines [`show_last`] draws for `last`.
fn in_full(screen: &Screen, last: &Last) -> String {
    let deco = screen.deco;
    let count = last.text.lines().count();
    let mut out = deco.dim(&format!(
        "  ⤢ {} result in full ({count} line{}):",
        deco.safe(&last.name),
        if count == 1 { "" } else { "s" }
    ));
    out.push('\n');
    for line in last.text.lines() {
        let shown = format!("    {}", deco.safe(line));
        out.push_str(&if last.is_error {
            deco.red(&shown)
        } else {
            deco.dim(&shown)
        });
        out.push('\n');
    }
    out
}
