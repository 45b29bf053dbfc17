//! The model's Markdown as a user sees it in the REPL: rendered on a terminal (no `**`, no
//! backtick fences, no `|---|`), wrapped at the terminal's width without splitting words, drawn
//! while it streams, and laid out the same without colour under `NO_COLOR`; left as it came in
//! print mode, on a pipe and with `TERM=dumb`.
//! Screens are snapshots (`snapshots/`), at 100 and 60 columns.

use panto_testkit::script::{self, AnthropicScript};
use panto_testkit::{Chunking, MockServer, Reply};

use super::screen::Terminal;
use super::support::{blocking, Home};

/// An answer with a heading, emphasis, a list, a table, a Rust code block and a link.
pub const ANSWER: &str = r#"# Reading a config file

The loader does **three** things, in this *order*, and the `Settings` type holds the result of all of them once they are done:

1. reads the file named by `--config` or `PANTO_CONFIG`
2. merges the environment over it
   - keys from the environment win
3. checks every model alias against the providers that are configured

| step | where | fails with |
|------|:-----:|-----------:|
| read | `config/file.rs` | a line and column |
| merge | `config/mod.rs` | never |
| check | `config/model.rs` | the alias that is unknown to every provider |

```rust
fn load(path: &Path) -> Result<Settings, ConfigError> {
    let text = std::fs::read_to_string(path)?; // the whole file
    parse(&text)
}
```

> Note: a missing file is not an error unless it was named explicitly.

See [the config docs](https://example.test/config) for the keys."#;

/// The rows of the transcript from the prompt line `> {prompt}` up to (not including) the
/// status line that ends the turn, trailing blank rows dropped.
fn answer_rows(shown: &str, prompt: &str) -> String {
    let start = shown
        .find(&format!("> {prompt}\n"))
        .unwrap_or_else(|| panic!("the prompt is not on screen:\n{shown}"));
    let after = &shown[start..];
    // The status line is the first with a ` · ` separator (the answer has none).
    let rows: Vec<&str> = after.lines().take_while(|l| !l.contains(" · ")).collect();
    assert!(
        rows.len() < after.lines().count(),
        "no status line after the answer:\n{after}"
    );
    rows.join("\n").trim_end().to_owned()
}

/// Runs one turn answering `ANSWER` on a `cols`-wide terminal; returns the transcript.
async fn rendered_at(cols: u16) -> String {
    let server = MockServer::start().await;
    server.push(Reply::sse(
        AnthropicScript::new().text_deltas(script::text_deltas(ANSWER)).build(),
    ));
    let mut home = Home::new();
    home.anthropic(&server);
    blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 60, cols);
        t.wait_for_prompt();
        t.send_line("how is the config read?");
        t.wait_for("keys.");
        t.wait_for_prompt();
        let shown = t.wait_for("keys.");
        t.requests().assert_none();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        shown
    })
    .await
}

/// The lines of the answer's code block.
fn code_of_answer() -> Vec<&'static str> {
    let start = ANSWER.find("```rust\n").expect("a code block") + "```rust\n".len();
    let end = start + ANSWER[start..].find("```").expect("its end");
    ANSWER[start..end].lines().collect()
}

/// Each line of the answer's code is a row of its own (wrapped rows joined) holding exactly
/// the line: nothing before it (no gutter), not broken (the terminal wraps it), so a selection
/// copies the code as it is.
fn assert_code_copies(rows: &str) {
    let shown: Vec<&str> = rows.lines().collect();
    for line in code_of_answer() {
        assert!(shown.contains(&line), "{line:?} is not a row of its own:\n{rows}");
    }
}

/// The checks "Done means" names, on the rows of a rendered answer `cols` wide.
fn assert_rendered(rows: &str, cols: usize) {
    for markup in ["**", "```", "|---", "|-", "# Reading", "](http"] {
        assert!(!rows.contains(markup), "{markup:?} is on screen:\n{rows}");
    }
    assert_code_copies(rows);
    let code = code_of_answer();
    for row in rows.lines().filter(|row| !code.contains(row)) {
        assert!(
            // The answer is ASCII and box-drawing characters: one column each.
            row.chars().count() <= cols,
            "a row wider than {cols} columns (the terminal wrapped it):\n{row}\n{rows}"
        );
    }
    // Every word of the answer's prose is on screen whole: none was split across rows.
    let words: Vec<&str> = rows.split_whitespace().collect();
    for word in [
        "loader",
        "environment",
        "configured",
        "explicitly",
        "providers",
        "result",
    ] {
        assert!(
            words
                .iter()
                .any(|w| w.trim_matches(|c: char| !c.is_alphanumeric()) == word),
            "{word:?} was split:\n{rows}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_markdown_answer_renders_at_100_columns() {
    let rows = answer_rows(&rendered_at(100).await, "how is the config read?");
    assert_rendered(&rows, 100);
    insta::assert_snapshot!("markdown_answer_100_columns", rows);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_markdown_answer_renders_at_60_columns() {
    let rows = answer_rows(&rendered_at(60).await, "how is the config read?");
    assert_rendered(&rows, 60);
    insta::assert_snapshot!("markdown_answer_60_columns", rows);
}

#[tokio::test(flavor = "multi_thread")]
async fn markdown_is_drawn_while_it_streams() {
    let server = MockServer::start().await;
    // The stream stalls inside the code block: what came before is on screen already.
    let stream = AnthropicScript::new().text_deltas(script::text_deltas(ANSWER)).build();
    let text = String::from_utf8(stream.clone()).unwrap();
    let at = text.find("parse(").unwrap();
    let cut = at + text[at..].find("\n\n").unwrap() + 2;
    server.push(Reply::sse(stream).stall_after(cut));
    let mut home = Home::new();
    home.anthropic(&server);
    let shown = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 60, 80);
        t.wait_for_prompt();
        t.send_line("go");
        // The code line before the stall, highlighted: the table above it is drawn too.
        let shown = t.wait_for("the whole file");
        t.send("\x03");
        t.wait_for("cancelled");
        t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        shown
    })
    .await;
    assert!(shown.contains("merge │  config/mod.rs  │"), "{shown}");
    assert!(!shown.contains("|---"), "{shown}");
}

/// The offset in `stream` just after the SSE event holding `needle`.
fn after_event(stream: &[u8], needle: &str) -> usize {
    let text = String::from_utf8_lossy(stream);
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not in the stream"));
    at + text[at..].find("\n\n").expect("the event ends") + 2
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paragraph_shows_while_it_streams_and_the_spinner_while_nothing_does() {
    let server = MockServer::start().await;
    // A text block has started but nothing is written yet: the spinner goes on counting.
    let started = AnthropicScript::new().text_deltas(["never shown"]).build();
    let cut = after_event(&started, "content_block_start");
    server.push(Reply::sse(started).stall_after(cut));
    // Text, then a tool call whose arguments are still streaming: the spinner is back.
    let calling = AnthropicScript::new()
        .text("I will write the file.")
        .tool_use("toolu_01", "write", r#"{"path":"a.txt","content":"never complete"}"#)
        .build();
    let cut = after_event(&calling, "\"tool_use\"");
    server.push(Reply::sse(calling).stall_after(cut));
    // One paragraph, a word at a time, paced, that stops in its middle: its line never ends.
    let words: Vec<String> = (0..200)
        .map(|i| format!("{}word{i}", if i == 0 { "" } else { " " }))
        .collect();
    let paragraph = AnthropicScript::new().text_deltas(words).build();
    let cut = after_event(&paragraph, "word120\"");
    server.push(
        Reply::sse(paragraph)
            .chunking(Chunking::Fixed(64))
            .delay(std::time::Duration::from_millis(2))
            .stall_after(cut),
    );
    let mut home = Home::new();
    home.anthropic(&server);
    let shown = blocking(move || {
        let mut t = Terminal::start_sized(&home, &[], 30, 60);
        t.wait_for_prompt();
        t.send_line("start");
        // Two seconds after the block started, the spinner is still there.
        t.wait_for("waiting for the model… 2s");
        t.send("\x03");
        t.wait_for("cancelled");
        t.wait_for_prompt();
        t.send_line("call");
        t.wait_until("the spinner under the text", |shown| {
            shown
                .split("I will write the file.\n")
                .nth(1)
                .is_some_and(|after| after.contains("waiting for the model… 1s"))
        });
        t.send("\x03");
        t.wait_for("cancelled");
        t.wait_for_prompt();
        t.send_line("write");
        // The line being written is on screen, wrapped at the width, before it is complete.
        let shown = t.wait_for("word120");
        t.send("\x03");
        t.wait_for("cancelled");
        t.wait_for_prompt();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        shown
    })
    .await;
    let rows = answer_rows_to(&shown, "write", "word120");
    assert!(rows.starts_with("> write\nword0 word1 word2"), "{rows}");
    for row in rows.lines() {
        assert!(row.chars().count() <= 60, "a row wider than the terminal:\n{rows}");
    }
    let words: Vec<&str> = rows.split_whitespace().skip(2).collect();
    let expected: Vec<String> = (0..=120).map(|i| format!("word{i}")).collect();
    assert_eq!(words, expected, "every word once, whole, in order:\n{rows}");
}

/// The rows of the transcript from the prompt line `> {prompt}` to the row holding `last`.
fn answer_rows_to(shown: &str, prompt: &str, last: &str) -> String {
    let start = shown
        .rfind(&format!("> {prompt}\n"))
        .unwrap_or_else(|| panic!("the prompt is not on screen:\n{shown}"));
    let after = &shown[start..];
    let end = after
        .find(last)
        .unwrap_or_else(|| panic!("{last:?} is not on screen:\n{after}"));
    let end = end + after[end..].find('\n').unwrap_or(after.len() - end);
    after[..end].to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_color_keeps_the_layout_without_a_colour() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text(ANSWER)));
    let mut home = Home::new();
    home.anthropic(&server);
    let (shown, styled) = blocking(move || {
        let mut t = Terminal::start_with_env(&home, &[], 60, 60, &[("NO_COLOR", "1")]);
        t.wait_for_prompt();
        t.send_line("how is the config read?");
        t.wait_for("keys.");
        t.wait_for_prompt();
        let shown = t.wait_for("keys.");
        let styled = t.styled_cells();
        t.send_line("/quit");
        assert_eq!(t.wait_exit().code, Some(0));
        (shown, styled)
    })
    .await;
    // Laid out as with colour: wrapped, the table drawn, code set apart by rules, no markup.
    let rows = answer_rows(&shown, "how is the config read?");
    assert_rendered(&rows, 60);
    assert!(rows.contains("merge │  config/mod.rs  │"), "{rows}");
    assert!(rows.contains("\n── rust ──"), "{rows}");
    assert!(rows.contains("\n1. reads the file named by --config"), "{rows}");
    // And not a cell in a colour or a style.
    assert!(styled.is_empty(), "styled cells: {styled:?}\n{rows}");
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_text_on_a_dumb_terminal_and_in_print_mode() {
    let server = MockServer::start().await;
    for _ in 0..2 {
        server.push(Reply::sse(script::anthropic_text(ANSWER)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    // Print mode on a pipe: the model's Markdown, byte for byte.
    let run = home.run(&["-p", "go"], None).await;
    assert_eq!(run.stdout, format!("{ANSWER}\n"));
    // The REPL with TERM=dumb (a terminal that takes no escape sequences): the Markdown as it
    // came, unwrapped.
    let mut home = Home::new();
    home.anthropic(&server);
    let shown = blocking(move || {
        let mut t = Terminal::start_with_env(&home, &[], 60, 60, &[("TERM", "dumb")]);
        t.wait_for("new session");
        t.send_line("go");
        let shown = t.wait_for("keys.");
        t.wait_for_prompt();
        t.send("\x04");
        t.wait_exit();
        shown
    })
    .await;
    assert!(
        shown.contains("# Reading a config file") && shown.contains("|------|:-----:|"),
        "{shown}"
    );
}
