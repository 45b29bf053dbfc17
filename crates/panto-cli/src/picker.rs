//! Pickers: a list to choose from on the terminal; the `-r` picker of recent sessions to resume
//! uses it, and so does `/rewind` for the earlier prompts.
//!
//! On a terminal (stdin and stderr) the list is driven by keys: Up/Down (Ctrl-P/Ctrl-N, and k/j
//! while no filter is typed) move, typing filters the rows (a case-insensitive substring; in the
//! session picker, a filter of [`CONTENT_FILTER_CHARS`] characters or more also keeps the
//! sessions whose prompts and answers say it, found with the store's search), Enter picks, Esc
//! or Ctrl-C gives up. Each row is cut to the width, never wrapped, and the list
//! scrolls when it is longer than the screen. Without a terminal the rows are numbered and the
//! choice is read as a line.

use std::io::{IsTerminal, Write};

use panto_core::{CancellationToken, SessionInfo};

use crate::exit::Failure;
use crate::render::wrap::cut;
use crate::render::Style;
use crate::sessions::{table, StoredIds, RECENT};
use crate::terminal::{read_key, Key, KeyMode};

/// How long a filter must be before the session picker also matches sessions by what was said
/// in them: shorter ones would match nearly every session and cost a search per key.
pub const CONTENT_FILTER_CHARS: usize = 3;

/// What the session picker asks of the store for a filter: the ids of the sessions whose prompts
/// and answers say it.
pub type ContentSearch<'a> = &'a dyn Fn(&str) -> Vec<String>;

/// Which of `rows` a filter keeps besides those whose text holds it.
type RowSearch<'a> = &'a dyn Fn(&str) -> Vec<usize>;

/// The `-r` picker: the recent sessions of `infos` on stderr, the choice read from stdin; the ids
/// shown tell every stored session (`stored`) apart. With `content`, a filter also keeps the
/// sessions it returns for it.
pub fn pick(infos: &[SessionInfo], stored: &StoredIds, content: Option<ContentSearch<'_>>) -> Result<String, Failure> {
    if infos.is_empty() {
        return Err(Failure::usage("no sessions to resume"));
    }
    if !crate::terminal::stdin_is_tty() {
        return Err(Failure::usage(
            "-r without an id needs a terminal to pick on; pass the session id (see `panto sessions`)",
        ));
    }
    let shown = &infos[..infos.len().min(RECENT)];
    let rows = table(shown, stored);
    let by_content = |filter: &str| -> Vec<usize> {
        let Some(search) = content else { return Vec::new() };
        let ids = search(filter);
        (0..shown.len()).filter(|&i| ids.contains(&shown[i].id)).collect()
    };
    match choose_among(&rows, "resume which session?", Some(&by_content)) {
        Some(n) => Ok(shown[n].id.clone()),
        None => Err(Failure::usage("no session picked")),
    }
}

/// `rows` to choose from on stderr, the choice read from the terminal: the index of the row
/// picked, or `None` when the user gives up. `question` heads the list. The rows are
/// neutralised for the terminal.
pub fn choose(rows: &[String], question: &str) -> Option<usize> {
    choose_among(rows, question, None)
}

/// [`choose`], a filter also keeping the rows `content` finds for it.
fn choose_among(rows: &[String], question: &str, content: Option<RowSearch<'_>>) -> Option<usize> {
    if rows.is_empty() {
        return None;
    }
    if crate::terminal::stdin_is_tty() && std::io::stderr().is_terminal() {
        let style = Style::detect(true, &crate::config::Env::from_process());
        return choose_with_keys(rows, question, style, content);
    }
    choose_by_number(rows, question)
}

/// The rows numbered, and a number read as a line (an empty line or end of input gives up).
fn choose_by_number(rows: &[String], question: &str) -> Option<usize> {
    let stderr = std::io::stderr();
    let terminal = stderr.is_terminal();
    let mut err = stderr.lock();
    for (n, row) in rows.iter().enumerate() {
        let _ = writeln!(err, "{:>3}. {}", n + 1, crate::safe::for_stream(row, terminal));
    }
    loop {
        let _ = write!(err, "{question} [1-{}, empty to give up]: ", rows.len());
        let _ = err.flush();
        let line = crate::terminal::read_line(None)?;
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        match line.parse::<usize>() {
            Ok(n) if (1..=rows.len()).contains(&n) => return Some(n - 1),
            _ => {
                let _ = writeln!(err, "please type a number from 1 to {}", rows.len());
            }
        }
    }
}

/// Where a key-driven picker is: the filter typed, the rows it keeps, the one marked, and the
/// first one shown.
struct Picking<'a> {
    rows: &'a [String],
    /// The rows a filter keeps by what their sessions say (the session picker's).
    content: Option<RowSearch<'a>>,
    /// What `content` found, by filter, so that a filter typed back to is not searched again.
    found: std::collections::HashMap<String, Vec<usize>>,
    filter: String,
    /// Indices into `rows` of the rows the filter keeps, in order.
    matches: Vec<usize>,
    /// Index into `matches` of the marked row.
    marked: usize,
    /// Index into `matches` of the first row shown.
    top: usize,
}

impl std::fmt::Debug for Picking<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Picking")
            .field("filter", &self.filter)
            .field("matches", &self.matches)
            .field("marked", &self.marked)
            .field("top", &self.top)
            .field("content", &self.content.is_some())
            .finish()
    }
}

/// What a key did to a picker.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Stay,
    Picked(usize),
    GaveUp,
}

impl<'a> Picking<'a> {
    fn new(rows: &'a [String]) -> Self {
        Picking {
            rows,
            content: None,
            found: std::collections::HashMap::new(),
            filter: String::new(),
            matches: (0..rows.len()).collect(),
            marked: 0,
            top: 0,
        }
    }

    fn refilter(&mut self) {
        let wanted = self.filter.to_lowercase();
        let by_content: &[usize] = match self.content {
            Some(search) if self.filter.chars().count() >= CONTENT_FILTER_CHARS => self
                .found
                .entry(self.filter.clone())
                .or_insert_with(|| search(&self.filter)),
            _ => &[],
        };
        self.matches = (0..self.rows.len())
            .filter(|&i| self.rows[i].to_lowercase().contains(&wanted) || by_content.contains(&i))
            .collect();
        self.marked = 0;
        self.top = 0;
    }

    fn key(&mut self, key: Key) -> Step {
        match key {
            Key::Up | Key::Char('\u{10}') => self.marked = self.marked.saturating_sub(1),
            Key::Char('k') if self.filter.is_empty() => self.marked = self.marked.saturating_sub(1),
            Key::Down | Key::Char('\u{e}') => self.down(),
            Key::Char('j') if self.filter.is_empty() => self.down(),
            Key::Enter => {
                if let Some(&row) = self.matches.get(self.marked) {
                    return Step::Picked(row);
                }
            }
            Key::Esc | Key::Interrupt | Key::EndOfInput => return Step::GaveUp,
            Key::Backspace => {
                if self.filter.pop().is_some() {
                    self.refilter();
                }
            }
            Key::ClearLine => {
                self.filter.clear();
                self.refilter();
            }
            Key::Char(c) if !c.is_control() => {
                self.filter.push(c);
                self.refilter();
            }
            Key::Char(_) | Key::Other => {}
        }
        Step::Stay
    }

    fn down(&mut self) {
        if self.marked + 1 < self.matches.len() {
            self.marked += 1;
        }
    }

    /// The picker as drawn in `columns` columns with room for `height` rows of the list: the
    /// question and the filter (or how to use the picker), then the rows, each cut to the
    /// width; the marked one starts with `❯` and is drawn in reverse video.
    fn frame(&mut self, question: &str, style: Style, height: usize, columns: usize) -> Vec<String> {
        let room = columns.saturating_sub(1).max(1);
        let height = height.max(1);
        // The marked row stays in view.
        if self.marked < self.top {
            self.top = self.marked;
        } else if self.marked >= self.top + height {
            self.top = self.marked + 1 - height;
        }
        let count = if self.matches.len() > height {
            format!(" ({}/{})", self.marked + 1, self.matches.len())
        } else {
            String::new()
        };
        const HOW: &str = "↑↓ move · type to filter · Enter picks · Esc gives up";
        let filter = crate::safe::neutralise(&self.filter);
        let plain = format!("{question}{count} {}", if filter.is_empty() { HOW } else { &*filter });
        let head = if crate::render::wrap::width(&plain) > room {
            cut(&plain, room)
        } else if filter.is_empty() {
            format!("{question}{count} {}", style.dim(HOW))
        } else {
            plain
        };
        let mut lines = vec![head];
        if self.matches.is_empty() {
            lines.push(style.dim("  (no row matches)"));
        }
        for (at, &row) in self.matches.iter().enumerate().skip(self.top).take(height) {
            let text = crate::safe::neutralise(&self.rows[row]);
            if at == self.marked {
                lines.push(style.mark(&cut(&format!("❯ {text}"), room)));
            } else {
                lines.push(cut(&format!("  {text}"), room));
            }
        }
        lines
    }
}

/// The key-driven picker on stderr; the terminal takes keys one at a time while it is up.
fn choose_with_keys(rows: &[String], question: &str, style: Style, content: Option<RowSearch<'_>>) -> Option<usize> {
    let _keys = KeyMode::picking();
    let never = CancellationToken::new();
    let mut err = std::io::stderr().lock();
    let mut picking = Picking::new(rows);
    picking.content = content;
    // The cursor is hidden while the list is up, and back on however the picker ends.
    let _ = write!(err, "\x1b[?25l");
    let mut drawn = 0;
    let step = loop {
        let height = crate::render::rows().saturating_sub(2).clamp(1, rows.len());
        let lines = picking.frame(question, style, height, crate::render::columns());
        erase(&mut err, drawn);
        let _ = write!(err, "{}", lines.join("\r\n"));
        let _ = err.flush();
        drawn = lines.len();
        match read_key(&never).map_or(Step::GaveUp, |key| picking.key(key)) {
            Step::Stay => continue,
            done => break done,
        }
    };
    erase(&mut err, drawn);
    let _ = write!(err, "\x1b[?25h");
    let picked = match step {
        Step::Picked(row) => {
            let shown = cut(
                &format!("{question} {}", crate::safe::neutralise(&rows[row])),
                crate::render::columns().saturating_sub(1),
            );
            let _ = writeln!(err, "{shown}");
            Some(row)
        }
        _ => None,
    };
    let _ = err.flush();
    picked
}

/// Erases the `lines` rows the picker drew (the cursor on the last of them).
fn erase(err: &mut impl Write, lines: usize) {
    if lines > 1 {
        let _ = write!(err, "\r\x1b[{}A\x1b[J", lines - 1);
    } else if lines == 1 {
        let _ = write!(err, "\r\x1b[J");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("row {i}")).collect()
    }

    fn plain() -> Style {
        Style::detect(false, &crate::config::Env::from_pairs(&[]))
    }

    #[test]
    fn keys_move_filter_and_pick() {
        let rows = vec![
            "fix the parser".to_owned(),
            "Write docs".to_owned(),
            "parse args".to_owned(),
        ];
        let mut p = Picking::new(&rows);
        assert_eq!(p.key(Key::Down), Step::Stay);
        assert_eq!(p.key(Key::Char('j')), Step::Stay);
        assert_eq!(p.key(Key::Down), Step::Stay, "the last row stays marked");
        assert_eq!(p.key(Key::Char('k')), Step::Stay);
        assert_eq!(p.key(Key::Enter), Step::Picked(1));
        let mut p = Picking::new(&rows);
        for c in "PARS".chars() {
            p.key(Key::Char(c));
        }
        assert_eq!(p.matches, [0, 2]);
        // k is part of the filter once one is typed.
        p.key(Key::Char('k'));
        assert!(p.matches.is_empty());
        assert_eq!(p.key(Key::Enter), Step::Stay, "nothing to pick");
        p.key(Key::Backspace);
        p.key(Key::Down);
        assert_eq!(p.key(Key::Enter), Step::Picked(2));
        assert_eq!(Picking::new(&rows).key(Key::Esc), Step::GaveUp);
        assert_eq!(Picking::new(&rows).key(Key::Interrupt), Step::GaveUp);
    }

    #[test]
    fn a_filter_of_three_characters_also_keeps_rows_by_what_their_sessions_say() {
        let rows = vec!["fix the parser".to_owned(), "write docs".to_owned()];
        let asked = std::cell::RefCell::new(Vec::new());
        let said = |filter: &str| -> Vec<usize> {
            asked.borrow_mut().push(filter.to_owned());
            if "tokenizer".starts_with(&filter.to_lowercase()) {
                vec![1]
            } else {
                Vec::new()
            }
        };
        let mut p = Picking::new(&rows);
        p.content = Some(&said);
        p.key(Key::Char('t'));
        p.key(Key::Char('o'));
        assert_eq!(p.matches, Vec::<usize>::new(), "two characters match row text only");
        p.key(Key::Char('K'));
        assert_eq!(p.matches, [1], "the second session said it");
        p.key(Key::Backspace);
        p.key(Key::Char('K'));
        assert_eq!(p.matches, [1]);
        assert_eq!(*asked.borrow(), ["toK"], "searched once per filter");
        let mut p = Picking::new(&rows);
        p.content = Some(&said);
        for c in "pars".chars() {
            p.key(Key::Char(c));
        }
        assert_eq!(p.matches, [0], "row text still matches");
    }

    #[test]
    fn a_long_list_scrolls_and_rows_are_cut_to_the_width() {
        let mut rows = rows(10);
        rows[9] = format!("row 10 {}", "word ".repeat(20));
        let mut p = Picking::new(&rows);
        for _ in 0..9 {
            p.key(Key::Down);
        }
        let frame = p.frame("pick?", plain(), 3, 30);
        assert_eq!(frame[0], "pick? (10/10) ↑↓ move · type…");
        assert_eq!(&frame[1..3], ["  row 8", "  row 9"]);
        assert_eq!(frame[3], "❯ row 10 word word word word…");
        assert!(frame.iter().all(|l| crate::render::wrap::width(l) <= 29), "{frame:?}");
        p.key(Key::Up);
        p.key(Key::Up);
        p.key(Key::Up);
        let frame = p.frame("pick?", plain(), 3, 30);
        assert_eq!(&frame[1..], ["❯ row 7", "  row 8", "  row 9"]);
    }
}
