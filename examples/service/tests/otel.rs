//! The service's OpenTelemetry export, end to end: `panto-service` started with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at the test kit's OTLP receiver runs a turn, and once it
//! is stopped (SIGTERM: it flushes on the way out) the receiver holds the turn's trace under the
//! HTTP request's span, and its metrics; the API key is nowhere in the export.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{start_instance, streamed_text, Client};
use panto_testkit::otlp::OtlpReceiver;
use panto_testkit::postgres::server;
use panto_testkit::{script, MockServer, Reply};
use serde_json::json;

const KEY: &str = "sk-service-otel-SECRET-4321";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_reaches_the_otlp_receiver_as_a_trace_and_metrics() {
    let database = server().create_database().await;
    let mock = MockServer::start().await;
    let receiver = OtlpReceiver::start().await;
    let endpoint = receiver.http_endpoint();
    let mut instance = start_instance(
        &database,
        &mock,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("PANTO_SERVICE_API_KEY", KEY),
        ],
    );
    let http = Client::new();
    let (status, started) = http
        .call(reqwest::Method::POST, format!("{}/sessions", instance.base), None)
        .await;
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().expect("an id").to_owned();
    mock.push(Reply::sse(script::anthropic_text("exported answer")));
    let (status, events) = http.prompt(&instance, &id, "hi").await;
    assert_eq!(status, 200, "{events:?}");
    assert_eq!(streamed_text(&events), "exported answer");

    // SIGTERM: the service stops serving and flushes the export before it exits.
    let pid = instance.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success(), "kill -TERM {pid}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = instance.child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "panto-service did not stop after SIGTERM");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "panto-service exited with {exit}");

    let request = receiver.spans_named("POST /sessions/{id}/prompt");
    assert_eq!(request.len(), 1, "{:?}", receiver.spans());
    let request = &request[0];
    assert_eq!(request.service_name, "panto-service");
    assert_eq!(request.attributes["http.response.status_code"], json!(200));
    let turn = &receiver.spans_named("invoke_agent panto")[0];
    assert_eq!(
        turn.parent_span_id, request.span_id,
        "the turn is a child of the HTTP request"
    );
    assert_eq!(turn.trace_id, request.trace_id);
    assert_eq!(turn.attributes["gen_ai.conversation.id"], json!(id));
    assert_eq!(turn.attributes["panto.turn.outcome"], json!("complete"));
    let chat = &receiver.spans_named("chat claude-sonnet-4-5")[0];
    assert_eq!(chat.parent_span_id, turn.span_id);
    assert!(
        chat.attributes["gen_ai.usage.input_tokens"].is_i64(),
        "{:?}",
        chat.attributes
    );
    assert_eq!(chat.attributes["gen_ai.response.finish_reasons"], json!(["end_turn"]));
    let append = receiver.spans_named("panto.store.append");
    assert!(
        append.iter().any(|s| s.parent_span_id == turn.span_id),
        "the turn's store append: {append:?}"
    );

    assert_eq!(receiver.metric("panto.turns").expect("panto.turns").total(&[]), 1.0);
    assert_eq!(
        receiver.metric("panto.requests").expect("panto.requests").total(&[]),
        1.0
    );
    let tokens = receiver.metric("panto.tokens").expect("panto.tokens");
    assert!(tokens.total(&[("gen_ai.token.type", json!("output"))]) > 0.0);
    let appends = receiver
        .metric("panto.store.append.duration")
        .expect("panto.store.append.duration");
    assert!(appends.count(&[("panto.store.kind", json!("postgres"))]) >= 1);
    assert!(
        !receiver.payloads().iter().any(|p| p.contains(KEY)),
        "the API key reached the export"
    );
}
