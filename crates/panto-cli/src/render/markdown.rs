//! Markdown rendered while it streams.
//!
//! Text arrives in arbitrary pieces; it is cut into lines, and each complete line is drawn
//! ([`super::blocks`]) as soon as it arrives: a heading, a paragraph line, a list item, a quote
//! line, a line of fenced code (highlighted). Only a table waits, for its last row, since its
//! columns are as wide as their widest cell (and a paragraph line holding a `|`, for the next
//! line, which says whether it was a table's header). Nothing waits for the whole answer; the
//! unfinished last line is drawn for good by [`MarkdownStream::finish`], and meanwhile
//! [`MarkdownStream::preview`] renders it (and a waiting table) as it stands, for the live rows
//! of the footer. Fenced code goes between rules, its lines neither prefixed nor broken.
//!
//! The width is given with every piece, so a resized terminal is used from the next block on.

use super::blocks::{self, code_line, code_rule};
use super::highlight::CodeHighlighter;
use super::wrap::{paint, Line, Span};

/// What kind of block is being gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Paragraph,
    /// A heading or a thematic break: never continued.
    Heading,
    /// A list item indented by this many spaces (nested under the item above).
    Item(usize),
    /// A line continuing a list item, its text this many spaces in.
    ItemText(usize),
    Quote,
    Table,
}

impl Kind {
    /// Whether a block of this kind, drawn right after one of kind `last`, continues it (no
    /// blank line between). `blank` says whether a blank source line came between them.
    fn continues(self, last: Kind, blank: bool) -> bool {
        match (last, self) {
            (Kind::Item(_) | Kind::ItemText(_), Kind::Item(_)) => true,
            (Kind::Item(_) | Kind::ItemText(_), Kind::ItemText(_)) => !blank,
            (Kind::Paragraph, Kind::Paragraph) | (Kind::Quote, Kind::Quote) => !blank,
            _ => false,
        }
    }
}

/// An open code fence.
#[derive(Debug)]
struct Fence {
    marker: char,
    len: usize,
    info: String,
    highlighter: CodeHighlighter,
}

impl Clone for Fence {
    /// A copy whose highlighter starts afresh (a grammar's state cannot be copied): good for a
    /// preview of the line being written, which is drawn again, highlighted, once complete.
    fn clone(&self) -> Fence {
        Fence {
            marker: self.marker,
            len: self.len,
            info: self.info.clone(),
            highlighter: CodeHighlighter::new(&self.info),
        }
    }
}

/// The streaming Markdown renderer of one answer.
#[derive(Debug, Clone)]
pub struct MarkdownStream {
    colour: bool,
    /// The line being received.
    partial: String,
    /// The block being gathered: its kind and source lines.
    block: Option<(Kind, Vec<String>)>,
    fence: Option<Fence>,
    /// Whether anything was drawn yet (blocks after the first are separated by a blank line).
    drawn: bool,
    /// The kind of the last block drawn (list items follow each other without a blank line).
    last: Option<Kind>,
    /// Whether a blank line came since the last block was drawn.
    blank: bool,
    /// The width of the last list item's marker (`- ` 2, `10. ` 4).
    item_marker: usize,
}

/// Deeper indentation of a list item is drawn as this much.
const MAX_ITEM_INDENT: usize = 16;

/// The most of an unfinished line a preview renders (its end): a line is rendered again with
/// every piece, and the screen shows only its last rows anyway.
const PREVIEW_BYTES: usize = 8 * 1024;

impl MarkdownStream {
    /// A renderer; `colour` says whether styles are emitted.
    pub fn new(colour: bool) -> MarkdownStream {
        MarkdownStream {
            colour,
            partial: String::new(),
            block: None,
            fence: None,
            drawn: false,
            last: None,
            blank: false,
            item_marker: 0,
        }
    }

    /// Takes the next piece of (neutralised) text; returns what can be drawn now, at `columns`.
    pub fn push(&mut self, piece: &str, columns: usize) -> String {
        self.partial.push_str(piece);
        let mut out = String::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.line(line.trim_end_matches('\n'), columns, &mut out);
        }
        out
    }

    /// Draws everything still held: the unfinished last line and block.
    pub fn finish(&mut self, columns: usize) -> String {
        self.end(columns, true)
    }

    /// [`MarkdownStream::finish`]; an open code block gets its closing rule if `close` says so.
    fn end(&mut self, columns: usize, close: bool) -> String {
        let mut out = String::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, columns, &mut out);
        }
        self.flush(columns, &mut out);
        // The next text block starts afresh (after a tool call, say).
        if self.fence.take().is_some() && close {
            self.write(vec![code_rule(None, columns)], &mut out);
        }
        self.drawn = false;
        self.last = None;
        out
    }

    /// The unfinished line (and a table waiting for its end) as it would be drawn if the answer
    /// ended now, as rows without line ends; empty when nothing is held. Changes nothing: what
    /// is drawn for good comes from [`MarkdownStream::push`] and [`MarkdownStream::finish`].
    pub fn preview(&self, columns: usize) -> Vec<String> {
        if self.partial.is_empty() && self.block.is_none() {
            return Vec::new();
        }
        let mut ahead = self.clone();
        if ahead.partial.len() > PREVIEW_BYTES {
            let mut from = ahead.partial.len() - PREVIEW_BYTES;
            while !ahead.partial.is_char_boundary(from) {
                from += 1;
            }
            ahead.partial.drain(..from);
        }
        // An open code block is still open: its closing rule comes with its closing fence.
        let drawn = ahead.end(columns, false);
        drawn
            .strip_suffix('\n')
            .unwrap_or(&drawn)
            .split('\n')
            .map(str::to_owned)
            .collect()
    }

    fn write(&mut self, lines: Vec<Line>, out: &mut String) {
        for line in lines {
            out.push_str(&paint(&line, self.colour));
            out.push('\n');
        }
    }

    /// Starts a block of `kind` on screen: a blank line first unless it continues the last one.
    fn separate(&mut self, kind: Option<Kind>, out: &mut String) {
        let continues = match (self.last, kind) {
            (Some(last), Some(kind)) => kind.continues(last, self.blank),
            _ => false,
        };
        if self.drawn && !continues {
            out.push('\n');
        }
        self.drawn = true;
        self.last = kind;
        self.blank = false;
    }

    /// Draws the gathered block.
    fn flush(&mut self, columns: usize, out: &mut String) {
        let Some((kind, lines)) = self.block.take() else {
            return;
        };
        let source = lines.join("\n");
        let indent = match kind {
            Kind::Item(spaces) | Kind::ItemText(spaces) => " ".repeat(spaces),
            _ => String::new(),
        };
        let drawn = blocks::render(&source, columns.saturating_sub(indent.len()));
        if drawn.is_empty() {
            return;
        }
        self.separate(Some(kind), out);
        let drawn = drawn
            .into_iter()
            .map(|line| {
                let mut full = vec![Span::plain(indent.clone())];
                full.extend(line);
                full
            })
            .collect();
        self.write(drawn, out);
    }

    fn line(&mut self, line: &str, columns: usize, out: &mut String) {
        if let Some(fence) = self.fence.as_mut() {
            if closes(line, fence.marker, fence.len) {
                self.fence = None;
                self.write(vec![code_rule(None, columns)], out);
                return;
            }
            let line = code_line(&mut fence.highlighter, line);
            self.write(vec![line], out);
            return;
        }
        if let Some((marker, len, info)) = opens_fence(line) {
            self.flush(columns, out);
            self.separate(None, out);
            self.write(vec![code_rule(Some(info), columns)], out);
            self.fence = Some(Fence {
                marker,
                len,
                info: info.to_owned(),
                highlighter: CodeHighlighter::new(info),
            });
            return;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() {
            self.flush(columns, out);
            self.blank = true;
            return;
        }
        let current = self.block.as_ref().map(|(k, _)| *k);
        if is_heading(trimmed) || is_rule(trimmed) {
            self.flush(columns, out);
            self.block = Some((Kind::Heading, vec![trimmed.to_owned()]));
            self.flush(columns, out);
            return;
        }
        if trimmed.starts_with('|') || (current == Some(Kind::Table) && trimmed.contains('|')) {
            if current != Some(Kind::Table) {
                self.flush(columns, out);
            }
            self.gather(Kind::Table, trimmed);
            return;
        }
        if is_delimiter_row(trimmed) {
            // A table without outer pipes: its header was taken for a paragraph line.
            if let Some((kind @ Kind::Paragraph, lines)) = self.block.as_mut() {
                if lines.len() == 1 {
                    *kind = Kind::Table;
                    lines.push(trimmed.to_owned());
                    return;
                }
            }
        }
        // Everything else is drawn as soon as its line is complete: an item, a quote line, a
        // paragraph line (joined to the block above it on screen as in the source).
        self.flush(columns, out);
        let kind = if is_item(trimmed) {
            Kind::Item(indent.min(MAX_ITEM_INDENT))
        } else if trimmed.starts_with('>') {
            Kind::Quote
        } else if let (Some(Kind::Item(at) | Kind::ItemText(at)), false) = (self.last, self.blank) {
            // A line continuing a list item: under the item's text.
            let marker = match self.last {
                Some(Kind::Item(_)) => self.item_marker,
                _ => 0,
            };
            Kind::ItemText((at + marker).min(MAX_ITEM_INDENT))
        } else if trimmed.contains('|') && current.is_none() {
            // Perhaps the header of a table without outer pipes: the next line tells.
            self.gather(Kind::Paragraph, trimmed);
            return;
        } else {
            Kind::Paragraph
        };
        if let Kind::Item(_) = kind {
            self.item_marker = marker_width(trimmed);
        }
        self.block = Some((kind, vec![trimmed.to_owned()]));
        self.flush(columns, out);
    }

    fn gather(&mut self, kind: Kind, line: &str) {
        match self.block.as_mut() {
            Some((k, lines)) if *k == kind => lines.push(line.to_owned()),
            _ => self.block = Some((kind, vec![line.to_owned()])),
        }
    }
}

/// A fence opening: its character, length and info string.
fn opens_fence(line: &str) -> Option<(char, usize, &str)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    let info = trimmed[len..].trim();
    (len >= 3 && !(marker == '`' && info.contains('`'))).then_some((marker, len, info))
}

/// Whether `line` closes a fence of `marker` × `len`.
fn closes(line: &str, marker: char, len: usize) -> bool {
    let trimmed = line.trim();
    let run = trimmed.chars().take_while(|c| *c == marker).count();
    run >= len && run == trimmed.chars().count()
}

fn is_heading(trimmed: &str) -> bool {
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes) && trimmed[hashes..].chars().next().is_none_or(|c| c == ' ')
}

fn is_rule(trimmed: &str) -> bool {
    let compact: String = trimmed.chars().filter(|c| *c != ' ').collect();
    compact.len() >= 3 && ['-', '*', '_'].iter().any(|m| compact.chars().all(|c| c == *m))
}

/// The width of a list item's marker with its space.
fn marker_width(trimmed: &str) -> usize {
    trimmed.find(' ').map_or(trimmed.len(), |i| i + 1)
}

fn is_item(trimmed: &str) -> bool {
    if let Some(rest) = trimmed.strip_prefix(['-', '*', '+']) {
        return rest.is_empty() || rest.starts_with(' ');
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    (1..=9).contains(&digits)
        && trimmed[digits..]
            .strip_prefix(['.', ')'])
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
}

/// `---|:---:` and the like: the second line of a table.
fn is_delimiter_row(trimmed: &str) -> bool {
    trimmed.contains('|') && trimmed.contains('-') && trimmed.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(pieces: &[&str], columns: usize) -> String {
        let mut md = MarkdownStream::new(false);
        let mut out = String::new();
        for p in pieces {
            out.push_str(&md.push(p, columns));
        }
        out.push_str(&md.finish(columns));
        out
    }

    const ANSWER: &str = "# Plan\n\nThe **three** steps:\n\n1. read\n2. change\n\n| step | tool |\n|------|------|\n| one | `read` |\n\n```rust\nfn main() {}\n```\nDone.";

    #[test]
    fn an_answer_renders_without_markup() {
        let out = plain(&[ANSWER], 60);
        assert_eq!(
            out,
            format!(
                "Plan\n\nThe three steps:\n\n1. read\n2. change\n\nstep │ tool\n─────┼─────\none  │ read\n\n── rust {}\nfn main() {{}}\n{}\n\nDone.\n",
                "─".repeat(52),
                "─".repeat(60)
            )
        );
    }

    #[test]
    fn pieces_give_the_same_screen_as_the_whole() {
        let pieces: Vec<String> = ANSWER.chars().map(String::from).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(plain(&pieces, 60), plain(&[ANSWER], 60));
    }

    #[test]
    fn a_line_is_drawn_when_it_is_complete() {
        let mut md = MarkdownStream::new(false);
        assert_eq!(md.push("```sh\nls -l", 40), format!("── sh {}\n", "─".repeat(34)));
        assert_eq!(md.push("a\n", 40), "ls -la\n");
        assert_eq!(md.push("```\n# Title\n", 40), format!("{}\n\nTitle\n", "─".repeat(40)));
        assert_eq!(md.push("para", 40), "");
        assert_eq!(md.push("graph\nnext ", 40), "\nparagraph\n");
        assert_eq!(md.push("line\n- item\n", 40), "next line\n\n• item\n");
        assert_eq!(md.push("  more\n\nafter\n", 40), "  more\n\nafter\n");
        assert_eq!(md.finish(40), "");
    }

    #[test]
    fn the_unfinished_line_is_previewed_as_it_will_be_drawn() {
        let mut md = MarkdownStream::new(false);
        assert!(md.preview(20).is_empty());
        assert_eq!(md.push("# Title\nSome **bold", 20), "Title\n");
        assert_eq!(md.preview(20), ["", "Some **bold"]);
        assert_eq!(md.push("** words that wrap", 20), "");
        assert_eq!(md.preview(20), ["", "Some bold words that", "wrap"]);
        // The preview changed nothing: the line is drawn in full once complete.
        assert_eq!(md.push("\n", 20), "\nSome bold words that\nwrap\n");
        assert!(md.preview(20).is_empty());
        assert_eq!(md.push("```\nlet x", 20), format!("\n{}\n", "─".repeat(20)));
        assert_eq!(md.preview(20), ["let x"]);
    }

    #[test]
    fn code_lines_are_drawn_as_they_are_between_rules() {
        let long = format!("    let text = \"{}\"; // the end", "x".repeat(40));
        let out = plain(&[&format!("```\n{long}\n\tindented\n```\nafter")], 30);
        // Nothing before a line of code, and no line broken: the terminal wraps a long one.
        assert_eq!(
            out,
            format!(
                "{}\n{long}\n    indented\n{}\n\nafter\n",
                "─".repeat(30),
                "─".repeat(30)
            )
        );
        // An answer that ends inside a code block still closes it.
        assert_eq!(plain(&["```py\nx = 1"], 12), "── py ──────\nx = 1\n────────────\n");
    }

    #[test]
    fn tables_without_outer_pipes_are_tables() {
        assert_eq!(plain(&["a | b\n--|--\n1 | 2\n"], 40), "a │ b\n──┼──\n1 │ 2\n");
    }
}
