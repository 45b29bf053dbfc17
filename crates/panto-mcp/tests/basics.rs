//! A working server: tools, details, results, filters, read-only mode.

use panto_core::{ResultPart, ToolSource};
use panto_mcp::ServerConfig;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn tools_details_and_an_echo_call() {
    let source = start("fault", fault(&[])).await;
    let names: Vec<String> = source.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "echo",
            "crash",
            "hang",
            "sleep",
            "big",
            "garbage",
            "add_tool",
            "rich",
            "structured",
            "fail"
        ],
        "the server's own order"
    );
    let details = source.details();
    assert!(!details.protocol_version.is_empty());
    assert_eq!(details.server_name.as_deref(), Some("mcp-fault-server"));
    assert_eq!(details.instructions.as_deref(), Some("Use echo to test."));
    assert!(details.announces_tool_changes(), "{:?}", details.capabilities);

    let result = call(&source, "echo", json!({"text": "hello"})).await;
    assert!(!result.is_error);
    assert_eq!(text(&result), "hello");
    assert_eq!(source.status().await, panto_mcp::ServerStatus::Running);
}

#[tokio::test]
async fn results_keep_images_resources_structured_content_and_is_error() {
    let source = start("fault", fault(&[])).await;
    let rich = call(&source, "rich", json!({})).await;
    assert!(matches!(&rich.parts[0], ResultPart::Image(bytes) if bytes.starts_with(b"\x89PNG")));
    let rich_text = text(&rich);
    assert!(
        rich_text.contains("[resource file:///notes.txt (text/plain)]\nthe notes"),
        "{rich_text}"
    );
    assert!(
        rich_text.contains("[resource link file:///big.bin (big.bin)]"),
        "{rich_text}"
    );

    let structured = call(&source, "structured", json!({})).await;
    assert_eq!(text(&structured), r#"{"answer":42}"#);

    let failed = call(&source, "fail", json!({})).await;
    assert!(failed.is_error);
    assert_eq!(text(&failed), "it failed on purpose");
}

#[tokio::test]
async fn allowed_and_denied_tools_filter_the_offer_and_the_calls() {
    let source = start("fault", fault(&[]).allow_tool("e*").allow_tool("s*").deny_tool("sleep")).await;
    let names: Vec<String> = source.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["echo", "structured"]);
    let refused = call(&source, "crash", json!({})).await;
    assert!(refused.is_error);
    assert!(
        text(&refused).contains("does not offer a tool `crash`"),
        "{}",
        text(&refused)
    );
    assert_eq!(
        source.status().await,
        panto_mcp::ServerStatus::Running,
        "crash was never sent"
    );
}

#[tokio::test]
async fn read_only_mode_offers_only_tools_annotated_read_only() {
    let source = start("fault", fault(&[])).await;
    assert!(source.is_read_only("echo"));
    assert!(!source.is_read_only("crash"), "no annotation means not read-only");
    let before = source.generation();
    source.set_read_only_mode(true);
    assert_ne!(source.generation(), before, "the agent re-reads the offer");
    let names: Vec<String> = source.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["echo"]);
    assert_eq!(source.all_tools().len(), 10);
    source.set_read_only_mode(false);
    assert_eq!(source.tools().len(), 10);
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_an_error_result() {
    let source = start("fault", fault(&[])).await;
    let result = call(&source, "echo", json!([1, 2])).await;
    assert!(result.is_error);
    assert!(text(&result).contains("must be a JSON object"), "{}", text(&result));
}

#[tokio::test]
async fn the_server_stderr_goes_to_the_configured_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("state/panto/mcp/fault.log");
    let source = start("fault", fault(&[]).stderr_log(&log)).await;
    let result = call(&source, "crash", json!({})).await;
    assert!(result.is_error);
    assert!(
        eventually_async(|| std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("crashing on purpose"))
        .await,
        "log: {:?}",
        std::fs::read_to_string(&log)
    );
}

#[tokio::test]
async fn a_disabled_server_is_not_started() {
    let started = panto_mcp::start_all(vec![
        ("off".to_owned(), fault(&[]).enabled(false)),
        ("on".to_owned(), fault(&[])),
    ])
    .await;
    assert!(started.warnings.is_empty(), "{:?}", started.warnings);
    let names: Vec<&str> = started.sources.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["on"]);
    let err = panto_mcp::McpSource::start("off", ServerConfig::stdio("x").enabled(false))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("disabled"), "{err}");
}
