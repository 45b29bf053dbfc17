//! `panto sessions export`: one session as a readable transcript or as JSON lines.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use panto_core::wire::strip_userinfo;
use panto_core::{ContentBlock, Conversation, Role, SessionInfo, SystemMode, ToolResultContent};

use crate::exit::Failure;
use crate::store::OpenStore;

/// How `sessions export` writes a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A readable transcript.
    Markdown,
    /// One JSON message per line, as the model sees the conversation.
    Jsonl,
}

/// `panto sessions export ID`.
pub async fn export_command(store: &OpenStore, id: &str, format: ExportFormat) -> Result<ExitCode, Failure> {
    let session = store.resolve(id).await?;
    let conversation = session.load().await?;
    let text = match format {
        ExportFormat::Markdown => markdown(&session.info, &conversation),
        ExportFormat::Jsonl => jsonl(&conversation)?,
    };
    let stdout = std::io::stdout();
    let text = match (stdout.is_terminal(), format) {
        (false, _) => std::borrow::Cow::Borrowed(text.as_str()),
        (true, ExportFormat::Markdown) => crate::safe::neutralise(&text),
        (true, ExportFormat::Jsonl) => crate::safe::json_for_terminal(&text),
    };
    let mut out = stdout.lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// One JSON message per line.
fn jsonl(conversation: &Conversation) -> Result<String, Failure> {
    let mut out = String::new();
    for m in &conversation.messages {
        let line = serde_json::to_string(m).map_err(|e| Failure::runtime(format!("cannot encode a message: {e}")))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// A fenced block that no backtick run inside `text` can close early.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// A readable transcript.
fn markdown(info: &SessionInfo, conversation: &Conversation) -> String {
    let mut out = format!("# Session {}\n\n", info.id);
    out.push_str(&format!("- created: {}\n", info.created.to_rfc3339()));
    if let Some(w) = &info.wire {
        // A session recorded before panto stripped credentials may still hold them.
        out.push_str(&format!(
            "- model: {} ({}, {})\n",
            w.model,
            w.api_style,
            strip_userinfo(&w.base_url)
        ));
    }
    out.push_str(&format!("- messages: {}\n", conversation.messages.len()));
    for message in &conversation.messages {
        let heading = match message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
        };
        let is_tool_results = message
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        out.push_str(&format!(
            "\n## {}\n\n",
            if is_tool_results && message.role == Role::User {
                "Tool results"
            } else {
                heading
            }
        ));
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => {
                    out.push_str(text.trim_end());
                    out.push_str("\n\n");
                }
                ContentBlock::Thinking { thinking, .. } => {
                    for line in thinking.lines() {
                        out.push_str(&format!("> {line}\n"));
                    }
                    out.push('\n');
                }
                ContentBlock::RedactedThinking { .. } => out.push_str("> (redacted thinking)\n\n"),
                // Encrypted, and its summary is the thinking block before it.
                ContentBlock::Reasoning { .. } => {}
                ContentBlock::ToolUse { name, input, .. } => {
                    out.push_str(&format!("**{name}**\n\n"));
                    let args = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
                    out.push_str(&fenced(&args, "json"));
                    out.push('\n');
                }
                ContentBlock::ToolResult { content, is_error, .. } => {
                    if *is_error {
                        out.push_str("**error**\n\n");
                    }
                    for part in content {
                        match part {
                            ToolResultContent::Text { text } => out.push_str(&fenced(text, "")),
                            ToolResultContent::Image { media_type, .. } => {
                                out.push_str(&format!("(image, {media_type})\n"))
                            }
                        }
                    }
                    out.push('\n');
                }
                ContentBlock::System { text, mode } => {
                    let label = match mode {
                        SystemMode::Append => "system prompt (added)",
                        SystemMode::Replace => "system prompt (replaced)",
                    };
                    out.push_str(&format!("*{label}*\n\n"));
                    for line in text.lines() {
                        out.push_str(&format!("> {line}\n"));
                    }
                    out.push('\n');
                }
                ContentBlock::CompactionSummary { summary } => {
                    out.push_str("*summary of earlier conversation*\n\n");
                    out.push_str(summary.trim_end());
                    out.push_str("\n\n");
                }
                ContentBlock::Image { media_type, .. } => out.push_str(&format!("(image, {media_type})\n\n")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sessions::test_info as info;

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fenced("a", ""), "```\na\n```\n");
        assert!(fenced("x ```` y", "").starts_with("`````\n"));
    }

    #[test]
    fn markdown_has_roles_tools_and_results() {
        let mut c = Conversation::new();
        c.add_system_message("be brief");
        c.add_user_message("list files");
        c.add_assistant_message(
            vec![ContentBlock::ToolUse {
                id: "t".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}),
            }],
            None,
        );
        c.messages.push(panto_core::Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "t".into(),
                content: vec![ToolResultContent::Text { text: "a.txt".into() }],
                is_error: false,
            }],
        ));
        let md = markdown(&info("0190"), &c);
        for needle in [
            "# Session 0190",
            "## System",
            "> be brief",
            "## User",
            "list files",
            "**bash**",
            "\"command\": \"ls\"",
            "## Tool results",
            "a.txt",
        ] {
            assert!(md.contains(needle), "{needle} missing in\n{md}");
        }
        let lines = jsonl(&c).unwrap();
        assert_eq!(lines.lines().count(), 4);
        let back: panto_core::Message = serde_json::from_str(lines.lines().nth(1).unwrap()).unwrap();
        assert_eq!(back, c.messages[1]);
    }

    #[test]
    fn credentials_in_a_recorded_base_url_are_not_exported() {
        let old = crate::sessions::test_info_with_credentials();
        let exported = markdown(&old, &Conversation::default());
        assert!(exported.contains("(openai-chat, http://proxy:8080/v1)"), "{exported}");
        assert!(!exported.contains("pw-secret"), "{exported}");
    }
}
