//! The rules of `POST /v1/messages`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{header, kind, non_empty_str, parse_object, require_json, require_stream, tool_name};

/// The content block types the mock knows. Anything else is refused so that a typo in panto's
/// encoder shows up in a test rather than against the real API.
const KNOWN_BLOCKS: &str = "text, image, document, tool_use, tool_result, thinking, redacted_thinking";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// What one message contributes to the tool-use pairing check.
#[derive(Debug)]
struct MessageInfo {
    role: Role,
    /// `tool_use` ids, in order.
    tool_uses: Vec<String>,
    /// `(block index, tool_use_id)` of each `tool_result`.
    tool_results: Vec<(usize, String)>,
}

/// Checks headers and body of a Messages API request.
pub(super) fn validate(headers: &[(String, String)], body: &[u8]) -> Result<(), String> {
    // The API takes the key as `x-api-key`; recent official SDKs send it as a bearer token
    // instead, which the API accepts too.
    let api_key = header(headers, "x-api-key").is_some_and(|k| !k.trim().is_empty());
    let bearer = header(headers, "authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| !t.trim().is_empty());
    if !api_key && !bearer {
        return Err("missing x-api-key header (or Authorization: Bearer)".to_owned());
    }
    if header(headers, "anthropic-version").is_none_or(str::is_empty) {
        return Err("missing anthropic-version header".to_owned());
    }
    require_json(headers)?;
    let root = parse_object(body)?;
    non_empty_str(&root, "model", "model")?;
    let max_tokens = match root.get("max_tokens") {
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("max_tokens: must be a positive integer, got {v}"))?,
        None => return Err("max_tokens: field required".to_owned()),
    };
    require_stream(&root)?;
    if let Some(system) = root.get("system") {
        validate_system(system)?;
    }
    if let Some(thinking) = root.get("thinking") {
        validate_thinking(thinking, max_tokens)?;
    }
    if let Some(tools) = root.get("tools") {
        validate_tools(tools)?;
    }
    if let Some(choice) = root.get("tool_choice") {
        validate_tool_choice(choice, &root)?;
    }
    super::cache_control::validate(&root)?;
    validate_messages(&root)
}

/// `tool_choice`: `auto`, `any`, `tool` (with the name of an offered tool) or `none`; only with
/// tools; and never forcing a tool call while thinking is enabled.
fn validate_tool_choice(choice: &Value, root: &Map<String, Value>) -> Result<(), String> {
    let obj = choice.as_object().ok_or("tool_choice: must be an object")?;
    let kind = obj.get("type").and_then(Value::as_str);
    match kind {
        Some("auto" | "any" | "none") => {}
        Some("tool") => {
            let name = non_empty_str(obj, "name", "tool_choice.name")?;
            let offered = root.get("tools").and_then(Value::as_array).is_some_and(|tools| {
                tools
                    .iter()
                    .any(|t| t.get("name").and_then(Value::as_str) == Some(name))
            });
            if !offered {
                return Err(format!("tool_choice.name: {name:?} is not one of the tools"));
            }
        }
        other => {
            return Err(format!(
                "tool_choice.type: must be \"auto\", \"any\", \"tool\" or \"none\", got {other:?}"
            ))
        }
    }
    if kind != Some("none") && root.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        return Err("tool_choice: may only be specified while providing tools".to_owned());
    }
    let thinking = root.get("thinking").and_then(|t| t.get("type")).and_then(Value::as_str) == Some("enabled");
    if thinking && matches!(kind, Some("any" | "tool")) {
        return Err("tool_choice: thinking may not be enabled when tool_choice forces tool use".to_owned());
    }
    Ok(())
}

fn validate_system(system: &Value) -> Result<(), String> {
    match system {
        Value::String(_) => Ok(()),
        Value::Array(blocks) => {
            for (i, block) in blocks.iter().enumerate() {
                let path = format!("system.{i}");
                let obj = block.as_object().ok_or(format!("{path}: must be an object"))?;
                match obj.get("type").and_then(Value::as_str) {
                    Some("text") => text_field(obj, &path)?,
                    _ => return Err(format!("{path}.type: system blocks must have type \"text\"")),
                }
            }
            Ok(())
        }
        other => Err(format!(
            "system: must be a string or an array of text blocks, got {}",
            kind(other)
        )),
    }
}

fn validate_thinking(thinking: &Value, max_tokens: u64) -> Result<(), String> {
    let obj = thinking.as_object().ok_or("thinking: must be an object")?;
    match obj.get("type").and_then(Value::as_str) {
        Some("enabled") => {
            let budget = obj
                .get("budget_tokens")
                .and_then(Value::as_u64)
                .ok_or("thinking.budget_tokens: must be an integer when thinking is enabled")?;
            if budget < 1024 {
                return Err(format!("thinking.budget_tokens: must be at least 1024, got {budget}"));
            }
            if budget >= max_tokens {
                return Err(format!(
                    "thinking.budget_tokens: must be less than max_tokens ({budget} >= {max_tokens})"
                ));
            }
            Ok(())
        }
        Some("disabled" | "adaptive") => Ok(()),
        other => Err(format!(
            "thinking.type: must be \"enabled\", \"disabled\" or \"adaptive\", got {other:?}"
        )),
    }
}

fn validate_tools(tools: &Value) -> Result<(), String> {
    let tools = tools.as_array().ok_or("tools: must be an array")?;
    let mut names = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("tools.{i}");
        let obj = tool.as_object().ok_or(format!("{path}: must be an object"))?;
        // Server tools (`web_search_20250305`, …) have their own shapes; only custom tools are checked.
        if obj.get("type").and_then(Value::as_str).is_some_and(|t| t != "custom") {
            continue;
        }
        let name = tool_name(obj, "name", &format!("{path}.name"))?;
        if !names.insert(name) {
            return Err(format!(
                "{path}.name: tool names must be unique ({name:?} appears twice)"
            ));
        }
        match obj.get("description") {
            Some(Value::String(_)) => {}
            Some(other) => return Err(format!("{path}.description: must be a string, got {}", kind(other))),
            None => return Err(format!("{path}.description: field required")),
        }
        let schema = obj
            .get("input_schema")
            .ok_or(format!("{path}.input_schema: field required"))?
            .as_object()
            .ok_or(format!("{path}.input_schema: must be a JSON schema object"))?;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!("{path}.input_schema.type: must be \"object\""));
        }
    }
    Ok(())
}

fn validate_messages(root: &Map<String, Value>) -> Result<(), String> {
    let messages = match root.get("messages") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) => return Err("messages: must contain at least one message".to_owned()),
        Some(other) => return Err(format!("messages: must be an array, got {}", kind(other))),
        None => return Err("messages: field required".to_owned()),
    };
    let mut infos: Vec<MessageInfo> = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages.{i}");
        let obj = message.as_object().ok_or(format!("{path}: must be an object"))?;
        let role = match obj.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => {
                return Err(format!(
                    "{path}.role: \"system\" is not allowed inside messages; use the top-level system field"
                ))
            }
            Some(other) => return Err(format!("{path}.role: must be \"user\" or \"assistant\", got {other:?}")),
            None => return Err(format!("{path}.role: field required")),
        };
        if i == 0 && role != Role::User {
            return Err(format!("{path}.role: the first message must have role \"user\""));
        }
        if let Some(prev) = infos.last() {
            if prev.role == role {
                return Err(format!(
                    "{path}.role: roles must alternate between \"user\" and \"assistant\", but messages.{} and messages.{i} are both {:?}",
                    i - 1,
                    role.name()
                ));
            }
        }
        infos.push(validate_content(obj, role, &path)?);
    }
    check_tool_pairing(&infos)
}

fn validate_content(message: &Map<String, Value>, role: Role, path: &str) -> Result<MessageInfo, String> {
    let mut info = MessageInfo {
        role,
        tool_uses: Vec::new(),
        tool_results: Vec::new(),
    };
    let blocks = match message.get("content") {
        Some(Value::String(text)) => {
            return if text.trim().is_empty() {
                Err(format!("{path}.content: text content must be non-empty"))
            } else {
                Ok(info)
            }
        }
        Some(Value::Array(blocks)) if !blocks.is_empty() => blocks,
        Some(Value::Array(_)) => return Err(format!("{path}.content: must contain at least one block")),
        Some(other) => {
            return Err(format!(
                "{path}.content: must be a string or an array, got {}",
                kind(other)
            ))
        }
        None => return Err(format!("{path}.content: field required")),
    };
    let mut other_content_seen = false;
    for (k, block) in blocks.iter().enumerate() {
        let path = format!("{path}.content.{k}");
        let obj = block.as_object().ok_or(format!("{path}: must be an object"))?;
        let block_type = non_empty_str(obj, "type", &format!("{path}.type"))?;
        let only = |allowed: Role| -> Result<(), String> {
            if role == allowed {
                Ok(())
            } else {
                Err(format!(
                    "{path}: {block_type} blocks are only allowed in {} messages",
                    allowed.name()
                ))
            }
        };
        match block_type {
            "text" => text_field(obj, &path)?,
            "image" => {
                only(Role::User)?;
                image_source(obj, &path)?;
            }
            "document" => {
                only(Role::User)?;
                if !obj.get("source").is_some_and(Value::is_object) {
                    return Err(format!("{path}.source: field required"));
                }
            }
            "tool_use" => {
                only(Role::Assistant)?;
                let id = non_empty_str(obj, "id", &format!("{path}.id"))?;
                if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
                    return Err(format!("{path}.id: {id:?} does not match ^[a-zA-Z0-9_-]+$"));
                }
                tool_name(obj, "name", &format!("{path}.name"))?;
                if !obj.get("input").is_some_and(Value::is_object) {
                    return Err(format!("{path}.input: must be an object"));
                }
                info.tool_uses.push(id.to_owned());
            }
            "tool_result" => {
                only(Role::User)?;
                if other_content_seen {
                    return Err(format!(
                        "{path}: tool_result blocks must come before any other content in the user message"
                    ));
                }
                let id = non_empty_str(obj, "tool_use_id", &format!("{path}.tool_use_id"))?;
                tool_result_content(obj, &path)?;
                if let Some(flag) = obj.get("is_error") {
                    if !flag.is_boolean() {
                        return Err(format!("{path}.is_error: must be a boolean"));
                    }
                }
                info.tool_results.push((k, id.to_owned()));
            }
            "thinking" => {
                only(Role::Assistant)?;
                if !obj.get("thinking").is_some_and(Value::is_string) {
                    return Err(format!("{path}.thinking: must be a string"));
                }
                non_empty_str(obj, "signature", &format!("{path}.signature"))
                    .map_err(|e| format!("{e} (thinking blocks must carry the signature the API sent)"))?;
            }
            "redacted_thinking" => {
                only(Role::Assistant)?;
                non_empty_str(obj, "data", &format!("{path}.data"))?;
            }
            other => {
                return Err(format!(
                    "{path}.type: unknown content block type {other:?} (the mock knows {KNOWN_BLOCKS})"
                ))
            }
        }
        if block_type != "tool_result" {
            other_content_seen = true;
        }
    }
    Ok(info)
}

/// A `text` field that holds some non-whitespace text, as the API requires of text blocks.
fn text_field(obj: &Map<String, Value>, path: &str) -> Result<(), String> {
    match obj.get("text") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(()),
        Some(Value::String(_)) => Err(format!("{path}.text: text content blocks must be non-empty")),
        Some(other) => Err(format!("{path}.text: must be a string, got {}", kind(other))),
        None => Err(format!("{path}.text: field required")),
    }
}

fn image_source(obj: &Map<String, Value>, path: &str) -> Result<(), String> {
    let source = obj
        .get("source")
        .and_then(Value::as_object)
        .ok_or(format!("{path}.source: must be an object"))?;
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let media = non_empty_str(source, "media_type", &format!("{path}.source.media_type"))?;
            if !["image/jpeg", "image/png", "image/gif", "image/webp"].contains(&media) {
                return Err(format!(
                    "{path}.source.media_type: must be image/jpeg, image/png, image/gif or image/webp, got {media:?}"
                ));
            }
            non_empty_str(source, "data", &format!("{path}.source.data"))?;
            Ok(())
        }
        Some("url") => non_empty_str(source, "url", &format!("{path}.source.url")).map(drop),
        Some("file") => non_empty_str(source, "file_id", &format!("{path}.source.file_id")).map(drop),
        other => Err(format!(
            "{path}.source.type: must be \"base64\", \"url\" or \"file\", got {other:?}"
        )),
    }
}

fn tool_result_content(obj: &Map<String, Value>, path: &str) -> Result<(), String> {
    match obj.get("content") {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                let path = format!("{path}.content.{j}");
                let part = part.as_object().ok_or(format!("{path}: must be an object"))?;
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => text_field(part, &path)?,
                    Some("image") => image_source(part, &path)?,
                    Some("document") => {}
                    other => {
                        return Err(format!(
                            "{path}.type: tool_result content blocks must be text, image or document, got {other:?}"
                        ))
                    }
                }
            }
            Ok(())
        }
        Some(other) => Err(format!(
            "{path}.content: must be a string or an array, got {}",
            kind(other)
        )),
    }
}

/// Every `tool_use` is answered in the very next message, and every `tool_result` answers a
/// `tool_use` of the message just before it; ids are unique in the conversation.
fn check_tool_pairing(infos: &[MessageInfo]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for (i, info) in infos.iter().enumerate() {
        for id in &info.tool_uses {
            if !seen.insert(id.as_str()) {
                return Err(format!(
                    "messages.{i}: tool_use ids must be unique, {id:?} appears twice"
                ));
            }
        }
        if info.role == Role::User {
            let previous: &[String] = match i.checked_sub(1).and_then(|p| infos.get(p)) {
                Some(prev) => &prev.tool_uses,
                None => &[],
            };
            let mut answered = HashSet::new();
            for (k, id) in &info.tool_results {
                if !previous.contains(id) {
                    return Err(format!(
                        "messages.{i}.content.{k}: unexpected tool_use_id found in tool_result blocks: {id}. Each tool_result block must have a corresponding tool_use block in the previous message."
                    ));
                }
                if !answered.insert(id.as_str()) {
                    return Err(format!(
                        "messages.{i}.content.{k}: more than one tool_result for tool_use_id {id}"
                    ));
                }
            }
        }
        if info.role == Role::Assistant && !info.tool_uses.is_empty() {
            let answered: HashSet<&str> = infos
                .get(i + 1)
                .map(|next| next.tool_results.iter().map(|(_, id)| id.as_str()).collect())
                .unwrap_or_default();
            let missing: Vec<&str> = info
                .tool_uses
                .iter()
                .map(String::as_str)
                .filter(|id| !answered.contains(id))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{i}: tool_use ids were found without tool_result blocks immediately after: {}. Each tool_use block must have a corresponding tool_result block in the next message.",
                    missing.join(", ")
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn headers() -> Vec<(String, String)> {
        [
            ("x-api-key", "k"),
            ("anthropic-version", "2023-06-01"),
            ("content-type", "application/json"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
    }

    fn check(messages: Value) -> Result<(), String> {
        let body = json!({"model": "m", "max_tokens": 100, "stream": true, "messages": messages});
        validate(&headers(), body.to_string().as_bytes())
    }

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "read", "input": {}})
    }

    fn tool_result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
    }

    #[test]
    fn a_full_tool_round_trip_is_accepted() {
        let ok = check(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "text", "text": "Reading."}, tool_use("toolu_1"), tool_use("toolu_2")]},
            {"role": "user", "content": [tool_result("toolu_2"), tool_result("toolu_1"), {"type": "text", "text": "go on"}]},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases = [
            (json!([]), "messages: must contain at least one message"),
            (json!([{"role": "assistant", "content": "x"}]), "first message"),
            (
                json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]),
                "messages.1.role: roles must alternate",
            ),
            (
                json!([{"role": "system", "content": "a"}]),
                "messages.0.role: \"system\" is not allowed",
            ),
            (
                json!([{"role": "user", "content": [{"type": "text", "text": " "}]}]),
                "messages.0.content.0.text: text content blocks must be non-empty",
            ),
            (
                json!([{"role": "user", "content": [{"type": "txt", "text": "a"}]}]),
                "unknown content block type \"txt\"",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": [tool_use("toolu_1")]}]),
                "messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_1",
            ),
            (
                json!([{"role": "user", "content": [tool_result("toolu_9")]}]),
                "messages.0.content.0: unexpected tool_use_id found in tool_result blocks: toolu_9",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": [tool_use("t1")]},
                       {"role": "user", "content": [{"type": "text", "text": "x"}, tool_result("t1")]}]),
                "messages.2.content.1: tool_result blocks must come before any other content",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": ""}, {"type": "text", "text": "x"}]}]),
                "messages.1.content.0.signature: must not be empty",
            ),
        ];
        for (messages, expected) in cases {
            let err = check(messages.clone()).expect_err(&messages.to_string());
            assert!(err.contains(expected), "{messages}: got {err:?}, want {expected:?}");
        }
    }

    #[test]
    fn header_and_top_level_rules() {
        let body =
            json!({"model": "m", "max_tokens": 10, "stream": true, "messages": [{"role": "user", "content": "a"}]});
        let mut h = headers();
        h.retain(|(n, _)| n != "x-api-key");
        assert_eq!(
            validate(&h, body.to_string().as_bytes()),
            Err("missing x-api-key header (or Authorization: Bearer)".to_owned())
        );
        h.push(("authorization".to_owned(), "Bearer sk-ant-test".to_owned()));
        assert_eq!(validate(&h, body.to_string().as_bytes()), Ok(()));
        let mut no_stream = body.clone();
        no_stream["stream"] = json!(false);
        assert!(validate(&headers(), no_stream.to_string().as_bytes())
            .is_err_and(|e| e.starts_with("stream: must be true")));
        let mut budget = body.clone();
        budget["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
        assert!(validate(&headers(), budget.to_string().as_bytes())
            .is_err_and(|e| e.contains("thinking.budget_tokens: must be less than max_tokens")));
        let mut tools = body;
        tools["tools"] = json!([{"name": "bad.name", "description": "d", "input_schema": {"type": "object"}}]);
        assert!(validate(&headers(), tools.to_string().as_bytes())
            .is_err_and(|e| e.starts_with("tools.0.name: tool name \"bad.name\"")));
    }

    #[test]
    fn tool_choice_rules() {
        let with = |choice: Value, tools: bool, thinking: bool| {
            let mut body = json!({"model": "m", "max_tokens": 4096, "stream": true,
                "messages": [{"role": "user", "content": "a"}], "tool_choice": choice});
            if tools {
                body["tools"] =
                    json!([{"name": "final_result", "description": "d", "input_schema": {"type": "object"}}]);
            }
            if thinking {
                body["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
            }
            validate(&headers(), body.to_string().as_bytes())
        };
        assert_eq!(with(json!({"type": "any"}), true, false), Ok(()));
        assert_eq!(
            with(json!({"type": "tool", "name": "final_result"}), true, false),
            Ok(())
        );
        assert_eq!(with(json!({"type": "auto"}), true, true), Ok(()));
        assert_eq!(
            with(json!({"type": "any"}), false, false),
            Err("tool_choice: may only be specified while providing tools".to_owned())
        );
        assert_eq!(
            with(json!({"type": "any"}), true, true),
            Err("tool_choice: thinking may not be enabled when tool_choice forces tool use".to_owned())
        );
        assert_eq!(
            with(json!({"type": "tool", "name": "other"}), true, false),
            Err("tool_choice.name: \"other\" is not one of the tools".to_owned())
        );
        assert!(with(json!("required"), true, false).is_err_and(|e| e == "tool_choice: must be an object"));
    }
}
