//! Messages, provider identities and tools as the agent writes them: realistic values for every
//! field a store keeps.

use panto_core::wire::ProviderIdentity;
use panto_core::{
    ApiStyle, ContentBlock, Message, ReasoningEffort, Role, StopReason, SystemMode, ToolDecl, ToolResultContent, Usage,
};

/// A realistic Anthropic provider identity.
pub fn anthropic_wire() -> ProviderIdentity {
    ProviderIdentity {
        api_style: ApiStyle::AnthropicMessages,
        base_url: "https://api.anthropic.com".to_owned(),
        model: "claude-sonnet-4-5".to_owned(),
        reasoning: ReasoningEffort::Medium,
    }
}

/// A realistic OpenAI-compatible provider identity (a local llama.cpp server).
pub fn local_openai_wire() -> ProviderIdentity {
    ProviderIdentity {
        api_style: ApiStyle::OpenAiChat,
        base_url: "http://127.0.0.1:8080/v1".to_owned(),
        model: "qwen3-coder-30b".to_owned(),
        reasoning: ReasoningEffort::Off,
    }
}

/// The tools offered with every message: a realistic manifest of two tools.
pub fn tools() -> Vec<ToolDecl> {
    vec![
        ToolDecl {
            name: "read_file".to_owned(),
            description: "Read a UTF-8 text file and return its contents.".to_owned(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to the working directory"}},
                "required": ["path"]
            }),
        },
        ToolDecl {
            name: "bash".to_owned(),
            description: "Run a shell command and return its output.".to_owned(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout_ms": {"type": "integer", "minimum": 1}
                },
                "required": ["command"]
            }),
        },
    ]
}

/// A user message holding one text block.
pub fn user(text: &str) -> Message {
    Message::new(Role::User, vec![ContentBlock::text(text)])
}

/// An assistant message with usage and a stop reason, as a provider produces it.
pub fn assistant(blocks: Vec<ContentBlock>, stop_reason: StopReason) -> Message {
    let mut message = Message::new(Role::Assistant, blocks);
    message.usage = Some(Usage {
        input_tokens: 1_200,
        output_tokens: 85,
        cache_read_tokens: 3_400,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    });
    message.stop_reason = Some(stop_reason);
    message
}

/// An assistant message answering with one text block.
pub fn reply(text: &str) -> Message {
    assistant(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

/// A system message.
pub fn system(text: &str, mode: SystemMode) -> Message {
    Message::new(
        Role::System,
        vec![ContentBlock::System {
            text: text.to_owned(),
            mode,
        }],
    )
}

/// A user message holding only a tool result: what the agent appends after a tool call, and
/// the synthetic closer that resume appends for a call that never ran.
pub fn tool_result(tool_use_id: &str, text: &str, is_error: bool) -> Message {
    Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: tool_use_id.to_owned(),
            content: vec![ToolResultContent::Text { text: text.to_owned() }],
            is_error,
        }],
    )
}

/// A compaction summary message.
pub fn summary(text: &str) -> Message {
    Message::new(
        Role::User,
        vec![ContentBlock::CompactionSummary {
            summary: text.to_owned(),
        }],
    )
}

/// A 1×1 PNG, base64: a real image payload for image blocks.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
