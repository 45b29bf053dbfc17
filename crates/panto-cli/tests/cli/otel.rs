//! OpenTelemetry export (the `otel` feature): a `panto -p` tool turn against the mock server,
//! with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at the test kit's OTLP receiver, arrives as one
//! trace (the turn's span parent of its requests and its tool call, with the GenAI attributes)
//! and as metrics, over HTTP/protobuf and over gRPC; neither the API key nor the collector's
//! token is anywhere they must not be; and a collector that never answers does not keep panto
//! from exiting.

use panto_testkit::otlp::{OtlpReceiver, ReceivedSpan, Transport};
use panto_testkit::{script, MockServer, Reply};
use serde_json::json;

use super::support::{Home, KEY};

/// The collector's token, sent as a header; it must reach the collector and nothing else.
const COLLECTOR_TOKEN: &str = "otel-SECRET-token-5151";

/// Runs a `read` tool turn exporting to `endpoint` over `protocol`; returns the home (for its
/// files) and panto's stderr.
async fn tool_turn_exported(protocol: &str, endpoint: String) -> (Home, String) {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text_and_tool_uses(
        "Let me look.",
        &[("toolu_01", "read", r#"{"path":"notes.txt"}"#)],
    )));
    server.push(Reply::sse(script::anthropic_text("It says mango.")));
    let mut home = Home::new();
    home.anthropic(&server)
        .set("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .set("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .set(
            "OTEL_EXPORTER_OTLP_HEADERS",
            &format!("authorization=Bearer {COLLECTOR_TOKEN}"),
        )
        .set("PANTO_LOG", "trace");
    std::fs::write(home.work().join("notes.txt"), "the secret word is mango\n").unwrap();
    let out = home.run(&["-p", "what is in notes.txt?"], None).await;
    assert_eq!(out.ok(), "It says mango.\n");
    (home, out.stderr)
}

fn only<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == name).collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(found.len(), 1, "one span {name:?} among {names:?}");
    found[0]
}

/// What every export of the tool turn must show, whatever the transport.
fn assert_the_turn_arrived(receiver: &OtlpReceiver, transport: Transport) {
    let requests = receiver.requests();
    assert!(!requests.is_empty(), "the receiver got the export");
    assert!(requests.iter().all(|r| r.transport == transport));
    assert!(
        requests.iter().all(|r| r
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && v.contains(COLLECTOR_TOKEN))),
        "OTEL_EXPORTER_OTLP_HEADERS reach the collector"
    );

    let spans = receiver.spans();
    let turn = only(&spans, "invoke_agent panto");
    assert_eq!(turn.parent_span_id, "", "the turn is the trace's root");
    assert_eq!(turn.service_name, "panto");
    assert_eq!(turn.attributes["gen_ai.operation.name"], json!("invoke_agent"));
    let requests: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "chat claude-sonnet-4-5").collect();
    assert_eq!(requests.len(), 2, "two provider requests: {spans:#?}");
    for request in &requests {
        assert_eq!(request.trace_id, turn.trace_id);
        assert_eq!(request.parent_span_id, turn.span_id, "a request is the turn's child");
        assert_eq!(request.attributes["gen_ai.operation.name"], json!("chat"));
        assert_eq!(request.attributes["gen_ai.request.model"], json!("claude-sonnet-4-5"));
        assert_eq!(request.attributes["gen_ai.provider.name"], json!("anthropic"));
        assert!(
            request.attributes["gen_ai.usage.input_tokens"].is_i64(),
            "{:?}",
            request.attributes
        );
        assert!(request.attributes["gen_ai.usage.output_tokens"].is_i64());
    }
    let tool = only(&spans, "execute_tool read");
    assert_eq!(tool.parent_span_id, turn.span_id, "the tool call is the turn's child");
    assert_eq!(tool.attributes["gen_ai.tool.name"], json!("read"));
    assert_eq!(tool.attributes["gen_ai.tool.call.id"], json!("toolu_01"));

    let turns = receiver.metric("panto.turns").expect("the turn counter");
    assert_eq!(turns.total(&[]), 1.0);
    let sent = receiver.metric("panto.requests").expect("the request counter");
    assert_eq!(sent.total(&[("gen_ai.request.model", json!("claude-sonnet-4-5"))]), 2.0);
    let tools = receiver.metric("panto.tool.calls").expect("the tool call counter");
    assert_eq!(tools.total(&[("gen_ai.tool.name", json!("read"))]), 1.0);
    let usage = receiver
        .metric("gen_ai.client.token.usage")
        .expect("the GenAI token histogram");
    assert_eq!(usage.count(&[("gen_ai.token.type", json!("input"))]), 2);
    assert_eq!(usage.count(&[("gen_ai.token.type", json!("output"))]), 2);
    let tokens = receiver.metric("panto.tokens").expect("tokens by kind");
    let input: i64 = requests
        .iter()
        .map(|r| r.attributes["gen_ai.usage.input_tokens"].as_i64().unwrap())
        .sum();
    assert_eq!(tokens.total(&[("gen_ai.token.type", json!("input"))]), input as f64);
    let duration = receiver
        .metric("gen_ai.client.operation.duration")
        .expect("the GenAI duration histogram");
    assert_eq!(duration.unit, "s");
    assert_eq!(duration.count(&[("gen_ai.operation.name", json!("chat"))]), 2);
    let appends = receiver
        .metric("panto.store.append.duration")
        .expect("the store append latency");
    assert_eq!(appends.unit, "s");
    assert!(
        appends.count(&[("panto.store.kind", json!("jsonl"))]) >= 1,
        "{appends:?}"
    );
    let appended = spans.iter().filter(|s| s.name == "panto.store.append").count() as u64;
    assert_eq!(appends.count(&[]), appended, "one measurement per append span");
}

/// No export and no file panto wrote holds the API key; the collector's token is nowhere but
/// in the requests to the collector.
fn assert_no_secret_leaked(receiver: &OtlpReceiver, home: &Home, stderr: &str) {
    for payload in receiver.payloads() {
        assert!(!payload.contains(KEY), "the API key is in an export: {payload}");
    }
    for body in receiver
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
    {
        assert!(
            !body.contains(COLLECTOR_TOKEN),
            "the collector's token is in an exported span or metric"
        );
    }
    assert!(!stderr.contains(COLLECTOR_TOKEN) && !stderr.contains(KEY), "{stderr}");
    for entry in walk(&home.dir.path().join("home")) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(KEY), "the API key is in {}", entry.display());
        assert!(
            !text.contains(COLLECTOR_TOKEN),
            "the collector's token is in {}",
            entry.display()
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_turn_is_exported_as_a_trace_and_metrics_over_http() {
    let receiver = OtlpReceiver::start().await;
    let (home, stderr) = tool_turn_exported("http/protobuf", receiver.http_endpoint()).await;
    assert_the_turn_arrived(&receiver, Transport::Http);
    assert_no_secret_leaked(&receiver, &home, &stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_turn_is_exported_as_a_trace_and_metrics_over_grpc() {
    let receiver = OtlpReceiver::start().await;
    let (home, stderr) = tool_turn_exported("grpc", receiver.grpc_endpoint()).await;
    assert_the_turn_arrived(&receiver, Transport::Grpc);
    assert_no_secret_leaked(&receiver, &home, &stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn panto_exits_when_the_collector_never_answers() {
    // A collector that accepts connections and never answers, with an export timeout of ten
    // minutes: only panto's own bound on the flush lets it exit.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            open.push(stream);
        }
    });
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Hello.")));
    let mut home = Home::new();
    home.anthropic(&server)
        .set("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .set("OTEL_EXPORTER_OTLP_TIMEOUT", "600000");
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.ok(), "Hello.\n", "the answer is printed and panto exits 0");
    assert!(
        out.stderr
            .contains("warning: not every span and metric reached the OpenTelemetry collector within 3s"),
        "{}",
        out.stderr
    );
    held.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsupported_protocol_is_a_warning_and_the_turn_runs() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("Hello.")));
    let mut home = Home::new();
    home.anthropic(&server)
        .set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.ok(), "Hello.\n");
    assert!(
        out.stderr.contains(
            "warning: OpenTelemetry export is off: OTEL_EXPORTER_OTLP_PROTOCOL=\"http/json\" is not a supported OTLP protocol (use http/protobuf or grpc)"
        ),
        "{}",
        out.stderr
    );
}
