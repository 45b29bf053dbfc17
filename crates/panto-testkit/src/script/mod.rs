//! Scripted streams that look exactly like what the real APIs send.
//!
//! [`AnthropicScript`], [`OpenAiScript`] and [`ResponsesScript`] build a response body event by
//! event, [`Script`] the same reply in whichever style a test runs; the functions
//! here are shortcuts for the common shapes. All of them return the body bytes, ready for
//! [`Reply::sse`](crate::Reply::sse). Text is cut into word-sized deltas (a word with its leading
//! whitespace, at most 16 bytes, never inside a UTF-8 character) and JSON arguments into
//! fragments of 3 to 9 bytes that split keys and values, as the APIs do.
//!
//! [`build_named`] builds the same streams from a name and JSON arguments, for the `panto-mock`
//! binary's `{"builder": {"name": …, "args": …}}` replies.

mod anthropic;
mod any_style;
mod named;
mod openai;
mod responses;

pub use anthropic::AnthropicScript;
pub use any_style::Script;
pub use named::{build_named, BUILDERS};
pub use openai::OpenAiScript;
pub use responses::ResponsesScript;

/// `(id, name, input JSON)` of one tool call.
pub type ToolCallSpec<'a> = (&'a str, &'a str, &'a str);

/// An Anthropic stream with one text block.
pub fn anthropic_text(text: &str) -> Vec<u8> {
    AnthropicScript::new().text(text).build()
}

/// An Anthropic stream with one `tool_use` block per call (Anthropic's form of parallel tool
/// calls) and stop reason `tool_use`.
pub fn anthropic_tool_uses(calls: &[ToolCallSpec<'_>]) -> Vec<u8> {
    anthropic_text_and_tool_uses("", calls)
}

/// An Anthropic stream with a text block (left out when `text` is empty) followed by one
/// `tool_use` block per call.
pub fn anthropic_text_and_tool_uses(text: &str, calls: &[ToolCallSpec<'_>]) -> Vec<u8> {
    let mut script = AnthropicScript::new();
    if !text.is_empty() {
        script = script.text(text);
    }
    for (id, name, input) in calls {
        script = script.tool_use(id, name, input);
    }
    script.build()
}

/// An Anthropic stream with a thinking block (thinking deltas, then its signature) and a text
/// block.
pub fn anthropic_thinking(thinking: &str, signature: &str, text: &str) -> Vec<u8> {
    AnthropicScript::new().thinking(thinking, signature).text(text).build()
}

/// `message_start` followed by `event: error` with an `overloaded_error` and nothing else: the
/// API failing before any content was streamed (retryable). For an error after some content use
/// [`AnthropicScript::error`].
pub fn anthropic_overloaded_mid_stream() -> Vec<u8> {
    AnthropicScript::new().error("overloaded_error", "Overloaded").build()
}

/// An Anthropic stream with one text block of exactly `n` word deltas (for benchmarks).
pub fn anthropic_text_deltas(n: usize) -> Vec<u8> {
    AnthropicScript::new().text_deltas(numbered_words(n)).build()
}

/// An OpenAI stream with content only.
pub fn openai_text(text: &str) -> Vec<u8> {
    OpenAiScript::new().text(text).build()
}

/// An OpenAI stream with one tool call per entry (`(id, name, arguments JSON)`) and finish reason
/// `tool_calls`.
pub fn openai_tool_calls(calls: &[ToolCallSpec<'_>]) -> Vec<u8> {
    openai_text_and_tool_calls("", calls)
}

/// An OpenAI stream with content (left out when `text` is empty) followed by tool calls.
pub fn openai_text_and_tool_calls(text: &str, calls: &[ToolCallSpec<'_>]) -> Vec<u8> {
    let mut script = OpenAiScript::new();
    if !text.is_empty() {
        script = script.text(text);
    }
    for (id, name, arguments) in calls {
        script = script.tool_call(id, name, arguments);
    }
    script.build()
}

/// An OpenAI-compatible stream with `reasoning_content` deltas, then content.
pub fn openai_reasoning(reasoning: &str, text: &str) -> Vec<u8> {
    OpenAiScript::new().reasoning(reasoning).text(text).build()
}

/// A Responses API stream with one message item.
pub fn responses_text(text: &str) -> Vec<u8> {
    ResponsesScript::new().text(text).build()
}

/// A Responses API stream with one function call item per entry (`(call_id, name, arguments
/// JSON)`), after a reasoning item when `reasoning` is `Some((summary, encrypted_content))`.
pub fn responses_tool_calls(reasoning: Option<(&str, &str)>, calls: &[ToolCallSpec<'_>]) -> Vec<u8> {
    let mut script = ResponsesScript::new();
    if let Some((summary, encrypted)) = reasoning {
        script = script.reasoning(&[summary], encrypted);
    }
    for (id, name, arguments) in calls {
        script = script.tool_call(id, name, arguments);
    }
    script.build()
}

/// An OpenAI stream with exactly `n` content deltas (for benchmarks).
pub fn openai_text_deltas(n: usize) -> Vec<u8> {
    OpenAiScript::new().text_deltas(numbered_words(n)).build()
}

/// `n` short words, each but the first with a leading space; deterministic.
pub fn numbered_words(n: usize) -> Vec<String> {
    const WORDS: [&str; 16] = [
        "The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "and", "keeps", "on", "running", "past",
        "every", "tree",
    ];
    (0..n)
        .map(|i| {
            let word = WORDS[i % WORDS.len()];
            if i == 0 {
                word.to_owned()
            } else {
                format!(" {word}")
            }
        })
        .collect()
}

/// The largest delta [`text_deltas`] produces.
const MAX_DELTA: usize = 16;

/// Cuts text into word-sized deltas: each starts at a run of whitespace (or the start) and holds
/// the word after it; words longer than 16 bytes are cut at character boundaries. The deltas
/// concatenate to `text`.
pub fn text_deltas(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                words.push(&text[start..i]);
                start = i;
                in_word = false;
            }
        } else {
            in_word = true;
        }
    }
    if start < text.len() {
        words.push(&text[start..]);
    }
    words.into_iter().flat_map(|w| split_bytes(w, &[MAX_DELTA])).collect()
}

/// Cuts JSON text into the short fragments the APIs stream tool input in. The fragments
/// concatenate to `json`.
pub fn json_fragments(json: &str) -> Vec<String> {
    split_bytes(json, &[7, 3, 9, 5])
}

/// Splits `s` into pieces of at most `sizes[i % len]` bytes (at least one character each), never
/// inside a character.
fn split_bytes(s: &str, sizes: &[usize]) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for c in s.chars() {
        let limit = sizes[pieces.len() % sizes.len()];
        if !current.is_empty() && current.len() + c.len_utf8() > limit {
            pieces.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// One SSE event with an `event:` line, terminated by a blank line.
fn write_event(out: &mut String, event: &str, data: &str) {
    out.push_str("event: ");
    out.push_str(event);
    out.push_str("\ndata: ");
    out.push_str(data);
    out.push_str("\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_concatenate_to_the_text_and_stay_small() {
        for text in [
            "Hello there!",
            "  lead\n\nand trail  ",
            "ünïcödé🎉 averyveryverylongwordwithoutspaces",
            "",
        ] {
            let deltas = text_deltas(text);
            assert_eq!(deltas.concat(), text);
            assert!(
                deltas.iter().all(|d| !d.is_empty() && d.len() <= MAX_DELTA),
                "{deltas:?}"
            );
        }
        assert_eq!(text_deltas("Hello there!"), vec!["Hello", " there!"]);
    }

    #[test]
    fn json_fragments_split_keys() {
        let json = r#"{"location": "Paris, France"}"#;
        let fragments = json_fragments(json);
        assert_eq!(fragments.concat(), json);
        assert!(fragments.len() >= 4);
        assert_eq!(fragments[0], r#"{"locat"#);
    }

    #[test]
    fn numbered_words_are_exactly_n() {
        let words = numbered_words(40);
        assert_eq!(words.len(), 40);
        assert!(!words[0].starts_with(' ') && words[1].starts_with(' '));
    }
}
