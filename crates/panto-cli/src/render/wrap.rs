//! Styled text and word wrap by display columns.
//!
//! A line on screen is a list of [`Span`]s (text and its SGR style). [`wrap`] breaks spans into
//! lines no wider than a given number of columns, at spaces, measuring each character by its
//! display width (a CJK character takes two columns, a combining mark none), so no word is split
//! across lines unless it is wider than a whole line by itself.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Span {
    /// The text (never holding control characters other than `\n`: it was neutralised or is
    /// panto's own).
    pub text: String,
    /// SGR parameters (`1` bold, `3;36` italic cyan); empty for plain text.
    pub sgr: String,
}

impl Span {
    /// Plain text.
    pub fn plain(text: impl Into<String>) -> Span {
        Span {
            text: text.into(),
            sgr: String::new(),
        }
    }

    /// Text in the style `sgr`.
    pub fn styled(text: impl Into<String>, sgr: impl Into<String>) -> Span {
        Span {
            text: text.into(),
            sgr: sgr.into(),
        }
    }
}

/// One line of spans.
pub type Line = Vec<Span>;

/// The display width of `text` in terminal columns.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// The display width of a line.
pub fn line_width(line: &[Span]) -> usize {
    line.iter().map(|s| width(&s.text)).sum()
}

/// The text of a line without styles.
pub fn line_text(line: &[Span]) -> String {
    line.iter().map(|s| s.text.as_str()).collect()
}

/// Appends `text` in style `sgr` to `line`, joining it to the last span when the style is the same.
pub fn push(line: &mut Line, text: &str, sgr: &str) {
    if text.is_empty() {
        return;
    }
    match line.last_mut() {
        Some(last) if last.sgr == sgr => last.text.push_str(text),
        _ => line.push(Span::styled(text, sgr)),
    }
}

/// What a piece of the input is.
enum Piece<'a> {
    Word(&'a str, &'a str),
    Space(&'a str, &'a str),
    Break,
}

/// Splits spans into words, runs of spaces and line breaks.
fn pieces(spans: &[Span]) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    for span in spans {
        let sgr = span.sgr.as_str();
        for (i, segment) in span.text.split('\n').enumerate() {
            if i > 0 {
                out.push(Piece::Break);
            }
            let mut rest = segment;
            while !rest.is_empty() {
                let space = rest.starts_with(' ');
                let end = rest.find(|c: char| (c == ' ') != space).unwrap_or(rest.len());
                let (run, tail) = rest.split_at(end);
                out.push(if space {
                    Piece::Space(run, sgr)
                } else {
                    Piece::Word(run, sgr)
                });
                rest = tail;
            }
        }
    }
    out
}

/// `parts` joined by `separator` in rows of at most `columns` columns: a row breaks between two
/// parts, never inside one (a part wider than a row gets a row of its own, as it is).
pub fn join_fitted(parts: &[String], separator: &str, columns: usize) -> String {
    let mut rows: Vec<String> = vec![String::new()];
    for part in parts {
        let row = rows.last_mut().expect("one row at least");
        if row.is_empty() {
            row.push_str(part);
        } else if width(row) + width(separator) + width(part) <= columns {
            row.push_str(separator);
            row.push_str(part);
        } else {
            rows.push(part.clone());
        }
    }
    rows.join("\n")
}

/// `label`, then `text` wrapped to `columns` columns in a column of its own that starts at
/// `indent` (a hanging indent: `--flag   what it does` with the rest of the description under
/// its start). A label as wide as the indent or wider is followed by one space. At least 20
/// columns are kept for the text, so a narrow terminal wraps it sooner rather than not at all.
pub fn labelled(label: &str, text: &str, indent: usize, columns: usize) -> Vec<String> {
    let room = columns.saturating_sub(indent).max(20);
    let pad = if !label.is_empty() && width(label) >= indent {
        1
    } else {
        indent - width(label)
    };
    wrap(&[Span::plain(text)], room)
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let text = line_text(line);
            if i == 0 {
                format!("{label}{}{text}", " ".repeat(pad))
            } else {
                format!("{}{text}", " ".repeat(indent))
            }
        })
        .collect()
}

/// `text` with each of its lines broken at spaces into rows of at most `columns` columns, a
/// row after the first indented as its line starts (its leading spaces). A line holding a word
/// too wide for a row is left whole, for the terminal to wrap: a long path or URL then stays
/// one line that can be copied whole.
pub fn fit_lines(text: &str, columns: usize) -> String {
    let fitted: Vec<String> = text
        .split('\n')
        .map(|line| {
            let body = line.trim_start_matches(' ');
            let indent = line.len() - body.len();
            let room = columns.saturating_sub(indent);
            if width(line) <= columns || body.split(' ').any(|word| width(word) > room) {
                return line.to_owned();
            }
            labelled("", body, indent, columns).join("\n")
        })
        .collect();
    fitted.join("\n")
}

/// [`fit_lines`] for text that carries its styles (SGR sequences, as [`super::Style`] paints
/// them): each line wider than `columns` is broken at spaces under its own start, its styles
/// kept. A line holding a word too wide for a row, or an escape sequence other than a style, is
/// left whole.
pub fn fit_styled(text: &str, columns: usize) -> String {
    // The styles in effect where a line starts: a style may span lines.
    let mut sgr = String::new();
    let fitted: Vec<String> = text
        .split('\n')
        .map(|line| {
            let Some(spans) = styled_spans(line, &mut sgr) else {
                sgr.clear();
                return line.to_owned();
            };
            if line_width(&spans) <= columns {
                return line.to_owned();
            }
            let plain = line_text(&spans);
            let body = plain.trim_start_matches(' ');
            let indent = plain.len() - body.len();
            let room = columns.saturating_sub(indent);
            if room == 0 || body.split(' ').any(|word| width(word) > room) {
                return line.to_owned();
            }
            // The indentation is written plain; the body keeps its styles.
            let mut skip = indent;
            let mut rest = Line::new();
            for span in &spans {
                let taken = span.text.len().min(skip);
                skip -= taken;
                push(&mut rest, &span.text[taken..], &span.sgr);
            }
            let pad = " ".repeat(indent);
            let mut rows = wrap(&rest, room)
                .iter()
                .map(|row| format!("{pad}{}", paint(row, true)))
                .collect::<Vec<_>>()
                .join("\n");
            // Painting ends each span with a reset: the styles the next line starts in go on.
            if !sgr.is_empty() {
                rows.push_str(&format!("\x1b[{sgr}m"));
            }
            rows
        })
        .collect();
    fitted.join("\n")
}

/// A painted line as spans, each with the styles set before it (since the last reset), starting
/// in the styles `sgr` and leaving there those in effect at its end; `None` when it holds an
/// escape sequence that is not a style.
fn styled_spans(line: &str, sgr: &mut String) -> Option<Line> {
    let mut spans = Line::new();
    let mut rest = line;
    while let Some(at) = rest.find('\x1b') {
        push(&mut spans, &rest[..at], sgr);
        let after = rest[at + 1..].strip_prefix('[')?;
        let end = after.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
        if !after[end..].starts_with('m') {
            return None;
        }
        let params = &after[..end];
        if params.is_empty() || params == "0" {
            sgr.clear();
        } else {
            if !sgr.is_empty() {
                sgr.push(';');
            }
            sgr.push_str(params);
        }
        rest = &after[end + 1..];
    }
    push(&mut spans, rest, sgr);
    Some(spans)
}

/// Text written a piece at a time (streamed thinking), broken at spaces to a width as it goes:
/// a word is written once it is complete (a space or a line end follows it, or the text ends),
/// on the current row when it fits, else on the next.
#[derive(Debug, Default)]
pub struct Flowing {
    /// The column the last write ended at.
    column: usize,
    /// The word being written, held back until it is complete.
    word: String,
    /// The spaces since the last word, written only if a word follows on the same row.
    spaces: String,
}

impl Flowing {
    /// What to write for `text`, in rows of at most `columns` columns.
    pub fn push(&mut self, text: &str, columns: usize) -> String {
        let mut out = String::new();
        for c in text.chars() {
            match c {
                '\n' => {
                    self.flush_word(&mut out, columns);
                    out.push('\n');
                    self.column = 0;
                    self.spaces.clear();
                }
                ' ' => {
                    self.flush_word(&mut out, columns);
                    self.spaces.push(' ');
                }
                c => self.word.push(c),
            }
        }
        out
    }

    /// The word held back, at the end of the text; the next text starts on a new row.
    pub fn finish(&mut self, columns: usize) -> String {
        let mut out = String::new();
        self.flush_word(&mut out, columns);
        self.spaces.clear();
        self.column = 0;
        out
    }

    fn flush_word(&mut self, out: &mut String, columns: usize) {
        if self.word.is_empty() {
            return;
        }
        let (gap, needed) = (width(&self.spaces), width(&self.word));
        if self.column > 0 && self.column + gap + needed > columns {
            out.push('\n');
            self.column = 0;
        } else {
            out.push_str(&self.spaces);
            self.column += gap;
        }
        self.spaces.clear();
        out.push_str(&self.word);
        self.column += needed;
        self.word.clear();
    }
}

/// `text` cut to at most `columns` columns, ending in `…` when cut (a table row whose last
/// column is a preview: cutting it keeps one row a line).
pub fn cut(text: &str, columns: usize) -> String {
    if width(text) <= columns {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > columns {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Breaks `spans` into lines of at most `columns` columns at spaces. Spaces at the start of the
/// text and after a hard line break are kept (indentation); spaces where a line was wrapped are
/// dropped, as are spaces at the end of a line. A word wider than a line is cut.
pub fn wrap(spans: &[Span], columns: usize) -> Vec<Line> {
    let columns = columns.max(1);
    let mut lines: Vec<Line> = Vec::new();
    let mut line: Line = Vec::new();
    let mut used = 0;
    // Spaces seen since the last word, written only if another word follows on this line.
    let mut spaces: Option<(&str, &str)> = None;
    let mut wrapped = false;
    for piece in pieces(spans) {
        match piece {
            Piece::Break => {
                lines.push(std::mem::take(&mut line));
                used = 0;
                spaces = None;
                wrapped = false;
            }
            Piece::Space(run, sgr) => {
                if !(wrapped && used == 0) {
                    spaces = Some((run, sgr));
                }
            }
            Piece::Word(word, sgr) => {
                let gap = spaces.map_or(0, |(s, _)| width(s));
                let needed = width(word);
                if used > 0 && used + gap + needed > columns {
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                    wrapped = true;
                } else if let Some((s, style)) = spaces {
                    // Leading indentation may itself be too wide: cut it to the line.
                    let s = if gap > columns { &s[..columns] } else { s };
                    push(&mut line, s, style);
                    used += width(s);
                }
                spaces = None;
                // A word wider than the room left on an empty line is cut where the line ends.
                let mut word = word;
                while used + width(word) > columns {
                    let room = columns - used;
                    let mut cut = 0;
                    let mut taken = 0;
                    for (i, c) in word.char_indices() {
                        let w = c.width().unwrap_or(0);
                        if taken + w > room {
                            break;
                        }
                        taken += w;
                        cut = i + c.len_utf8();
                    }
                    if cut == 0 && used == 0 {
                        // A character wider than the whole line: it goes on a line of its own.
                        cut = word.chars().next().map_or(word.len(), char::len_utf8);
                    }
                    push(&mut line, &word[..cut], sgr);
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                    wrapped = true;
                    word = &word[cut..];
                }
                push(&mut line, word, sgr);
                used += width(word);
            }
        }
    }
    lines.push(line);
    lines
}

/// A line as written to the terminal: each span in its style when `colour`, else its text alone.
pub fn paint(line: &[Span], colour: bool) -> String {
    let mut out = String::new();
    for span in line {
        if colour && !span.sgr.is_empty() {
            out.push_str(&format!("\x1b[{}m{}\x1b[0m", span.sgr, span.text));
        } else {
            out.push_str(&span.text);
        }
    }
    out
}

/// `line` padded with spaces to `columns` columns.
pub fn pad(mut line: Line, columns: usize) -> Line {
    let w = line_width(&line);
    if w < columns {
        line.push(Span::plain(" ".repeat(columns - w)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_row_ends_in_an_ellipsis_within_its_columns() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("日本語です", 5), "日本…");
        assert!(width(&cut("日本語です", 5)) <= 5);
    }

    #[test]
    fn fitted_lines_break_at_spaces_under_their_own_start_but_never_cut_a_long_word() {
        let text =
            "  read   Read a file — runs freely\n  bash   Run a shell command with `bash -c` in the working directory";
        assert_eq!(
            fit_lines(text, 40),
            "  read   Read a file — runs freely\n  bash   Run a shell command with `bash\n  -c` in the working directory"
        );
        let path = format!("cannot read /{}/config.toml: no such file", "deep/".repeat(20));
        assert_eq!(fit_lines(&path, 40), path);
    }

    #[test]
    fn styled_lines_break_at_spaces_under_their_start_and_keep_their_styles() {
        let line = "    \x1b[2mone two three\x1b[0m \x1b[31mfour\x1b[0m";
        assert_eq!(fit_styled(line, 40), line, "it fits");
        assert_eq!(
            fit_styled(line, 14),
            "    \x1b[2mone two\x1b[0m\n    \x1b[2mthree\x1b[0m \x1b[31mfour\x1b[0m"
        );
        let long_word = format!("\x1b[2m{}\x1b[0m and more", "x".repeat(30));
        assert_eq!(
            fit_styled(&long_word, 20),
            long_word,
            "a word wider than a row stays whole"
        );
        let cursor = "\x1b[2Kone two three four";
        assert_eq!(fit_styled(cursor, 10), cursor, "not only styles: left alone");
    }

    #[test]
    fn flowing_text_breaks_between_words_whatever_the_pieces() {
        let mut flow = Flowing::default();
        let mut out = String::new();
        for piece in ["the qu", "ick brown f", "ox jumps ", "over\nthe lazy dog"] {
            out.push_str(&flow.push(piece, 10));
        }
        out.push_str(&flow.finish(10));
        assert_eq!(out, "the quick\nbrown fox\njumps over\nthe lazy\ndog");
    }

    #[test]
    fn labelled_text_hangs_under_its_start_and_parts_break_only_between_each_other() {
        assert_eq!(
            labelled("  -x", "one two three four five six seven eight nine ten eleven", 8, 30),
            [
                "  -x    one two three four",
                "        five six seven eight",
                "        nine ten eleven"
            ]
        );
        assert_eq!(labelled("  --long-flag", "does it", 8, 30), ["  --long-flag does it"]);
        let parts = [
            "panto 0.1.0".to_owned(),
            "model x".to_owned(),
            "session 0123456789".to_owned(),
        ];
        assert_eq!(
            join_fitted(&parts, " · ", 80),
            "panto 0.1.0 · model x · session 0123456789"
        );
        assert_eq!(
            join_fitted(&parts, " · ", 30),
            "panto 0.1.0 · model x\nsession 0123456789"
        );
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| line_text(l)).collect()
    }

    #[test]
    fn words_are_never_split_when_they_fit() {
        let spans = [Span::plain("the quick brown fox jumps over the lazy dog")];
        assert_eq!(
            texts(&wrap(&spans, 10)),
            ["the quick", "brown fox", "jumps over", "the lazy", "dog"]
        );
    }

    #[test]
    fn styles_survive_wrapping_and_join() {
        let spans = [
            Span::plain("say "),
            Span::styled("very bold", "1"),
            Span::plain(" words"),
        ];
        let lines = wrap(&spans, 9);
        assert_eq!(texts(&lines), ["say very", "bold", "words"]);
        assert_eq!(lines[1], vec![Span::styled("bold", "1")]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let spans = [Span::plain("日本語 日本語")];
        assert_eq!(texts(&wrap(&spans, 7)), ["日本語", "日本語"]);
        // Too wide for a line: cut between characters, never inside one.
        assert_eq!(texts(&wrap(&[Span::plain("日本語")], 4)), ["日本", "語"]);
    }

    #[test]
    fn indentation_and_breaks_are_kept() {
        let spans = [Span::plain("    let x = 1;\n  y")];
        assert_eq!(texts(&wrap(&spans, 40)), ["    let x = 1;", "  y"]);
    }

    #[test]
    fn long_words_are_cut_at_the_line() {
        assert_eq!(
            texts(&wrap(&[Span::plain("abcdefgh ij")], 3)),
            ["abc", "def", "gh", "ij"]
        );
    }
}
