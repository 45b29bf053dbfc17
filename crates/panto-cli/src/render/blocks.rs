//! One Markdown block (a paragraph, a heading, a list item, a quote, a table) drawn as terminal
//! lines: markup becomes style (no `**`, no backticks, no `|---|`), text is wrapped to the width
//! (code is not: it goes between rules, each line whole, so that it copies as it is).
//!
//! The source was neutralised before it got here ([`crate::safe`]), so text holds no control
//! characters; every escape sequence in the output is panto's own styling. Links are shown as
//! their text, underlined, followed by the address when it differs; no OSC 8 hyperlink is emitted.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::highlight::CodeHighlighter;
use super::table::{self, Table};
use super::wrap::{self, push, Line, Span};

/// Headings: bold and coloured; the first level also underlined.
const HEADING: &str = "1;35";
const HEADING_1: &str = "1;4;35";
const INLINE_CODE: &str = "36";
const LINK: &str = "4;34";
const DIM: &str = "2";
const BULLET: &str = "33";

/// The narrowest text column drawn, however deep the nesting.
const NARROWEST_TEXT: usize = 20;

/// A container adding a prefix to each line: a quote's bar, a list item's bullet.
#[derive(Debug)]
struct Container {
    /// The prefix of the container's first line.
    first: Span,
    /// The prefix of later lines.
    rest: Span,
    first_used: bool,
}

/// The renderer's state for one block.
#[derive(Debug, Default)]
struct Renderer {
    columns: usize,
    out: Vec<Line>,
    inline: Line,
    styles: Vec<&'static str>,
    containers: Vec<Container>,
    /// Open lists: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// Open links: their address and where their text starts in `inline`.
    links: Vec<(String, usize)>,
    table: Option<Table>,
    cell: Option<Line>,
    row: Option<Vec<Line>>,
    code: Option<(String, String)>,
    /// A paragraph ended: the next block inside this one starts after a blank line.
    gap: bool,
}

/// Draws `source` (one or more Markdown blocks) in `columns` columns.
pub fn render(source: &str, columns: usize) -> Vec<Line> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer {
        columns,
        ..Renderer::default()
    };
    for event in Parser::new_ext(source, options) {
        r.event(event);
    }
    r.flush();
    r.out
}

impl Renderer {
    fn sgr(&self) -> String {
        self.styles.join(";")
    }

    fn text(&mut self, text: &str) {
        let sgr = self.sgr();
        if let Some((_, code)) = self.code.as_mut() {
            code.push_str(text);
        } else if let Some(cell) = self.cell.as_mut() {
            push(cell, text, &sgr);
        } else {
            push(&mut self.inline, text, &sgr);
        }
    }

    fn styled(&mut self, text: &str, sgr: &str) {
        let mut style = self.sgr();
        if !style.is_empty() {
            style.push(';');
        }
        style.push_str(sgr);
        match self.cell.as_mut() {
            Some(cell) => push(cell, text, &style),
            None => push(&mut self.inline, text, &style),
        }
    }

    /// The prefix of the next line, and its width; marks every container's first line used.
    fn prefix(&mut self) -> Line {
        let mut line = Line::new();
        for c in &mut self.containers {
            let span = if c.first_used { &c.rest } else { &c.first };
            push(&mut line, &span.text, &span.sgr);
            c.first_used = true;
        }
        line
    }

    fn prefix_width(&self) -> usize {
        self.containers
            .iter()
            .map(|c| wrap::width(if c.first_used { &c.rest.text } else { &c.first.text }))
            .sum()
    }

    fn room(&self) -> usize {
        // Deep nesting on a narrow terminal: the text keeps a readable column and the prefixes
        // overflow, rather than one word per line.
        let narrowest = NARROWEST_TEXT.min(self.columns / 2).max(1);
        self.columns.saturating_sub(self.prefix_width()).max(narrowest)
    }

    /// Writes `lines` after the containers' prefixes.
    fn emit(&mut self, lines: Vec<Line>) {
        for line in lines {
            let mut full = self.prefix();
            full.extend(line);
            self.out.push(full);
        }
    }

    /// A blank line (with the prefixes of quotes) before the next block, when one is owed.
    fn before_block(&mut self) {
        if std::mem::take(&mut self.gap) && !self.out.is_empty() {
            let bar: Line = self
                .containers
                .iter()
                .map(|c| Span::styled(" ".repeat(wrap::width(&c.rest.text)), ""))
                .collect();
            self.out.push(bar);
        }
    }

    /// Wraps and writes the inline text gathered so far.
    fn flush(&mut self) {
        let inline = std::mem::take(&mut self.inline);
        if inline.iter().all(|s| s.text.trim().is_empty()) {
            return;
        }
        self.before_block();
        let lines = wrap::wrap(&inline, self.room());
        self.emit(lines);
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => self.styled(&t, INLINE_CODE),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.styled(&t, INLINE_CODE),
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.flush();
                let rule = "─".repeat(self.room().min(self.columns));
                self.emit(vec![vec![Span::styled(rule, DIM)]]);
            }
            Event::TaskListMarker(done) => self.text(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush(),
            Tag::Heading { level, .. } => {
                self.flush();
                self.styles
                    .push(if level == HeadingLevel::H1 { HEADING_1 } else { HEADING });
            }
            Tag::BlockQuote(_) => {
                self.flush();
                let bar = Span::styled("│ ", DIM);
                self.containers.push(Container {
                    first: bar.clone(),
                    rest: bar,
                    first_used: false,
                });
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.before_block();
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_owned(),
                };
                let rest = " ".repeat(wrap::width(&marker));
                self.containers.push(Container {
                    first: Span::styled(marker, BULLET),
                    rest: Span::plain(rest),
                    first_used: false,
                });
            }
            Tag::Emphasis => self.styles.push("3"),
            Tag::Strong => self.styles.push("1"),
            Tag::Strikethrough => self.styles.push("9"),
            Tag::Link { dest_url, .. } => {
                self.styles.push(LINK);
                self.links.push((dest_url.to_string(), self.inline.len()));
            }
            Tag::Image { dest_url, .. } => {
                self.styled("[image: ", DIM);
                self.links.push((dest_url.to_string(), self.inline.len()));
            }
            Tag::Table(alignments) => {
                self.flush();
                self.before_block();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => self.row = Some(Vec::new()),
            Tag::TableCell => self.cell = Some(Line::new()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some((info, code)) = self.code.take() {
                    let lines = code_lines(&info, &code, self.room());
                    self.emit(lines);
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.gap = true;
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
                // Items of a tight list follow each other directly.
                self.gap = false;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, from)) = self.links.pop() {
                    let text = wrap::line_text(&self.inline[from.min(self.inline.len())..]);
                    let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                    if !url.is_empty() && text != url && text != bare {
                        self.styled(&format!(" ({url})"), DIM);
                    }
                }
            }
            TagEnd::Image => {
                if let Some((url, _)) = self.links.pop() {
                    self.styled(&format!("] ({url})"), DIM);
                }
            }
            TagEnd::TableCell => {
                if let (Some(cell), Some(row)) = (self.cell.take(), self.row.as_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let (Some(row), Some(table)) = (self.row.take(), self.table.as_mut()) {
                    table.rows.push(row);
                    if tag == TagEnd::TableHead {
                        table.header_rows = table.rows.len();
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let lines = table::render(&table, self.room());
                    self.emit(lines);
                }
                self.gap = true;
            }
            _ => {}
        }
    }
}

/// A code block's lines, highlighted, between a rule above (with the language) and one below.
pub fn code_lines(info: &str, code: &str, columns: usize) -> Vec<Line> {
    let mut highlighter = CodeHighlighter::new(info);
    let mut out = vec![code_rule(Some(info), columns)];
    let body = code.strip_suffix('\n').unwrap_or(code);
    for source in body.split('\n') {
        out.push(code_line(&mut highlighter, source));
    }
    out.push(code_rule(None, columns));
    out
}

/// The rule above a code block (`── rust ────`, labelled with the language of the fence's
/// `info` when it names one) or below it (`info` is `None`), `columns` wide. Code is set apart by
/// these rules alone, so that a selection of its lines copies nothing but the code.
pub fn code_rule(info: Option<&str>, columns: usize) -> Line {
    let label = info.and_then(|i| i.split_whitespace().next()).unwrap_or("");
    let head = if label.is_empty() {
        String::new()
    } else {
        format!("── {label} ")
    };
    let rest = columns.saturating_sub(wrap::width(&head)).max(2);
    vec![Span::styled(format!("{head}{}", "─".repeat(rest)), DIM)]
}

/// One source line of code as one screen line, highlighted: nothing before it, and never
/// broken (a line wider than the terminal is left for the terminal to wrap), so that a
/// selection copies the code as it is.
pub fn code_line(highlighter: &mut CodeHighlighter, source: &str) -> Line {
    highlighter.line(source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::wrap::line_text;

    fn shown(source: &str, columns: usize) -> Vec<String> {
        render(source, columns).iter().map(|l| line_text(l)).collect()
    }

    #[test]
    fn markup_becomes_style() {
        let lines = render("Some **bold** and `code` and *it*.", 80);
        assert_eq!(line_text(&lines[0]), "Some bold and code and it.");
        assert!(lines[0].contains(&Span::styled("bold", "1")));
        assert!(lines[0].contains(&Span::styled("code", INLINE_CODE)));
    }

    #[test]
    fn headings_lists_and_quotes() {
        assert_eq!(shown("## Plan", 80), ["Plan"]);
        assert_eq!(shown("- one\n- two\n  - deep", 80), ["• one", "• two", "  • deep"]);
        assert_eq!(shown("3. three\n4. four", 80), ["3. three", "4. four"]);
        assert_eq!(
            shown("> quoted words here and there", 22),
            ["│ quoted words here", "│ and there"]
        );
    }

    #[test]
    fn list_items_wrap_under_their_text() {
        assert_eq!(
            shown("- a list item that is long", 14),
            ["• a list item", "  that is long"]
        );
    }

    #[test]
    fn links_show_their_address() {
        assert_eq!(
            shown("[docs](https://example.test/d)", 80),
            ["docs (https://example.test/d)"]
        );
        assert_eq!(shown("<https://example.test>", 80), ["https://example.test"]);
    }

    #[test]
    fn tables_have_no_pipes_or_dashes_left() {
        let lines = shown("| a | b |\n|---|:-:|\n| **x** | y |", 80);
        assert_eq!(lines, ["a │ b", "──┼──", "x │ y"]);
    }
}
