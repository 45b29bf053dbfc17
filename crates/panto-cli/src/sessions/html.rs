//! The HTML export: one self-contained page a browser can open safely whatever the model wrote.
//!
//! Every byte that came from the session goes through [`escape`]: `& < > " '` become entities,
//! so no tag or attribute can be opened by it, and control characters (terminal escapes, bells,
//! bidi overrides) are shown as visible symbols. Markdown is rendered by our own writer over
//! pulldown-cmark's events: raw HTML in it is shown as text, links are live only for `http`,
//! `https` and `mailto` (with `rel="noreferrer noopener"`), and the model's images are never
//! loaded (their address is shown instead). The only images are the conversation's own (PNG,
//! JPEG, GIF, WebP, checked by their first bytes), decoded and re-encoded here as `data:` URIs.
//! The page loads nothing (no external style, script or font) and carries a
//! Content-Security-Policy that forbids it all the same.

use base64::Engine;
use panto_core::pricing::PricingRegistry;
use panto_core::{ContentBlock, Role, SystemMode, ToolResultContent};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::export::{branch_point, facts, heading, totals, usage_line};
use super::history::{Entry, History};
use crate::render::CodeHighlighter;

/// The page's policy: nothing from anywhere, images only as `data:`, styles only inline.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'";

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1d1f21;background:#fff}\
header ul{color:#555;padding-left:1.2rem}\
section{border-top:1px solid #ddd;padding:.5rem 0}\
section h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.05em;color:#777;margin:.3rem 0}\
section.user h2{color:#2a6fb0}section.assistant h2{color:#2f8a3a}\
pre{background:#2b303b;color:#c0c5ce;padding:.6rem .8rem;overflow-x:auto;border-radius:4px;white-space:pre-wrap;word-break:break-word}\
code{font:13px/1.4 ui-monospace,monospace}\
:not(pre)>code{background:#f0f0f0;padding:0 .2rem;border-radius:3px}\
details{margin:.4rem 0;border:1px solid #ddd;border-radius:4px;padding:.2rem .6rem}\
summary{cursor:pointer;color:#444}summary code{background:none}\
.usage{color:#777;font-size:.85rem}.branch{color:#a05a00;font-style:italic}\
.ctl{color:#b00;background:#fee;border-radius:2px}\
.error{color:#b00}blockquote{color:#555;border-left:3px solid #ccc;margin-left:0;padding-left:1rem}\
img{max-width:100%}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem}";

/// How a control character or an invisible, text-reordering one is shown: its escape as text
/// (`\u{1b}` for ESC, `\u{7}` for BEL), readable in any font, never the character.
fn visible_control(c: char) -> Option<String> {
    let code = c as u32;
    match code {
        // C0 controls (but line end and tab), DEL, C1 controls (CSI and OSC as one character),
        // bidi marks, overrides and isolates, line and paragraph separators, the BOM.
        0x00..=0x08
        | 0x0b..=0x1f
        | 0x7f..=0x9f
        | 0x200e
        | 0x200f
        | 0x202a..=0x202e
        | 0x2066..=0x2069
        | 0x2028
        | 0x2029
        | 0xfeff => Some(format!("\\u{{{code:x}}}")),
        _ => None,
    }
}

/// `text` as HTML text or attribute value: the five special characters as entities, control
/// characters as visible symbols (in a `ctl` span), tabs and line ends kept.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c => match visible_control(c) {
                Some(shown) => out.push_str(&shown),
                None => out.push(c),
            },
        }
    }
    out
}

/// `text` as HTML text, its control characters marked so they stand out.
fn text(text: &str) -> String {
    if !text.chars().any(|c| visible_control(c).is_some()) {
        return escape(text);
    }
    let mut out = String::new();
    for c in text.chars() {
        let one = c.to_string();
        if visible_control(c).is_some() {
            out.push_str(&format!("<span class=\"ctl\">{}</span>", escape(&one)));
        } else {
            out.push_str(&escape(&one));
        }
    }
    out
}

/// Whether a link to `url` may be live: web and mail addresses only (no `javascript:`,
/// `data:`, `file:`, nor a relative address that would resolve against the file).
fn live_link(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:"))
        && !url.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// A block of code, highlighted by its fence's language, escaped.
fn code_block(info: &str, code: &str) -> String {
    let mut highlighter = CodeHighlighter::new(info);
    let mut out = String::from("<pre><code>");
    for (i, line) in code.trim_end_matches('\n').split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match highlighter.colours(line) {
            Some(pieces) => {
                for (colour, bold, piece) in pieces {
                    // The colour is ours (`#` and six hex digits); the text is escaped.
                    let weight = if bold { ";font-weight:bold" } else { "" };
                    out.push_str(&format!(
                        "<span style=\"color:{colour}{weight}\">{}</span>",
                        text(&piece)
                    ));
                }
            }
            None => out.push_str(&text(line)),
        }
    }
    out.push_str("</code></pre>\n");
    out
}

/// Markdown `source` as HTML, every byte of it escaped (see the module's documentation).
pub fn markdown(source: &str) -> String {
    let mut out = String::new();
    // What each open tag's end writes, in order.
    let mut closers: Vec<String> = Vec::new();
    // Inside a code block: its info string and text so far.
    let mut code: Option<(String, String)> = None;
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(source, options) {
        if let Some((_, body)) = code.as_mut() {
            match event {
                Event::End(TagEnd::CodeBlock) => {
                    let (info, body) = code.take().unwrap_or_default();
                    out.push_str(&code_block(&info, &body));
                }
                Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) | Event::Code(t) => body.push_str(&t),
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(tag) => {
                let (open, close) = match tag {
                    Tag::Paragraph => ("<p>".to_owned(), "</p>\n"),
                    Tag::Heading { level, .. } => {
                        // Below the page's own headings.
                        let n = match level {
                            HeadingLevel::H1 => 3,
                            HeadingLevel::H2 => 4,
                            HeadingLevel::H3 => 5,
                            _ => 6,
                        };
                        closers.push(format!("</h{n}>\n"));
                        out.push_str(&format!("<h{n}>"));
                        continue;
                    }
                    Tag::BlockQuote(_) => ("<blockquote>".to_owned(), "</blockquote>\n"),
                    Tag::CodeBlock(kind) => {
                        let info = match kind {
                            CodeBlockKind::Fenced(info) => info.to_string(),
                            CodeBlockKind::Indented => String::new(),
                        };
                        code = Some((info, String::new()));
                        continue;
                    }
                    // Raw HTML blocks: their text arrives as `Html` events, shown as text.
                    Tag::HtmlBlock => ("<pre class=\"html\">".to_owned(), "</pre>\n"),
                    Tag::List(Some(start)) => (format!("<ol start=\"{start}\">"), "</ol>\n"),
                    Tag::List(None) => ("<ul>".to_owned(), "</ul>\n"),
                    Tag::Item => ("<li>".to_owned(), "</li>\n"),
                    Tag::Table(_) => ("<table>".to_owned(), "</table>\n"),
                    Tag::TableHead => ("<thead><tr>".to_owned(), "</tr></thead>"),
                    Tag::TableRow => ("<tr>".to_owned(), "</tr>"),
                    Tag::TableCell => ("<td>".to_owned(), "</td>"),
                    Tag::Emphasis => ("<em>".to_owned(), "</em>"),
                    Tag::Strong => ("<strong>".to_owned(), "</strong>"),
                    Tag::Strikethrough => ("<del>".to_owned(), "</del>"),
                    Tag::Link { dest_url, .. } => {
                        if live_link(&dest_url) {
                            closers.push("</a>".to_owned());
                            out.push_str(&format!(
                                "<a href=\"{}\" rel=\"noreferrer noopener\">",
                                escape(dest_url.trim())
                            ));
                        } else {
                            // Not a link: the text, then the address as text.
                            closers.push(format!("</span> <code>({})</code>", text(&dest_url)));
                            out.push_str("<span class=\"link\">");
                        }
                        continue;
                    }
                    Tag::Image { dest_url, .. } => {
                        // Never loaded: the alt text and the address, as text (a web address as a link).
                        let address = if live_link(&dest_url) {
                            format!(
                                "<a href=\"{}\" rel=\"noreferrer noopener\">{}</a>",
                                escape(dest_url.trim()),
                                text(&dest_url)
                            )
                        } else {
                            format!("<code>{}</code>", text(&dest_url))
                        };
                        closers.push(format!("] ({address})</span>"));
                        out.push_str("<span class=\"image\">[image: ");
                        continue;
                    }
                    _ => (String::new(), ""),
                };
                out.push_str(&open);
                closers.push(close.to_owned());
            }
            Event::End(_) => {
                if let Some(close) = closers.pop() {
                    out.push_str(&close);
                }
            }
            Event::Text(t) => out.push_str(&text(&t)),
            Event::Code(t) => out.push_str(&format!("<code>{}</code>", text(&t))),
            Event::Html(t) | Event::InlineHtml(t) => out.push_str(&text(&t)),
            Event::InlineMath(t) | Event::DisplayMath(t) => out.push_str(&format!("<code>{}</code>", text(&t))),
            Event::FootnoteReference(t) => out.push_str(&format!("[{}]", text(&t))),
            Event::SoftBreak => out.push('\n'),
            Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
        }
    }
    // An unclosed code block (the parser closes everything else).
    if let Some((info, body)) = code {
        out.push_str(&code_block(&info, &body));
    }
    out
}

/// The first bytes each accepted image type starts with.
fn magic_matches(media_type: &str, bytes: &[u8]) -> bool {
    match media_type {
        "image/png" => bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

/// An image of the conversation, inline: only a type panto accepts whose bytes are that type,
/// decoded and encoded again here (so nothing but base64 reaches the attribute).
pub fn image(media_type: &str, data: &str) -> String {
    let engine = base64::engine::general_purpose::STANDARD;
    match engine.decode(data.trim()) {
        Ok(bytes) if magic_matches(media_type, &bytes) => format!(
            "<img alt=\"image ({})\" src=\"data:{};base64,{}\">\n",
            escape(media_type),
            media_type,
            engine.encode(&bytes)
        ),
        _ => format!(
            "<p class=\"note\">(an image, {}, that is not one panto shows)</p>\n",
            text(media_type)
        ),
    }
}

/// The first line of `s`, cut to `max` characters.
fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut cut: String = line.chars().take(max).collect();
    if line.chars().count() > max || s.trim().lines().count() > 1 {
        cut.push('…');
    }
    cut
}

fn block(out: &mut String, block: &ContentBlock) {
    match block {
        ContentBlock::Text { text } => out.push_str(&markdown(text)),
        ContentBlock::Thinking { thinking, .. } => out.push_str(&format!(
            "<details class=\"thinking\"><summary>Thinking</summary><blockquote>{}</blockquote></details>\n",
            markdown(thinking)
        )),
        ContentBlock::RedactedThinking { .. } => out.push_str("<p class=\"note\">(redacted thinking)</p>\n"),
        ContentBlock::Reasoning { .. } => {}
        ContentBlock::ToolUse { name, input, .. } => {
            let args = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
            out.push_str(&format!(
                "<details class=\"tool\"><summary>Tool call: <code>{}</code> {}</summary>{}</details>\n",
                text(name),
                text(&first_line(&input_summary(input), 80)),
                code_block("json", &args)
            ));
        }
        ContentBlock::ToolResult { content, is_error, .. } => {
            let first = content.iter().find_map(|p| match p {
                ToolResultContent::Text { text } => Some(first_line(text, 80)),
                ToolResultContent::Image { .. } => None,
            });
            out.push_str(&format!(
                "<details class=\"result\"><summary>{}{}</summary>",
                if *is_error {
                    "<span class=\"error\">Error</span>: "
                } else {
                    "Result: "
                },
                text(&first.unwrap_or_default())
            ));
            for part in content {
                match part {
                    ToolResultContent::Text { text: t } => out.push_str(&format!("<pre>{}</pre>\n", text(t))),
                    ToolResultContent::Image { media_type, data } => out.push_str(&image(media_type, data)),
                }
            }
            out.push_str("</details>\n");
        }
        ContentBlock::System { text: t, mode } => {
            let label = match mode {
                SystemMode::Append => "System prompt (added)",
                SystemMode::Replace => "System prompt (replaced)",
            };
            out.push_str(&format!(
                "<details class=\"system\"><summary>{label}</summary><pre>{}</pre></details>\n",
                text(t)
            ));
        }
        ContentBlock::CompactionSummary { summary } => out.push_str(&format!(
            "<p class=\"note\"><em>Summary of the earlier conversation:</em></p>\n{}",
            markdown(summary)
        )),
        ContentBlock::Image { media_type, data } => out.push_str(&image(media_type, data)),
    }
}

/// A tool input in one line: its `command`, `path` or `pattern` when it has one, else its JSON.
fn input_summary(input: &serde_json::Value) -> String {
    ["command", "path", "pattern", "url", "query"]
        .iter()
        .find_map(|k| input.get(k).and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| input.to_string())
}

fn class_of(entry: &Entry) -> &'static str {
    match entry.message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    }
}

/// The whole page.
pub fn page(history: &History, pricing: &PricingRegistry, all_branches: bool) -> String {
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n"
    ));
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>panto session {}</title>\n", escape(&history.id)));
    out.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n<header>\n"));
    out.push_str(&format!("<h1>Session {}</h1>\n<ul>\n", escape(&history.id)));
    for fact in facts(history, all_branches) {
        out.push_str(&format!("<li>{}</li>\n", text(&fact)));
    }
    out.push_str("</ul>\n</header>\n<main>\n");
    let mut previous: Option<&Entry> = None;
    for entry in &history.entries {
        if let Some(from) = branch_point(previous, entry) {
            out.push_str(&match from {
                Some(parent) => format!(
                    "<p class=\"branch\">Another branch, continuing after entry {}:</p>\n",
                    text(parent)
                ),
                None => "<p class=\"branch\">Another branch, from the start:</p>\n".to_owned(),
            });
        }
        previous = Some(entry);
        out.push_str(&format!(
            "<section class=\"{}\" id=\"entry-{}\">\n<h2>{}</h2>\n",
            class_of(entry),
            escape(&entry.id),
            heading(entry)
        ));
        for b in &entry.message.content {
            block(&mut out, b);
        }
        if entry.message.role == Role::Assistant {
            if let Some(line) = usage_line(entry, pricing) {
                out.push_str(&format!("<p class=\"usage\">{}</p>\n", text(&line)));
            }
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n");
    let (total, cost) = totals(history, pricing);
    if total != panto_core::Usage::default() {
        out.push_str(&format!(
            "<footer><p class=\"usage\">Total: {}</p></footer>\n",
            text(&crate::cost::summary_line(&total, cost))
        ));
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use panto_core::Message;

    use super::*;
    use crate::sessions::export::tests::{entry, history};

    /// What a hostile model writes: script, handlers, remote loads, `javascript:` links, raw
    /// HTML, terminal escapes (SGR, BEL, OSC 8 hyperlink) and a bidi override.
    pub(crate) const HOSTILE: &str = "<script>document.title='pwned'</script>\n\n\
        <img src=x onerror=\"document.title='pwned'\">\n\n\
        ![remote](http://127.0.0.1:9/track.png)\n\n\
        [click](javascript:document.title='pwned') and <a href=\"javascript:alert(1)\">raw</a>\n\n\
        \u{1b}[31mred\u{1b}[0m bell\u{7} \u{1b}]8;;http://127.0.0.1:9/osc\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{202e}evil\n\n\
        ```html\n<script>alert(1)</script>\n```\n";

    #[test]
    fn every_byte_of_the_model_is_escaped() {
        let page = page(
            &history(vec![entry(
                "a",
                None,
                Message::new(Role::Assistant, vec![ContentBlock::text(HOSTILE)]),
            )]),
            &PricingRegistry::new(),
            false,
        );
        let body = &page[page.find("<main>").unwrap()..];
        for forbidden in [
            "<script",
            "<img",
            "onerror=\"",
            "href=\"javascript",
            "src=\"http",
            "\u{1b}",
            "\u{7}",
            "\u{202e}",
        ] {
            assert!(!body.contains(forbidden), "{forbidden:?} got through:\n{body}");
        }
        for shown in [
            "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;",
            "&lt;img src=x onerror=",
            "<span class=\"ctl\">\\u{1b}</span>[31mred",
            "bell<span class=\"ctl\">\\u{7}</span>",
            "<span class=\"ctl\">\\u{1b}</span>]8;;http://127.0.0.1:9/osc",
            "<span class=\"ctl\">\\u{202e}</span>evil",
            "(javascript:document.title=&#39;pwned&#39;)",
            "[image: remote] (<a href=\"http://127.0.0.1:9/track.png\" rel=\"noreferrer noopener\">",
        ] {
            assert!(body.contains(shown), "{shown:?} missing:\n{body}");
        }
        assert!(page.contains(&format!("content=\"{CONTENT_SECURITY_POLICY}\"")));
        assert!(!page.contains("http-equiv=\"refresh\""));
    }

    #[test]
    fn images_inline_only_when_they_are_what_they_claim() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nrest");
        assert!(image("image/png", &png).contains("src=\"data:image/png;base64,"));
        // An SVG (script inside) or a mislabelled image is not shown.
        let svg = base64::engine::general_purpose::STANDARD.encode(b"<svg onload=alert(1)>");
        assert!(!image("image/svg+xml", &svg).contains("<img"));
        assert!(!image("image/png", &svg).contains("<img"));
        assert!(!image("image/png\" onerror=\"x", &png).contains("<img"));
        assert!(!image("image/png", "not base64 \" onerror=x").contains("<img"));
        // In a page: the prompt's image, inline.
        let prompt = Message::new(
            Role::User,
            vec![ContentBlock::Image {
                media_type: "image/png".into(),
                data: png.clone(),
            }],
        );
        let page = page(&history(vec![entry("a", None, prompt)]), &PricingRegistry::new(), false);
        assert!(page.contains(&format!("src=\"data:image/png;base64,{png}\"")), "{page}");
    }

    #[test]
    fn code_is_highlighted_and_links_are_inert_unless_web() {
        let html = markdown("```rust\nfn main() {}\n```\n[a](https://example.org/x) [b](file:///etc/passwd)");
        assert!(html.contains("<span style=\"color:#"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.org/x\" rel=\"noreferrer noopener\">a</a>"),
            "{html}"
        );
        assert!(!html.contains("href=\"file:"), "{html}");
    }
}
