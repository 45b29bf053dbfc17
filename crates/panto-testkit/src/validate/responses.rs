//! The rules of `POST …/responses` (the OpenAI Responses API), with its error wording where the
//! API's is known.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{header, kind, non_empty_str, parse_object, require_json, require_stream, tool_name};

/// The request parameters the API knows; any other is refused (`Unknown parameter`).
const PARAMETERS: &[&str] = &[
    "background",
    "conversation",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

/// Checks headers and body of a Responses request.
pub(super) fn validate(headers: &[(String, String)], body: &[u8]) -> Result<(), String> {
    let bearer = header(headers, "authorization").and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_none_or(|token| token.trim().is_empty()) {
        return Err("missing Authorization: Bearer header".to_owned());
    }
    require_json(headers)?;
    let root = parse_object(body)?;
    if let Some(unknown) = root.keys().find(|k| !PARAMETERS.contains(&k.as_str())) {
        return Err(format!("Unknown parameter: '{unknown}'."));
    }
    non_empty_str(&root, "model", "model")?;
    require_stream(&root)?;
    let store = match root.get("store") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("store: must be a boolean, got {}", kind(other))),
    };
    if let Some(instructions) = root.get("instructions") {
        if !instructions.is_string() {
            return Err(format!("instructions: must be a string, got {}", kind(instructions)));
        }
    }
    if let Some(max) = root.get("max_output_tokens") {
        match max.as_u64() {
            Some(n) if n >= 16 => {}
            _ => {
                return Err(format!(
                    "max_output_tokens: must be an integer of at least 16, got {max}"
                ))
            }
        }
    }
    if let Some(include) = root.get("include") {
        let include = include.as_array().ok_or("include: must be an array")?;
        for (i, v) in include.iter().enumerate() {
            match v.as_str() {
                Some(
                    "reasoning.encrypted_content"
                    | "message.output_text.logprobs"
                    | "message.input_image.image_url"
                    | "file_search_call.results"
                    | "web_search_call.action.sources"
                    | "code_interpreter_call.outputs"
                    | "computer_call_output.output.image_url",
                ) => {}
                _ => return Err(format!("include[{i}]: unsupported value {v}")),
            }
        }
    }
    if let Some(reasoning) = root.get("reasoning") {
        validate_reasoning(reasoning)?;
    }
    if let Some(tools) = root.get("tools") {
        validate_tools(tools)?;
    }
    if let Some(choice) = root.get("tool_choice") {
        validate_tool_choice(choice, &root)?;
    }
    validate_input(&root, store)
}

fn validate_reasoning(reasoning: &Value) -> Result<(), String> {
    let obj = reasoning.as_object().ok_or("reasoning: must be an object")?;
    if let Some(effort) = obj.get("effort") {
        if !matches!(effort.as_str(), Some("minimal" | "low" | "medium" | "high")) && !effort.is_null() {
            return Err(format!(
                "reasoning.effort: must be one of 'minimal', 'low', 'medium', 'high', got {effort}"
            ));
        }
    }
    if let Some(summary) = obj.get("summary") {
        if !matches!(summary.as_str(), Some("auto" | "concise" | "detailed")) && !summary.is_null() {
            return Err(format!(
                "reasoning.summary: must be one of 'auto', 'concise', 'detailed', got {summary}"
            ));
        }
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
            return Err(format!(
                "{path}.type: must be \"function\" (the mock serves no built-in tools)"
            ));
        }
        if obj.contains_key("function") {
            // The Chat Completions shape, which this API refuses.
            return Err(format!("{path}.name: missing required parameter (the tool is nested in `function`, as Chat Completions has it)"));
        }
        let name = tool_name(obj, "name", &format!("{path}.name"))?;
        if !names.insert(name) {
            return Err(format!(
                "{path}.name: tool names must be unique ({name:?} appears twice)"
            ));
        }
        if obj.get("description").is_some_and(|d| !d.is_string() && !d.is_null()) {
            return Err(format!("{path}.description: must be a string"));
        }
        if !obj.get("parameters").is_some_and(Value::is_object) {
            return Err(format!("{path}.parameters: must be a JSON schema object"));
        }
        // On this API `strict` defaults to true.
        match obj.get("strict") {
            Some(Value::Bool(false)) => {}
            None | Some(Value::Bool(true)) => strict_schema(&obj["parameters"], &format!("{path}.parameters"))?,
            Some(other) => return Err(format!("{path}.strict: must be a boolean, got {}", kind(other))),
        }
    }
    Ok(())
}

/// What `strict: true` (the default) demands of an object schema: `additionalProperties: false` and every property required.
fn strict_schema(schema: &Value, path: &str) -> Result<(), String> {
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(format!(
            "{path}: Invalid schema for function: In context=(), 'additionalProperties' is required to be supplied and to be false."
        ));
    }
    Ok(())
}

fn validate_tool_choice(choice: &Value, root: &Map<String, Value>) -> Result<(), String> {
    let tools = root.get("tools").and_then(Value::as_array).filter(|t| !t.is_empty());
    match choice {
        Value::String(mode) if matches!(mode.as_str(), "none" | "auto" | "required") => {}
        Value::Object(obj) if obj.get("type").and_then(Value::as_str) == Some("function") => {
            let name = non_empty_str(obj, "name", "tool_choice.name")?;
            if !tools.is_some_and(|t| t.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(name))) {
                return Err(format!("tool_choice.name: {name:?} is not one of the tools"));
            }
        }
        other => {
            return Err(format!(
                "tool_choice: must be \"none\", \"auto\", \"required\" or a named function, got {other}"
            ))
        }
    }
    if tools.is_none() && choice != "none" && choice != "auto" {
        return Err("tool_choice: Tool choice 'required' must be specified with 'tools' parameter.".to_owned());
    }
    Ok(())
}

fn validate_input(root: &Map<String, Value>, store: bool) -> Result<(), String> {
    let items = match root.get("input") {
        Some(Value::String(s)) if !s.is_empty() => return Ok(()),
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_) | Value::String(_)) => return Err("input: must not be empty".to_owned()),
        Some(other) => return Err(format!("input: must be a string or an array, got {}", kind(other))),
        None => return Err("input: Missing required parameter: 'input'.".to_owned()),
    };
    // Function calls by call_id, with the index of the call and whether an output answered it.
    let mut calls: HashMap<&str, (usize, bool)> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("input[{i}]");
        let obj = item.as_object().ok_or(format!("{path}: must be an object"))?;
        let item_type = match obj.get("type") {
            None => "message",
            Some(Value::String(t)) => t.as_str(),
            Some(other) => return Err(format!("{path}.type: must be a string, got {}", kind(other))),
        };
        match item_type {
            "message" => message(obj, &path)?,
            "reasoning" => {
                non_empty_str(obj, "id", &format!("{path}.id"))?;
                let summary = obj
                    .get("summary")
                    .and_then(Value::as_array)
                    .ok_or(format!("{path}.summary: Missing required parameter (an array)"))?;
                for (j, part) in summary.iter().enumerate() {
                    if part.get("type").and_then(Value::as_str) != Some("summary_text")
                        || !part.get("text").is_some_and(Value::is_string)
                    {
                        return Err(format!(
                            "{path}.summary[{j}]: must be {{\"type\": \"summary_text\", \"text\": string}}"
                        ));
                    }
                }
                let encrypted = obj.get("encrypted_content").and_then(Value::as_str).unwrap_or("");
                if !store && encrypted.is_empty() {
                    let id = obj["id"].as_str().unwrap_or("");
                    return Err(format!(
                        "{path}: Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                    ));
                }
                let follower = items.get(i + 1).and_then(Value::as_object);
                let followed = follower.is_some_and(|f| match f.get("type").and_then(Value::as_str) {
                    Some("function_call") => true,
                    Some("message") | None => f.get("role").and_then(Value::as_str) == Some("assistant"),
                    _ => false,
                });
                if !followed {
                    let id = obj["id"].as_str().unwrap_or("");
                    return Err(format!(
                        "{path}: Item '{id}' of type 'reasoning' was provided without its required following item."
                    ));
                }
            }
            "function_call" => {
                let call_id = non_empty_str(obj, "call_id", &format!("{path}.call_id"))?;
                tool_name(obj, "name", &format!("{path}.name"))?;
                let arguments = obj
                    .get("arguments")
                    .and_then(Value::as_str)
                    .ok_or(format!("{path}.arguments: must be a string"))?;
                if serde_json::from_str::<Value>(arguments).is_err() {
                    return Err(format!("{path}.arguments: must be JSON text, got {arguments:?}"));
                }
                if calls.insert(call_id, (i, false)).is_some() {
                    return Err(format!("{path}.call_id: Duplicate value {call_id:?}"));
                }
            }
            "function_call_output" => {
                let call_id = non_empty_str(obj, "call_id", &format!("{path}.call_id"))?;
                match calls.get_mut(call_id) {
                    Some((_, answered)) if !*answered => *answered = true,
                    Some(_) => return Err(format!("{path}.call_id: {call_id:?} was already answered")),
                    None => {
                        return Err(format!(
                            "{path}: No tool call found for function call output with call_id {call_id}."
                        ))
                    }
                }
                match obj.get("output") {
                    Some(Value::String(_)) => {}
                    Some(Value::Array(parts)) => {
                        for (j, part) in parts.iter().enumerate() {
                            input_part(part, &format!("{path}.output[{j}]"))?;
                        }
                    }
                    _ => return Err(format!("{path}.output: must be a string or an array of input parts")),
                }
            }
            other => return Err(format!("{path}.type: Invalid value: '{other}'.")),
        }
    }
    if let Some((call_id, _)) = calls
        .iter()
        .filter(|(_, (_, answered))| !answered)
        .min_by_key(|(_, (i, _))| *i)
    {
        return Err(format!("input: No tool output found for function call {call_id}."));
    }
    Ok(())
}

/// A message item: a role, and content a string or parts of the kinds that role may send.
fn message(obj: &Map<String, Value>, path: &str) -> Result<(), String> {
    let role = non_empty_str(obj, "role", &format!("{path}.role"))?;
    if !matches!(role, "user" | "assistant" | "system" | "developer") {
        return Err(format!("{path}.role: Invalid value: '{role}'."));
    }
    match obj.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) if !parts.is_empty() => {
            for (j, part) in parts.iter().enumerate() {
                let part_path = format!("{path}.content[{j}]");
                if role == "assistant" {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") if part.get("text").is_some_and(Value::is_string) => {}
                        Some("refusal") if part.get("refusal").is_some_and(Value::is_string) => {}
                        _ => {
                            return Err(format!(
                                "{part_path}: an assistant message holds output_text or refusal parts"
                            ))
                        }
                    }
                } else {
                    input_part(part, &part_path)?;
                }
            }
            Ok(())
        }
        Some(Value::Array(_)) => Err(format!("{path}.content: must not be empty")),
        _ => Err(format!("{path}.content: must be a string or an array of parts")),
    }
}

/// An input part: `input_text` with a string, or `input_image` with a data or https URL.
fn input_part(part: &Value, path: &str) -> Result<(), String> {
    match part.get("type").and_then(Value::as_str) {
        Some("input_text") if part.get("text").is_some_and(Value::is_string) => Ok(()),
        Some("input_image") => {
            let url = part.get("image_url").and_then(Value::as_str).unwrap_or("");
            let ok = url.starts_with("https://")
                || url.strip_prefix("data:").is_some_and(|rest| {
                    rest.split_once(";base64,")
                        .is_some_and(|(mt, data)| mt.starts_with("image/") && !data.is_empty())
                });
            if !ok && part.get("file_id").is_none() {
                return Err(format!(
                    "{path}.image_url: must be an https URL or a base64 data URL of an image"
                ));
            }
            match part.get("detail").and_then(Value::as_str) {
                None | Some("low" | "high" | "auto") => Ok(()),
                Some(other) => Err(format!("{path}.detail: Invalid value: '{other}'.")),
            }
        }
        _ => Err(format!("{path}: must be an input_text or input_image part")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(body: Value) -> Result<(), String> {
        let headers = vec![
            ("authorization".to_owned(), "Bearer k".to_owned()),
            ("content-type".to_owned(), "application/json".to_owned()),
        ];
        validate(&headers, body.to_string().as_bytes())
    }

    fn base(input: Value) -> Value {
        json!({"model": "gpt-5", "stream": true, "store": false, "input": input})
    }

    #[test]
    fn a_stateless_tool_turn_with_reasoning_passes() {
        let input = json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "echo", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "message", "role": "assistant", "content": "done"},
        ]);
        check(base(input)).unwrap();
    }

    #[test]
    fn what_the_api_refuses_is_refused_naming_the_item() {
        let user = json!({"type": "message", "role": "user", "content": "hi"});
        let cases = [
            (
                json!([user, {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant", "content": "x"}]),
                "input[1]: Item with id 'rs_1' not found",
            ),
            (
                json!([user, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}]),
                "without its required following item",
            ),
            (
                json!([user, {"type": "function_call", "call_id": "c1", "name": "echo", "arguments": "{}"}]),
                "No tool output found for function call c1",
            ),
            (
                json!([user, {"type": "function_call_output", "call_id": "c9", "output": "x"}]),
                "No tool call found for function call output with call_id c9",
            ),
            (
                json!([{"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "file:///x"}]}]),
                "input[0].content[0].image_url",
            ),
            (
                json!([{"type": "item_reference", "id": "msg_1"}]),
                "input[0].type: Invalid value: 'item_reference'",
            ),
        ];
        for (input, expected) in cases {
            let err = check(base(input.clone())).expect_err(&input.to_string());
            assert!(err.contains(expected), "{input}: {err}");
        }
        let err = check(json!({"model": "m", "stream": true, "input": "x", "messages": []})).unwrap_err();
        assert!(err.contains("Unknown parameter: 'messages'"), "{err}");
        let mut body = base(json!("x"));
        body["tools"] = json!([{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true}]);
        assert!(check(body).unwrap_err().contains("additionalProperties"));
    }
}
