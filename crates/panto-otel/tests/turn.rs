//! A real panto-core turn through the export: the attributes arrive with the types the GenAI
//! conventions give them, straight from how panto-core records them (counts as ints, the finish
//! reason as a string array), with no step in between that guesses types from names.
//!
//! The exporters read the process environment, which the test sets, and the subscriber is the
//! process's global one (the turn runs on the runtime's threads): the test holds
//! [`PROCESS_ENV`](crate::PROCESS_ENV) throughout.

use std::time::Duration;

use panto_core::{Agent, ApiStyle, Config, NullStore, ProviderConfig, Session, Usage};
use panto_otel::Export;
use panto_testkit::otlp::OtlpReceiver;
use panto_testkit::script::AnthropicScript;
use panto_testkit::{MockServer, Reply};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_exports_counts_as_ints_and_finish_reasons_as_an_array() {
    let _env = crate::PROCESS_ENV.lock().await;
    let receiver = OtlpReceiver::start().await;
    crate::clear_otel_env();
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.http_endpoint());
    let export = Export::from_env("panto-otel-turn")
        .unwrap()
        .expect("an endpoint is set");
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(export.layer())).unwrap();

    let server = MockServer::start().await;
    let usage = Usage {
        input_tokens: 1_000,
        output_tokens: 200,
        cache_read_tokens: 300,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    };
    server.push(Reply::sse(AnthropicScript::new().usage(usage).text("exported").build()));
    let provider = ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
        .with_base_url(server.anthropic_base_url())
        .with_api_key("sk-otel-turn-SECRET-1234");
    let mut agent = Agent::new(Config::new(provider), Session::create(NullStore::shared()), None).unwrap();
    let mut stream = agent.run("hello".into());
    while stream.next().await.unwrap().is_some() {}
    drop(stream);
    drop(agent);

    let flushed = tokio::task::spawn_blocking(move || export.shutdown(Duration::from_secs(20)))
        .await
        .unwrap();
    assert!(flushed, "the export flushed into the receiver");

    let chat = &receiver.spans_named("chat claude-sonnet-4-5")[0];
    let turn = &receiver.spans_named("invoke_agent panto")[0];
    for (span, name) in [(chat, "chat"), (turn, "invoke_agent")] {
        let a = &span.attributes;
        assert_eq!(a["gen_ai.usage.input_tokens"], json!(1_300), "{name}: {a:?}");
        assert_eq!(a["gen_ai.usage.output_tokens"], json!(200), "{name}");
        assert_eq!(a["gen_ai.usage.cache_read.input_tokens"], json!(300), "{name}");
        assert_eq!(a["gen_ai.usage.cache_creation.input_tokens"], json!(0), "{name}");
        assert_eq!(a["gen_ai.response.finish_reasons"], json!(["end_turn"]), "{name}");
    }
    assert_eq!(chat.attributes["panto.request.attempt"], json!(1));
    assert_eq!(chat.attributes["http.response.status_code"], json!(200));
    assert!(
        chat.attributes["gen_ai.request.max_tokens"].is_i64(),
        "{:?}",
        chat.attributes
    );
    assert!(chat.attributes["panto.duration_ms"].is_f64(), "{:?}", chat.attributes);
    assert_eq!(turn.attributes["panto.turn.steps"], json!(1));
    assert!(
        !receiver
            .payloads()
            .iter()
            .any(|p| p.contains("sk-otel-turn-SECRET-1234")),
        "the API key reached the export"
    );
}
