//! The event JSON, pinned type by type (docs/events.md is the specification these follow), each
//! checked against docs/events.schema.json and read back into the same `Event`.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::conversation::{ContentBlock, StopReason, ToolResultContent, Usage};

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 2,
        cache_write_tokens: 3,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    }
}

/// One of every JSON type, with the JSON it must be written as.
fn every_type() -> Vec<(Event, Value)> {
    let u = json!({"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 2, "cache_write_tokens": 3});
    vec![
        (
            Event::BlockStart {
                index: 0,
                kind: BlockKind::Text,
                tool: None,
            },
            json!({"type": "block_start", "index": 0, "kind": "text", "tool": null}),
        ),
        (
            Event::BlockStart {
                index: 1,
                kind: BlockKind::ToolUse,
                tool: Some(ToolDetails {
                    id: "toolu_1".into(),
                    name: "get_weather".into(),
                }),
            },
            json!({"type": "block_start", "index": 1, "kind": "tool_use",
                   "tool": {"id": "toolu_1", "name": "get_weather"}}),
        ),
        (
            Event::BlockStart {
                index: 2,
                kind: BlockKind::RedactedThinking,
                tool: None,
            },
            json!({"type": "block_start", "index": 2, "kind": "redacted_thinking", "tool": null}),
        ),
        (
            Event::BlockStart {
                index: 1,
                kind: BlockKind::Reasoning,
                tool: None,
            },
            json!({"type": "block_start", "index": 1, "kind": "reasoning", "tool": null}),
        ),
        (
            Event::BlockComplete {
                index: 1,
                block: ContentBlock::Reasoning {
                    id: "rs_1".into(),
                    summary: vec!["**Checking**".into()],
                    encrypted_content: "gAAAAB".into(),
                },
            },
            json!({"type": "block_complete", "index": 1, "block": {"type": "reasoning", "id": "rs_1",
                   "summary": ["**Checking**"], "encrypted_content": "gAAAAB"}}),
        ),
        (
            Event::Delta {
                index: 0,
                delta: ContentDelta::Text("Hel".into()),
            },
            json!({"type": "text_delta", "index": 0, "text": "Hel"}),
        ),
        (
            Event::Delta {
                index: 0,
                delta: ContentDelta::Thinking("Let me".into()),
            },
            json!({"type": "thinking_delta", "index": 0, "text": "Let me"}),
        ),
        (
            Event::Delta {
                index: 1,
                delta: ContentDelta::ToolInput("{\"ci".into()),
            },
            json!({"type": "tool_input_delta", "index": 1, "partial_json": "{\"ci"}),
        ),
        (
            Event::BlockComplete {
                index: 0,
                block: ContentBlock::text("Hello"),
            },
            json!({"type": "block_complete", "index": 0, "block": {"type": "text", "text": "Hello"}}),
        ),
        (
            Event::BlockComplete {
                index: 1,
                block: ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "get_weather".into(),
                    input: json!({"city": "Paris"}),
                },
            },
            json!({"type": "block_complete", "index": 1, "block": {"type": "tool_use", "id": "toolu_1",
                   "name": "get_weather", "input": {"city": "Paris"}}}),
        ),
        (
            Event::MessageComplete {
                usage: None,
                stop_reason: StopReason::ToolUse,
            },
            json!({"type": "message_complete", "usage": null, "stop_reason": "tool_use"}),
        ),
        (
            Event::MessageComplete {
                usage: Some(usage(10, 5)),
                stop_reason: StopReason::Other("cancelled".into()),
            },
            json!({"type": "message_complete", "usage": u, "stop_reason": "cancelled"}),
        ),
        (
            Event::ToolDispatchStart {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                input: json!({"city": "Paris"}),
            },
            json!({"type": "tool_start", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}),
        ),
        (
            Event::ToolDispatchComplete {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                content: vec![
                    ToolResultContent::Text { text: "sunny".into() },
                    ToolResultContent::Image {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                ],
                is_error: true,
            },
            json!({"type": "tool_complete", "id": "toolu_1", "name": "get_weather",
                   "content": [{"type": "text", "text": "sunny"},
                               {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}],
                   "is_error": true}),
        ),
        (
            Event::ProviderRetry(RetryInfo {
                attempt: 2,
                delay: Duration::from_millis(1500),
                reason: "HTTP 529".into(),
                discard_partial: false,
            }),
            json!({"type": "retry", "attempt": 2, "delay_ms": 1500, "reason": "HTTP 529", "discard_partial": false}),
        ),
        (
            Event::CompactionStart { tokens_before: 170_000 },
            json!({"type": "compaction_start", "tokens_before": 170_000}),
        ),
        (
            Event::CompactionComplete {
                tokens_before: 170_000,
                tokens_after: 21_000,
                usage: None,
            },
            json!({"type": "compaction_complete", "tokens_before": 170_000, "tokens_after": 21_000, "usage": null}),
        ),
        (
            Event::TurnComplete {
                usage: usage(10, 5),
                steps: 2,
                stop_reason: StopReason::EndTurn,
            },
            json!({"type": "turn_complete", "usage": u, "steps": 2, "stop_reason": "end_turn"}),
        ),
        (
            Event::Steer {
                text: "use blue".into(),
            },
            json!({"type": "steer", "text": "use blue"}),
        ),
        (
            Event::FollowUpStart {
                text: "and then".into(),
            },
            json!({"type": "follow_up_start", "text": "and then"}),
        ),
    ]
}

#[test]
fn every_event_is_written_as_docs_events_md_says() {
    for (event, expected) in every_type() {
        let written = serde_json::to_value(&event).unwrap();
        assert_eq!(written, expected, "{event:?}");
        panto_testkit::assert_event(&written);
        let read: Event = serde_json::from_value(written).unwrap();
        assert_eq!(read, event, "the JSON carries everything the event holds");
    }
}

#[test]
fn every_type_the_schema_defines_is_written_by_some_event() {
    // The schema and these examples cover each other: a type nobody writes, or an event whose
    // type the schema lacks, fails here.
    let mut written: Vec<String> = every_type()
        .iter()
        .map(|(_, json)| json["type"].as_str().unwrap().to_owned())
        .collect();
    written.sort();
    written.dedup();
    let mut defined = panto_testkit::event_types().unwrap();
    defined.sort();
    assert_eq!(written, defined);
}

#[test]
fn the_schema_names_its_version_and_requires_every_field() {
    let schema = event_schema();
    assert_eq!(
        schema["title"],
        format!("panto event JSON, version {EVENT_SCHEMA_VERSION}")
    );
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    for branch in schema["oneOf"].as_array().unwrap() {
        let properties = branch["properties"].as_object().unwrap();
        let required: Vec<&str> = branch["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for name in properties.keys() {
            assert!(required.contains(&name.as_str()), "{name} of {branch} is not required");
        }
    }
    // Descriptions are plain text, not rustdoc.
    let text = schema.to_string();
    assert!(!text.contains("[`") && !text.contains("`]"), "{text}");
}

#[test]
fn a_huge_retry_delay_is_written_as_the_largest_number() {
    let event = Event::ProviderRetry(RetryInfo {
        attempt: 2,
        delay: Duration::MAX,
        reason: "r".into(),
        discard_partial: true,
    });
    assert_eq!(serde_json::to_value(&event).unwrap()["delay_ms"], u64::MAX);
}

#[test]
fn reading_names_what_is_wrong() {
    let e = serde_json::from_str::<Event>(r#"{"type":"delta","index":0,"kind":"text","text":"a"}"#).unwrap_err();
    assert!(e.to_string().contains("unknown variant `delta`"), "{e}");
    let e = serde_json::from_str::<Event>(r#"{"type":"text_delta","index":0}"#).unwrap_err();
    assert!(e.to_string().contains("missing field `text`"), "{e}");
    let e =
        serde_json::from_str::<Event>(r#"{"type":"block_start","index":0,"kind":"image","tool":null}"#).unwrap_err();
    assert!(e.to_string().contains("unknown variant `image`"), "{e}");
}
