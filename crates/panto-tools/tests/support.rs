//! What the tests share: a built-in tool by name, and a call to it with its text result.

use std::sync::Arc;

use panto_core::{ResultPart, Tool, ToolCall, ToolCallResult};
use panto_tools::{Options, ToolName};

/// The built-in tool `name` as `options` configure it.
pub fn tool(options: &Options, name: ToolName) -> Arc<dyn Tool> {
    panto_tools::builtin(options)
        .unwrap()
        .into_iter()
        .find(|t| t.declaration().name == name.as_str())
        .unwrap()
}

/// Calls `tool` with `input`: whether the result is an error, and its text parts joined.
pub async fn call(tool: &dyn Tool, input: serde_json::Value) -> (bool, String) {
    let call = ToolCall::new("t1", tool.declaration().name, input);
    let r = tool
        .call(call)
        .await
        .unwrap_or_else(|e| ToolCallResult::error(e.to_string()));
    let text = r
        .parts
        .iter()
        .filter_map(|p| match p {
            ResultPart::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    (r.is_error, text)
}
