//! The export end to end, in process: spans shaped like panto-core's go through the layer to
//! the test kit's OTLP receiver, over HTTP and over gRPC, configured only by the standard
//! variables. (The CLI's tests run the same against a real `panto -p` turn.)
//!
//! The exporters read the process environment, which the test sets: it holds
//! [`PROCESS_ENV`](crate::PROCESS_ENV) throughout.

use std::time::Duration;

use panto_otel::Export;
use panto_testkit::otlp::{OtlpReceiver, Transport};
use serde_json::json;
use tracing::field::Empty;
use tracing_subscriber::layer::SubscriberExt;

/// A turn as panto-core records it (counts as `i64`, the finish reason as one string): a
/// request, a retry, a tool call.
fn emit_a_turn() {
    let turn = tracing::info_span!(
        target: "panto_core",
        "invoke_agent",
        otel.name = "invoke_agent panto",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.request.model = "claude-test",
    );
    let _turn = turn.enter();
    tracing::event!(
        name: "panto.retry",
        target: "panto_core",
        tracing::Level::WARN,
        panto.retry.attempt = 2i64,
        error.type = "http_429",
        "retrying"
    );
    let chat = tracing::info_span!(
        target: "panto_core",
        "chat",
        otel.name = "chat claude-test",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = "claude-test",
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        panto.request.attempt = 1i64,
    );
    chat.record("gen_ai.usage.input_tokens", 120i64);
    chat.record("gen_ai.usage.output_tokens", 7i64);
    chat.record("gen_ai.usage.cache_read.input_tokens", 100i64);
    chat.record("gen_ai.response.finish_reasons", "end_turn");
    drop(chat);
    let tool = tracing::info_span!(
        target: "panto_core",
        "execute_tool",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = "read",
        panto.tool.is_error = false,
    );
    drop(tool);
    // A library's span is not exported, nor another crate's events: the MCP library traces
    // the arguments of every tool call.
    drop(tracing::info_span!(target: "hyper::client", "connect"));
    let mcp = tracing::trace_span!(target: "rmcp::service", "serve_inner");
    drop(mcp);
    tracing::trace!(target: "rmcp::service", arguments = "{\"path\":\"ARG-SECRET-314\"}", "send request");
    // The program's own target, named to `layer_with_targets`, is.
    drop(tracing::info_span!(target: "my_program::http", "POST /prompt"));
}

async fn export_to(receiver: &OtlpReceiver, protocol: &str, endpoint: String) {
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    std::env::set_var("OTEL_EXPORTER_OTLP_PROTOCOL", protocol);
    std::env::set_var("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-token=tok-SECRET-777");
    let export = Export::from_env("panto-otel-test")
        .unwrap()
        .expect("an endpoint is set");
    let subscriber = tracing_subscriber::registry().with(export.layer_with_targets(&["my_program"]));
    tracing::subscriber::with_default(subscriber, emit_a_turn);
    let flushed = tokio::task::spawn_blocking(move || export.shutdown(Duration::from_secs(20)))
        .await
        .unwrap();
    assert!(flushed, "the export flushed into the receiver ({protocol})");
    let _ = receiver;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_reaches_an_otlp_receiver_over_http_and_grpc() {
    let _env = crate::PROCESS_ENV.lock().await;
    crate::clear_otel_env();
    let unset = Export::from_env("x").unwrap();
    assert!(unset.is_none(), "nothing is set up without an endpoint");

    for (protocol, transport) in [("http/protobuf", Transport::Http), ("grpc", Transport::Grpc)] {
        let receiver = OtlpReceiver::start().await;
        let endpoint = match transport {
            Transport::Http => receiver.http_endpoint(),
            Transport::Grpc => receiver.grpc_endpoint(),
        };
        export_to(&receiver, protocol, endpoint).await;

        let requests = receiver.requests();
        assert!(requests.iter().all(|r| r.transport == transport), "{protocol}");
        assert!(
            requests.iter().all(|r| r
                .headers
                .contains(&("x-collector-token".to_owned(), "tok-SECRET-777".to_owned()))),
            "OTEL_EXPORTER_OTLP_HEADERS reach the collector ({protocol})"
        );

        let spans = receiver.spans();
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), 4, "{protocol}: {names:?}");
        assert!(
            names.contains(&"POST /prompt"),
            "{protocol}: the program's span: {names:?}"
        );
        assert!(
            receiver.payloads().iter().all(|p| !p.contains("ARG-SECRET-314")),
            "{protocol}: the MCP library's trace events carry tool arguments and are not exported"
        );
        let turn = &receiver.spans_named("invoke_agent panto")[0];
        let chat = &receiver.spans_named("chat claude-test")[0];
        let tool = &receiver.spans_named("execute_tool")[0];
        assert_eq!(turn.parent_span_id, "", "the turn is the root");
        assert_eq!(chat.parent_span_id, turn.span_id);
        assert_eq!(tool.parent_span_id, turn.span_id);
        assert_eq!(chat.trace_id, turn.trace_id);
        assert_eq!(chat.attributes["gen_ai.usage.input_tokens"], json!(120));
        assert_eq!(chat.attributes["gen_ai.usage.cache_read.input_tokens"], json!(100));
        assert_eq!(chat.attributes["panto.request.attempt"], json!(1));
        assert_eq!(
            chat.attributes["gen_ai.response.finish_reasons"],
            json!(["end_turn"]),
            "the GenAI conventions' string[]"
        );
        assert_eq!(chat.attributes["gen_ai.request.model"], json!("claude-test"));
        assert_eq!(turn.service_name, "panto-otel-test");
        assert!(
            turn.events.iter().any(|(name, _)| name == "retrying"),
            "{:?}",
            turn.events
        );

        let tokens = receiver.metric("panto.tokens").expect("tokens by kind");
        assert_eq!(tokens.total(&[("gen_ai.token.type", json!("input"))]), 120.0);
        assert_eq!(tokens.total(&[("gen_ai.token.type", json!("output"))]), 7.0);
        assert_eq!(tokens.total(&[("gen_ai.token.type", json!("cache_read"))]), 100.0);
        let usage = receiver
            .metric("gen_ai.client.token.usage")
            .expect("the GenAI token histogram");
        assert_eq!(usage.count(&[("gen_ai.token.type", json!("input"))]), 1);
        assert_eq!(usage.total(&[("gen_ai.token.type", json!("output"))]), 7.0);
        let duration = receiver.metric("gen_ai.client.operation.duration").unwrap();
        assert_eq!(duration.unit, "s");
        assert_eq!(duration.count(&[("gen_ai.request.model", json!("claude-test"))]), 1);
        assert_eq!(receiver.metric("panto.turns").unwrap().total(&[]), 1.0);
        assert_eq!(receiver.metric("panto.requests").unwrap().total(&[]), 1.0);
        let tools = receiver.metric("panto.tool.calls").unwrap();
        assert_eq!(tools.total(&[("gen_ai.tool.name", json!("read"))]), 1.0);
        let retries = receiver.metric("panto.retries").unwrap();
        assert_eq!(retries.total(&[("error.type", json!("http_429"))]), 1.0);
    }
}
