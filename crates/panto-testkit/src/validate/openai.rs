//! The rules of `POST …/chat/completions`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{header, kind, non_empty_str, parse_object, require_json, require_stream, tool_name};

/// Checks headers and body of a Chat Completions request.
pub(super) fn validate(headers: &[(String, String)], body: &[u8]) -> Result<(), String> {
    let bearer = header(headers, "authorization").and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_none_or(|token| token.trim().is_empty()) {
        return Err("missing Authorization: Bearer header".to_owned());
    }
    require_json(headers)?;
    let root = parse_object(body)?;
    non_empty_str(&root, "model", "model")?;
    require_stream(&root)?;
    if let Some(tools) = root.get("tools") {
        validate_tools(tools)?;
    }
    if let Some(choice) = root.get("tool_choice") {
        validate_tool_choice(choice, &root)?;
    }
    validate_messages(&root)
}

/// `tool_choice`: `"none"`, `"auto"`, `"required"`, or a named function among the tools; only
/// with tools.
fn validate_tool_choice(choice: &Value, root: &Map<String, Value>) -> Result<(), String> {
    let tools = root.get("tools").and_then(Value::as_array).filter(|t| !t.is_empty());
    match choice {
        Value::String(mode) if matches!(mode.as_str(), "none" | "auto" | "required") => {}
        Value::Object(obj) if obj.get("type").and_then(Value::as_str) == Some("function") => {
            let function = obj
                .get("function")
                .and_then(Value::as_object)
                .ok_or("tool_choice.function: must be an object")?;
            let name = non_empty_str(function, "name", "tool_choice.function.name")?;
            let offered = tools.is_some_and(|tools| {
                tools
                    .iter()
                    .any(|t| t["function"].get("name").and_then(Value::as_str) == Some(name))
            });
            if !offered {
                return Err(format!("tool_choice.function.name: {name:?} is not one of the tools"));
            }
        }
        other => {
            return Err(format!(
                "tool_choice: must be \"none\", \"auto\", \"required\" or a named function, got {other}"
            ))
        }
    }
    if tools.is_none() {
        return Err("tool_choice: only allowed when tools are specified".to_owned());
    }
    Ok(())
}

fn validate_tools(tools: &Value) -> Result<(), String> {
    let tools = tools.as_array().ok_or("tools: must be an array")?;
    let mut names = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("tools[{i}]");
        let obj = tool.as_object().ok_or(format!("{path}: must be an object"))?;
        if obj.get("type").and_then(Value::as_str) != Some("function") {
            return Err(format!("{path}.type: must be \"function\""));
        }
        let function = obj
            .get("function")
            .and_then(Value::as_object)
            .ok_or(format!("{path}.function: must be an object"))?;
        let name = tool_name(function, "name", &format!("{path}.function.name"))?;
        if !names.insert(name) {
            return Err(format!(
                "{path}.function.name: tool names must be unique ({name:?} appears twice)"
            ));
        }
        if let Some(d) = function.get("description") {
            if !d.is_string() {
                return Err(format!("{path}.function.description: must be a string"));
            }
        }
        if let Some(p) = function.get("parameters") {
            if !p.is_object() {
                return Err(format!("{path}.function.parameters: must be a JSON schema object"));
            }
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
    let mut leading_system = true;
    // The assistant message whose tool calls still await answers, and those call ids.
    let mut pending: Option<(usize, Vec<String>)> = None;
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        let obj = message.as_object().ok_or(format!("{path}: must be an object"))?;
        let role = non_empty_str(obj, "role", &format!("{path}.role"))?;
        if role != "tool" {
            if let Some((at, missing)) = pending.take().filter(|(_, ids)| !ids.is_empty()) {
                return Err(unanswered(at, &missing));
            }
        }
        match role {
            "system" | "developer" => {
                if !leading_system {
                    return Err(format!(
                        "{path}.role: {role} messages are only allowed at the start of the conversation"
                    ));
                }
                text_content(obj, &path, false)?;
            }
            "user" => {
                leading_system = false;
                user_content(obj, &path)?;
            }
            "assistant" => {
                leading_system = false;
                let ids = assistant(obj, &path)?;
                if !ids.is_empty() {
                    pending = Some((i, ids));
                }
            }
            "tool" => {
                leading_system = false;
                let id = non_empty_str(obj, "tool_call_id", &format!("{path}.tool_call_id"))?;
                let answered = pending.as_mut().and_then(|(_, ids)| {
                    let at = ids.iter().position(|p| p == id)?;
                    Some(ids.remove(at))
                });
                if answered.is_none() {
                    return Err(format!(
                        "{path}: messages with role \"tool\" must be a response to a preceding message with tool_calls (no unanswered call has id {id:?})"
                    ));
                }
                text_content(obj, &path, true)?;
            }
            other => {
                return Err(format!(
                    "{path}.role: must be system, developer, user, assistant or tool, got {other:?}"
                ))
            }
        }
    }
    match pending {
        Some((at, missing)) if !missing.is_empty() => Err(unanswered(at, &missing)),
        _ => Ok(()),
    }
}

fn unanswered(at: usize, missing: &[String]) -> String {
    format!(
        "messages[{at}]: an assistant message with tool_calls must be followed by tool messages responding to each tool_call_id; these tool_call_ids have no response: {}",
        missing.join(", ")
    )
}

/// System, developer and tool messages: a string or an array of text parts. Tool results may be
/// empty strings; instructions may not be missing.
fn text_content(obj: &Map<String, Value>, path: &str, allow_empty: bool) -> Result<(), String> {
    match obj.get("content") {
        Some(Value::String(s)) if allow_empty || !s.is_empty() => Ok(()),
        Some(Value::String(_)) => Err(format!("{path}.content: must not be empty")),
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                text_part(part, &format!("{path}.content[{j}]"))?;
            }
            Ok(())
        }
        Some(other) => Err(format!(
            "{path}.content: must be a string or an array, got {}",
            kind(other)
        )),
        None => Err(format!("{path}.content: field required")),
    }
}

fn text_part(part: &Value, path: &str) -> Result<(), String> {
    let obj = part.as_object().ok_or(format!("{path}: must be an object"))?;
    if obj.get("type").and_then(Value::as_str) != Some("text") {
        return Err(format!("{path}.type: must be \"text\""));
    }
    if !obj.get("text").is_some_and(Value::is_string) {
        return Err(format!("{path}.text: must be a string"));
    }
    Ok(())
}

fn user_content(obj: &Map<String, Value>, path: &str) -> Result<(), String> {
    match obj.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) if !parts.is_empty() => {
            for (j, part) in parts.iter().enumerate() {
                let path = format!("{path}.content[{j}]");
                let p = part.as_object().ok_or(format!("{path}: must be an object"))?;
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => text_part(part, &path)?,
                    Some("image_url") => {
                        let url = p
                            .get("image_url")
                            .and_then(Value::as_object)
                            .ok_or(format!("{path}.image_url: must be an object"))?;
                        non_empty_str(url, "url", &format!("{path}.image_url.url"))?;
                    }
                    Some("input_audio" | "file") => {}
                    other => {
                        return Err(format!(
                            "{path}.type: must be text, image_url, input_audio or file, got {other:?}"
                        ))
                    }
                }
            }
            Ok(())
        }
        Some(Value::Array(_)) => Err(format!("{path}.content: must not be an empty array")),
        Some(other) => Err(format!(
            "{path}.content: must be a string or an array, got {}",
            kind(other)
        )),
        None => Err(format!("{path}.content: field required")),
    }
}

/// Checks an assistant message and returns the ids of its tool calls.
fn assistant(obj: &Map<String, Value>, path: &str) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    if let Some(calls) = obj.get("tool_calls") {
        let calls = match calls {
            Value::Array(c) if !c.is_empty() => c,
            Value::Array(_) => return Err(format!("{path}.tool_calls: must not be an empty array (omit it)")),
            other => return Err(format!("{path}.tool_calls: must be an array, got {}", kind(other))),
        };
        for (k, call) in calls.iter().enumerate() {
            let path = format!("{path}.tool_calls[{k}]");
            let call = call.as_object().ok_or(format!("{path}: must be an object"))?;
            let id = non_empty_str(call, "id", &format!("{path}.id"))?;
            if ids.iter().any(|seen| seen == id) {
                return Err(format!("{path}.id: duplicate tool call id {id:?}"));
            }
            if call.get("type").and_then(Value::as_str) != Some("function") {
                return Err(format!("{path}.type: must be \"function\""));
            }
            let function = call
                .get("function")
                .and_then(Value::as_object)
                .ok_or(format!("{path}.function: must be an object"))?;
            tool_name(function, "name", &format!("{path}.function.name"))?;
            match function.get("arguments") {
                Some(Value::String(args)) => {
                    if let Err(e) = serde_json::from_str::<Value>(args) {
                        return Err(format!(
                            "{path}.function.arguments: must be a string holding valid JSON ({e}), got {args:?}"
                        ));
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "{path}.function.arguments: must be a string holding JSON, got {}",
                        kind(other)
                    ))
                }
                None => return Err(format!("{path}.function.arguments: field required")),
            }
            ids.push(id.to_owned());
        }
    }
    match obj.get("content") {
        None | Some(Value::Null) if ids.is_empty() => {
            Err(format!("{path}.content: required unless the message has tool_calls"))
        }
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(ids),
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                let path = format!("{path}.content[{j}]");
                let p = part.as_object().ok_or(format!("{path}: must be an object"))?;
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => text_part(part, &path)?,
                    Some("refusal") => {}
                    other => return Err(format!("{path}.type: must be text or refusal, got {other:?}")),
                }
            }
            Ok(ids)
        }
        Some(other) => Err(format!(
            "{path}.content: must be a string, an array or null, got {}",
            kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn headers() -> Vec<(String, String)> {
        vec![
            ("authorization".to_owned(), "Bearer sk-test".to_owned()),
            ("content-type".to_owned(), "application/json".to_owned()),
        ]
    }

    fn check(messages: Value) -> Result<(), String> {
        let body = json!({"model": "m", "stream": true, "messages": messages});
        validate(&headers(), body.to_string().as_bytes())
    }

    fn call(id: &str, args: Value) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "read", "arguments": args}})
    }

    #[test]
    fn a_full_tool_round_trip_is_accepted() {
        let ok = check(json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call("c1", json!("{}")), call("c2", json!("{\"a\":1}"))]},
            {"role": "tool", "tool_call_id": "c2", "content": "two"},
            {"role": "tool", "tool_call_id": "c1", "content": ""},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases = [
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [call("c1", json!("{}"))]}]),
                "messages[1]: an assistant message with tool_calls must be followed by tool messages responding to each tool_call_id; these tool_call_ids have no response: c1",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [call("c1", json!("{}")), call("c2", json!("{}"))]},
                       {"role": "tool", "tool_call_id": "c1", "content": "x"}, {"role": "user", "content": "b"}]),
                "no response: c2",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}]),
                "messages[1]: messages with role \"tool\" must be a response",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "system", "content": "late"}]),
                "messages[1].role: system messages are only allowed at the start",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [call("c1", json!({"a": 1}))]}]),
                "messages[1].tool_calls[0].function.arguments: must be a string holding JSON, got an object",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [call("c1", json!(""))]}]),
                "messages[1].tool_calls[0].function.arguments: must be a string holding valid JSON",
            ),
            (json!([]), "messages: must contain at least one message"),
        ];
        for (messages, expected) in cases {
            let err = check(messages.clone()).expect_err(&messages.to_string());
            assert!(err.contains(expected), "{messages}: got {err:?}, want {expected:?}");
        }
    }

    #[test]
    fn tool_choice_rules() {
        let with = |choice: Value, tools: bool| {
            let mut body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "a"}], "tool_choice": choice});
            if tools {
                body["tools"] = json!([{"type": "function", "function": {"name": "final_result", "parameters": {"type": "object"}}}]);
            }
            let h = vec![
                ("authorization".to_owned(), "Bearer sk-test".to_owned()),
                ("content-type".to_owned(), "application/json".to_owned()),
            ];
            validate(&h, body.to_string().as_bytes())
        };
        assert_eq!(with(json!("required"), true), Ok(()));
        assert_eq!(
            with(json!({"type": "function", "function": {"name": "final_result"}}), true),
            Ok(())
        );
        assert_eq!(
            with(json!("required"), false),
            Err("tool_choice: only allowed when tools are specified".to_owned())
        );
        assert_eq!(
            with(json!({"type": "function", "function": {"name": "other"}}), true),
            Err("tool_choice.function.name: \"other\" is not one of the tools".to_owned())
        );
        assert!(with(json!("any"), true).is_err_and(|e| e.starts_with("tool_choice: must be")));
    }

    #[test]
    fn needs_a_bearer_token() {
        let body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "a"}]});
        let h = vec![("content-type".to_owned(), "application/json".to_owned())];
        assert_eq!(
            validate(&h, body.to_string().as_bytes()),
            Err("missing Authorization: Bearer header".to_owned())
        );
    }
}
