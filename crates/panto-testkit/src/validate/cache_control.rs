//! The Messages API's rules for `cache_control` breakpoints.

use serde_json::{Map, Value};

use crate::cache::MAX_BREAKPOINTS;

/// Checks every `cache_control` of a Messages request: a known shape, not on thinking or empty
/// text, at most four, and no one-hour breakpoint after a five-minute one.
pub(super) fn validate(root: &Map<String, Value>) -> Result<(), String> {
    let mut found: Vec<(String, &str)> = Vec::new();
    for (i, tool) in root
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        check_block(tool, &format!("tools.{i}"), &mut found)?;
    }
    if let Some(Value::Array(system)) = root.get("system") {
        for (i, block) in system.iter().enumerate() {
            check_block(block, &format!("system.{i}"), &mut found)?;
        }
    }
    for (m, message) in root
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(Value::Array(blocks)) = message.get("content") else {
            continue;
        };
        for (b, block) in blocks.iter().enumerate() {
            let path = format!("messages.{m}.content.{b}");
            check_block(block, &path, &mut found)?;
            if let Some(Value::Array(parts)) = block.get("content") {
                for (p, part) in parts.iter().enumerate() {
                    check_block(part, &format!("{path}.content.{p}"), &mut found)?;
                }
            }
        }
    }
    if found.len() > MAX_BREAKPOINTS {
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        return Err(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {} ({}).",
            found.len(),
            paths.join(", ")
        ));
    }
    if let Some(short) = found.iter().position(|(_, ttl)| *ttl == "5m") {
        if let Some((path, _)) = found[short..].iter().find(|(_, ttl)| *ttl == "1h") {
            return Err(format!(
                "{path}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' one ({})",
                found[short].0
            ));
        }
    }
    Ok(())
}

/// Checks one block's `cache_control`, if it has one, and records its path and lifetime.
fn check_block<'a>(block: &'a Value, path: &str, found: &mut Vec<(String, &'a str)>) -> Result<(), String> {
    let Some(control) = block.get("cache_control") else {
        return Ok(());
    };
    let path = path.to_owned();
    let Some(control) = control.as_object() else {
        return Err(format!("{path}.cache_control: must be an object"));
    };
    if control.get("type").and_then(Value::as_str) != Some("ephemeral") {
        return Err(format!("{path}.cache_control.type: must be \"ephemeral\""));
    }
    let ttl = match control.get("ttl") {
        None => "5m",
        Some(Value::String(ttl)) if ttl == "5m" || ttl == "1h" => ttl.as_str(),
        Some(other) => {
            return Err(format!(
                "{path}.cache_control.ttl: must be \"5m\" or \"1h\", got {other}"
            ))
        }
    };
    if let Some(extra) = control.keys().find(|k| *k != "type" && *k != "ttl") {
        return Err(format!("{path}.cache_control.{extra}: Extra inputs are not permitted"));
    }
    match block.get("type").and_then(Value::as_str) {
        Some(kind @ ("thinking" | "redacted_thinking")) => {
            return Err(format!("{path}.{kind}.cache_control: Extra inputs are not permitted (cache_control cannot be set on {kind} blocks)"));
        }
        Some("text") if block.get("text").and_then(Value::as_str).is_none_or(str::is_empty) => {
            return Err(format!("{path}: cache_control cannot be set for empty text blocks"));
        }
        _ => {}
    }
    found.push((path, ttl));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(root: Value) -> Result<(), String> {
        validate(root.as_object().unwrap())
    }

    fn marked(text: &str) -> Value {
        json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}})
    }

    #[test]
    fn four_are_accepted_five_are_not() {
        let four: Vec<Value> = (0..4).map(|i| marked(&format!("t{i}"))).collect();
        check(json!({"messages": [{"role": "user", "content": four}]})).unwrap();
        let five: Vec<Value> = (0..5).map(|i| marked(&format!("t{i}"))).collect();
        let err = check(json!({"messages": [{"role": "user", "content": five}]})).unwrap_err();
        assert!(
            err.contains("A maximum of 4 blocks with cache_control") && err.contains("Found 5"),
            "{err}"
        );
    }

    #[test]
    fn not_on_thinking_or_empty_text_and_no_long_after_short() {
        let thinking =
            json!({"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": {"type": "ephemeral"}});
        let err = check(json!({"messages": [{"role": "assistant", "content": [thinking]}]})).unwrap_err();
        assert!(err.starts_with("messages.0.content.0.thinking.cache_control"), "{err}");
        let err = check(json!({"messages": [{"role": "user", "content": [marked("")]}]})).unwrap_err();
        assert!(err.contains("empty text"), "{err}");
        let hour = json!({"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}});
        let err =
            check(json!({"system": [marked("a")], "messages": [{"role": "user", "content": [hour]}]})).unwrap_err();
        assert!(err.contains("ttl='1h'") && err.contains("system.0"), "{err}");
        let err = check(json!({"system": [{"type": "text", "text": "a", "cache_control": {"type": "persistent"}}]}))
            .unwrap_err();
        assert!(err.contains("system.0.cache_control.type"), "{err}");
    }
}
