//! An MCP `CallToolResult` as a panto tool result: text, images through panto's image pipeline,
//! resources and links as text, `structuredContent` when there is no text, `isError`, and the
//! built-in tools' output cap.

use base64::Engine;
use panto_core::{ResultPart, ToolCallResult};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Converts `result` from the server, capping its text at `max_text_bytes` in all.
pub(crate) fn convert(result: CallToolResult, max_text_bytes: usize) -> ToolCallResult {
    let mut parts = Vec::new();
    let mut has_text = false;
    for block in result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(ResultPart::Text(text.text));
            }
            ContentBlock::Image(image) => match base64::engine::general_purpose::STANDARD.decode(image.data.trim()) {
                Ok(bytes) => parts.push(ResultPart::Image(bytes)),
                Err(e) => parts.push(ResultPart::Text(format!(
                    "[an image ({}) the server sent is not valid base64: {e}]",
                    image.mime_type
                ))),
            },
            ContentBlock::Audio(audio) => parts.push(ResultPart::Text(format!(
                "[audio ({}, {} base64 characters) omitted: panto does not pass audio to models]",
                audio.mime_type,
                audio.data.len()
            ))),
            ContentBlock::Resource(embedded) => {
                has_text = true;
                parts.push(ResultPart::Text(match embedded.resource {
                    ResourceContents::TextResourceContents {
                        uri, mime_type, text, ..
                    } => {
                        format!("[resource {uri}{}]\n{text}", mime_note(mime_type.as_deref()))
                    }
                    ResourceContents::BlobResourceContents {
                        uri, mime_type, blob, ..
                    } => format!(
                        "[resource {uri}{}: {} base64 characters of binary data, not shown]",
                        mime_note(mime_type.as_deref()),
                        blob.len()
                    ),
                    other => format!(
                        "[resource contents of a kind panto does not know: {}]",
                        serde_json::to_string(&other)
                            .map(|s| panto_tools::cut_at(&s, 200).to_owned())
                            .unwrap_or_default()
                    ),
                }));
            }
            ContentBlock::ResourceLink(link) => {
                has_text = true;
                let mut text = format!("[resource link {} ({})", link.uri, link.name);
                if let Some(description) = &link.description {
                    text.push_str(": ");
                    text.push_str(description);
                }
                text.push(']');
                parts.push(ResultPart::Text(text));
            }
            // A kind of content newer than this client: said, not dropped silently.
            other => parts.push(ResultPart::Text(format!(
                "[content of a kind panto does not know: {}]",
                serde_json::to_string(&other)
                    .map(|s| panto_tools::cut_at(&s, 200).to_owned())
                    .unwrap_or_default()
            ))),
        }
    }
    if !has_text {
        if let Some(structured) = &result.structured_content {
            parts.push(ResultPart::Text(structured.to_string()));
        }
    }
    ToolCallResult {
        parts: cap(parts, max_text_bytes),
        is_error: result.is_error.unwrap_or(false),
    }
}

fn mime_note(mime: Option<&str>) -> String {
    mime.map(|m| format!(" ({m})")).unwrap_or_default()
}

/// Keeps at most `max_bytes` of text over all text parts, saying what was cut.
fn cap(parts: Vec<ResultPart>, max_bytes: usize) -> Vec<ResultPart> {
    let total: usize = parts
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.len(),
            _ => 0,
        })
        .sum();
    if total <= max_bytes {
        return parts;
    }
    let mut room = max_bytes;
    let mut out = Vec::with_capacity(parts.len() + 1);
    for part in parts {
        match part {
            ResultPart::Text(text) => {
                let kept = panto_tools::cut_at(&text, room);
                room -= kept.len();
                if !kept.is_empty() {
                    out.push(ResultPart::Text(kept.to_owned()));
                }
            }
            other => out.push(other),
        }
    }
    out.push(ResultPart::Text(format!(
        "\n[output truncated: {} of {total} bytes shown; MCP tool output is capped at {max_bytes} bytes]",
        max_bytes - room
    )));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(result: &ToolCallResult) -> String {
        result
            .parts
            .iter()
            .filter_map(|p| match p {
                ResultPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn structured_content_is_the_text_only_when_there_is_no_text() {
        let mut result = CallToolResult::structured(serde_json::json!({"n": 1}));
        result.content.clear();
        assert_eq!(texts(&convert(result, 100)), r#"{"n":1}"#);
        let mut result = CallToolResult::success(vec![ContentBlock::text("hello")]);
        result.structured_content = Some(serde_json::json!({"n": 1}));
        assert_eq!(texts(&convert(result, 100)), "hello");
    }

    #[test]
    fn long_text_is_capped_and_says_so() {
        let result = CallToolResult::error(vec![ContentBlock::text("é".repeat(100))]);
        let converted = convert(result, 51);
        assert!(converted.is_error);
        let text = texts(&converted);
        assert!(text.starts_with(&"é".repeat(25)), "{text}");
        assert!(text.contains("50 of 200 bytes shown"), "{text}");
    }

    #[test]
    fn images_are_decoded_and_bad_base64_is_explained() {
        let result = CallToolResult::success(vec![
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::image("!!", "image/png"),
        ]);
        let converted = convert(result, 100);
        assert_eq!(converted.parts[0], ResultPart::Image(b"hi".to_vec()));
        assert!(texts(&converted).contains("not valid base64"));
    }
}
