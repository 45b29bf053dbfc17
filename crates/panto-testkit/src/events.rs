//! Checking event JSON against docs/events.schema.json: the one function every test that sees
//! an event calls (panto-core's turns, stream-json, the C ABI in Rust, and C and Go through the
//! mock server's `POST /__mock/check-events`).
//!
//! The check reads the committed schema, the file readers of panto's output get, and first
//! makes sure it is the one panto-core generates, so a stale file fails every test with the
//! command that fixes it instead of with puzzling mismatches.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// docs/events.schema.json as committed.
pub const EVENT_SCHEMA: &str = include_str!("../../../docs/events.schema.json");

/// The path of the schema in the repository, for messages.
const SCHEMA_PATH: &str = "docs/events.schema.json";

/// The compiled schema: the whole of it, and the branch of each event type on its own (for
/// messages that name the field at fault instead of "matches none of the branches").
struct Schema {
    whole: Validator,
    by_type: BTreeMap<String, Validator>,
}

fn schema() -> Result<&'static Schema, String> {
    static SCHEMA: OnceLock<Result<Schema, String>> = OnceLock::new();
    SCHEMA.get_or_init(compile).as_ref().map_err(Clone::clone)
}

fn compile() -> Result<Schema, String> {
    let committed: Value =
        serde_json::from_str(EVENT_SCHEMA).map_err(|e| format!("{SCHEMA_PATH} is not JSON ({e})"))?;
    if committed != panto_core::event_schema() {
        return Err(format!(
            "{SCHEMA_PATH} is stale: it is not the schema panto-core generates. Run `cargo xtask codegen`."
        ));
    }
    let build = |schema: &Value, what: &str| {
        jsonschema::draft202012::new(schema).map_err(|e| format!("{SCHEMA_PATH}: {what} is not a valid schema: {e}"))
    };
    let whole = build(&committed, "the schema")?;
    let branches = committed["oneOf"]
        .as_array()
        .ok_or_else(|| format!("{SCHEMA_PATH} has no top-level oneOf"))?;
    let mut by_type = BTreeMap::new();
    for (n, branch) in branches.iter().enumerate() {
        let name = branch["properties"]["type"]["const"]
            .as_str()
            .ok_or_else(|| format!("{SCHEMA_PATH}: oneOf branch {n} has no constant `type`"))?;
        let mut alone = branch.clone();
        alone["$defs"] = committed["$defs"].clone();
        by_type.insert(name.to_owned(), build(&alone, &format!("the branch of `{name}`"))?);
    }
    Ok(Schema { whole, by_type })
}

/// Every event `type` the schema defines, in order.
pub fn event_types() -> Result<Vec<String>, String> {
    Ok(schema()?.by_type.keys().cloned().collect())
}

/// Checks one event's JSON against docs/events.schema.json. The error names the event's type,
/// where in it the problem is (a JSON pointer) and what is wrong, and shows the event.
pub fn check_event(event: &Value) -> Result<(), String> {
    let schema = schema()?;
    let shown = show(event);
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("an event has no string `type`: {shown}"))?;
    let Some(branch) = schema.by_type.get(kind) else {
        let known: Vec<&str> = schema.by_type.keys().map(String::as_str).collect();
        return Err(format!(
            "event type `{kind}` is not in {SCHEMA_PATH} (it defines {}): {shown}",
            known.join(", ")
        ));
    };
    let problems: Vec<String> = branch.iter_errors(event).map(|e| describe(&e)).collect();
    if !problems.is_empty() {
        return Err(format!(
            "event `{kind}` does not match {SCHEMA_PATH}: {}: {shown}",
            problems.join("; ")
        ));
    }
    // The branch alone cannot see the whole schema's rules (exactly one branch matches).
    if let Err(e) = schema.whole.validate(event) {
        return Err(format!("event `{kind}` does not match {SCHEMA_PATH}: {e}: {shown}"));
    }
    Ok(())
}

/// Checks every event of `events`; the error also says which one (counting from 1).
pub fn check_events<'a>(events: impl IntoIterator<Item = &'a Value>) -> Result<usize, String> {
    let mut count = 0;
    for (n, event) in events.into_iter().enumerate() {
        check_event(event).map_err(|e| format!("event {} of the stream: {e}", n + 1))?;
        count += 1;
    }
    Ok(count)
}

/// Panics with [`check_event`]'s message unless `event` matches the schema.
#[track_caller]
pub fn assert_event(event: &Value) {
    if let Err(message) = check_event(event) {
        panic!("{message}");
    }
}

/// One validation error as a sentence with its place; for "none of these alternatives" (a
/// nullable field, say), what each alternative found, so the message reaches the field at fault.
fn describe(error: &ValidationError<'_>) -> String {
    let mut text = match error.instance_path().as_str() {
        "" => error.to_string(),
        path => format!("at {path}: {error}"),
    };
    if let ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } = error.kind() {
        let alternatives: Vec<String> = context
            .iter()
            .map(|errors| errors.iter().map(describe).collect::<Vec<_>>().join("; "))
            .collect();
        text.push_str(&format!(" [{}]", alternatives.join(" | ")));
    }
    text
}

/// The event as JSON, cut to a readable length (an image result can be megabytes).
fn show(event: &Value) -> String {
    const MAX: usize = 400;
    let text = event.to_string();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_committed_schema_is_the_generated_one() {
        // `schema()` refuses a stale file; this names the fix when it does.
        if let Err(message) = schema() {
            panic!("{message}");
        }
    }

    #[test]
    fn a_valid_event_passes() {
        check_event(&json!({"type": "text_delta", "index": 0, "text": "Hel"})).unwrap();
        check_event(&json!({"type": "block_start", "index": 1, "kind": "tool_use",
                            "tool": {"id": "t", "name": "bash"}}))
        .unwrap();
        check_event(&json!({"type": "message_complete", "usage": null, "stop_reason": "whatever"})).unwrap();
    }

    #[test]
    fn a_bad_field_is_named_with_its_path() {
        let e = check_event(&json!({"type": "block_start", "index": 1, "kind": "tool_use",
                                    "tool": {"id": 7, "name": "bash"}}))
        .unwrap_err();
        assert!(e.contains("event `block_start`") && e.contains("at /tool/id"), "{e}");
        let e = check_event(&json!({"type": "text_delta", "index": 0})).unwrap_err();
        assert!(e.contains("\"text\" is a required property"), "{e}");
        let e = check_event(&json!({"type": "text_delta", "index": -1, "text": ""})).unwrap_err();
        assert!(e.contains("at /index"), "{e}");
    }

    #[test]
    fn the_old_shapes_are_refused() {
        // stream-json's version 1 delta, and the C ABI's version 1 block start (no `type`).
        let e = check_event(&json!({"type": "delta", "index": 0, "kind": "text", "text": "a"})).unwrap_err();
        assert!(
            e.contains("event type `delta` is not in") && e.contains("text_delta"),
            "{e}"
        );
        let e = check_event(&json!({"index": 1, "id": "t", "name": "bash"})).unwrap_err();
        assert!(e.contains("no string `type`"), "{e}");
        // A missing `tool` is not the same as `tool: null`.
        let e = check_event(&json!({"type": "block_start", "index": 0, "kind": "text"})).unwrap_err();
        assert!(e.contains("\"tool\" is a required property"), "{e}");
    }

    #[test]
    fn check_events_names_the_one_at_fault() {
        let events = [
            json!({"type": "compaction_start", "tokens_before": 9}),
            json!({"type": "compaction_start", "tokens_before": "9"}),
        ];
        let e = check_events(&events).unwrap_err();
        assert!(e.starts_with("event 2 of the stream: "), "{e}");
        assert_eq!(check_events(&events[..1]), Ok(1));
    }

    #[test]
    fn a_long_event_is_cut_in_messages() {
        let e = check_event(&json!({"type": "text_delta", "index": "x", "text": "é".repeat(5000)})).unwrap_err();
        assert!(e.len() < 2000 && e.contains("bytes)"), "{}", e.len());
    }
}
