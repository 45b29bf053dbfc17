//! Syntax highlighting of fenced code, one line at a time (so code streams as it arrives).
//!
//! The grammars and theme are syntect's bundled ones, loaded once on the first code block. A
//! language syntect does not know is drawn in one colour.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::wrap::{push, Line};

/// The colour of code in a language without a grammar.
const PLAIN_CODE: &str = "36";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> &'static Theme {
    static THEME: OnceLock<Theme> = OnceLock::new();
    THEME.get_or_init(|| {
        let mut set = ThemeSet::load_defaults();
        set.themes
            .remove("base16-ocean.dark")
            .or_else(|| set.themes.into_values().next())
            .unwrap_or_default()
    })
}

/// Highlights the lines of one code block, keeping the grammar's state from line to line.
pub struct CodeHighlighter {
    lines: Option<HighlightLines<'static>>,
}

impl std::fmt::Debug for CodeHighlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeHighlighter")
            .field("known_language", &self.lines.is_some())
            .finish()
    }
}

impl CodeHighlighter {
    /// A highlighter for the fence's info string `info` (`rust`, `py`, `sh title="x"`).
    pub fn new(info: &str) -> CodeHighlighter {
        let token = info.split_whitespace().next().unwrap_or("");
        let lines = (!token.is_empty())
            .then(|| syntaxes().find_syntax_by_token(token))
            .flatten()
            .map(|syntax| HighlightLines::new(syntax, theme()));
        CodeHighlighter { lines }
    }

    /// One line of code (without its line end), as styled spans. Tabs become four spaces, so
    /// widths are known.
    pub fn line(&mut self, code: &str) -> Line {
        let code = code.replace('\t', "    ");
        let mut out = Line::new();
        let Some(lines) = self.lines.as_mut() else {
            push(&mut out, &code, PLAIN_CODE);
            return out;
        };
        let with_end = format!("{code}\n");
        match lines.highlight_line(&with_end, syntaxes()) {
            Ok(regions) => {
                for (style, text) in regions {
                    let text = text.trim_end_matches('\n');
                    let c = style.foreground;
                    let mut sgr = format!("38;2;{};{};{}", c.r, c.g, c.b);
                    if style.font_style.contains(FontStyle::BOLD) {
                        sgr.push_str(";1");
                    }
                    push(&mut out, text, &sgr);
                }
            }
            // A grammar that fails on this input: the line is still shown.
            Err(_) => push(&mut out, &code, PLAIN_CODE),
        }
        out
    }

    /// One line of code (without its line end) as pieces of text, each with its colour
    /// (`#rrggbb`) and whether it is bold; `None` for a language without a grammar (or a line
    /// the grammar fails on). For the HTML export, which escapes the text itself.
    pub fn colours(&mut self, code: &str) -> Option<Vec<(String, bool, String)>> {
        let lines = self.lines.as_mut()?;
        let with_end = format!("{code}\n");
        let regions = lines.highlight_line(&with_end, syntaxes()).ok()?;
        Some(
            regions
                .into_iter()
                .map(|(style, text)| {
                    let c = style.foreground;
                    (
                        format!("#{:02x}{:02x}{:02x}", c.r, c.g, c.b),
                        style.font_style.contains(FontStyle::BOLD),
                        text.trim_end_matches('\n').to_owned(),
                    )
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::wrap::line_text;

    #[test]
    fn rust_is_coloured_and_keeps_its_text() {
        let mut h = CodeHighlighter::new("rust");
        let line = h.line("fn main() { let x = \"hi\"; }");
        assert_eq!(line_text(&line), "fn main() { let x = \"hi\"; }");
        assert!(line.len() > 3, "several colours: {line:?}");
        let mut unknown = CodeHighlighter::new("no-such-language");
        assert_eq!(
            unknown.line("a\tb"),
            vec![super::super::wrap::Span::styled("a    b", PLAIN_CODE)]
        );
    }
}
