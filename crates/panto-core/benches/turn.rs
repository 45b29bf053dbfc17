//! A whole streamed turn through `Agent` + reqwest against the loopback mock server, against
//! reading the same response with a bare reqwest client.
//!
//! Target (issue 7): with 100,000 text deltas, the agent adds at most 2 µs per event over the
//! bare client. `cargo xtask bench` computes `(turn − bare) / deltas` from the two means.
//!
//! Both sides send the same valid Messages request to the same server, which answers with the
//! same scripted body (`script::anthropic_text_deltas(100_000)`, about 15 MB). The agent uses a
//! `NullStore`, so this measures the engine (HTTP, SSE, decoding, events, the conversation), not
//! the disk; the store has benches of its own in panto-store-fs.
//!
//! `agent-100k-deltas` runs with tracing compiled in and no subscriber (every span disabled, as
//! in an embedder that installs none); `agent-100k-deltas-debug-log` runs the same turn with a
//! `fmt` subscriber writing to a file with `PANTO_LOG=debug`'s filter (panto at `debug`, the
//! rest at `warn`). Targets: at most 1% and 5% over the turn before tracing existed
//! (docs/performance.md).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures_util::StreamExt;
use panto_core::{Agent, ApiStyle, Config, ContentDelta, Event, NullStore, ProviderConfig, Session};
use panto_testkit::bench::Facts;
use panto_testkit::{script, MockServer, Reply};
use tokio::runtime::Runtime;

/// Text deltas in the response.
const DELTAS: usize = 100_000;

const KEY: &str = "bench-key";
const MODEL: &str = "claude-sonnet-4-5";

/// What one turn produced, checked so that a broken turn cannot pass as a fast one.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    deltas: usize,
    bytes: usize,
}

fn agent(server: &MockServer) -> Agent {
    let mut config = Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, MODEL)
            .with_base_url(server.anthropic_base_url())
            .with_api_key(KEY),
    );
    config.idle_timeout = Duration::from_secs(30);
    Agent::new(config, Session::create(NullStore::shared()), None).unwrap_or_else(|e| panic!("{e}"))
}

/// One turn through the agent: every event pulled, the text deltas counted.
async fn agent_turn(agent: &mut Agent) -> Outcome {
    // Each turn starts from an empty conversation, so every request is the same size.
    agent.conversation_mut().messages.clear();
    let mut stream = agent.run("hi".into());
    let mut outcome = Outcome { deltas: 0, bytes: 0 };
    loop {
        match stream.next().await {
            Ok(Some(Event::Delta {
                delta: ContentDelta::Text(text),
                ..
            })) => {
                outcome.deltas += 1;
                outcome.bytes += text.len();
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => panic!("the turn failed: {e}"),
        }
    }
    outcome
}

/// The same request sent with a bare reqwest client, the response body read to the end.
async fn bare_read(client: &reqwest::Client, url: &str, body: &[u8]) -> usize {
    let response = client
        .post(url)
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body.to_vec())
        .send()
        .await
        .unwrap_or_else(|e| panic!("bare request failed: {e}"));
    assert!(
        response.status().is_success(),
        "bare request: HTTP {}",
        response.status()
    );
    let mut stream = response.bytes_stream();
    let mut n = 0;
    while let Some(chunk) = stream.next().await {
        n += chunk.unwrap_or_else(|e| panic!("bare body failed: {e}")).len();
    }
    n
}

/// The file log at `debug`, as `PANTO_LOG=debug` writes it (into a file that is thrown away):
/// panto's own targets at `debug`, every other crate at `warn`, as the CLI's filter has it.
fn debug_log_subscriber() -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::Layer;

    let log_file = tempfile::tempfile().unwrap_or_else(|e| panic!("{e}"));
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::WARN)
        .with_target("panto_core", tracing::Level::DEBUG);
    tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(std::sync::Mutex::new(log_file))
            .with_ansi(false)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_filter(filter),
    )
}

/// `PANTO_TURN_COUNT=VARIANT:N` (`agent` or `debug-log`): run N agent turns and exit, without
/// criterion. Under `valgrind --tool=callgrind` two such runs (N = 1 and N = 3) give the
/// instructions of one turn, a count that does not move with whatever else the machine is
/// doing; docs/performance.md ("Tracing") compares the variants, and a build with the `tracing`
/// crate's `max_level_off` feature, which compiles every span out, that way.
fn counted_run() -> Option<(String, u32)> {
    let spec = std::env::var("PANTO_TURN_COUNT").ok()?;
    let (variant, turns) = spec
        .split_once(':')
        .unwrap_or_else(|| panic!("PANTO_TURN_COUNT={spec:?}: expected VARIANT:N"));
    assert!(
        variant == "agent" || variant == "debug-log",
        "PANTO_TURN_COUNT={spec:?}: the variant is agent or debug-log"
    );
    let turns = turns
        .parse()
        .unwrap_or_else(|e| panic!("PANTO_TURN_COUNT={spec:?}: N: {e}"));
    Some((variant.to_owned(), turns))
}

fn turn(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let server = rt.block_on(MockServer::start());
    let body = script::anthropic_text_deltas(DELTAS);
    let mut agent = rt.block_on(async { agent(&server) });
    let client = reqwest::Client::new();
    let url = format!("{}/v1/messages", server.anthropic_base_url());
    let request = serde_json::to_vec(&serde_json::json!({
        "model": MODEL,
        "max_tokens": 8192,
        "stream": true,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }))
    .unwrap_or_else(|e| panic!("{e}"));

    // Check both sides once before timing them.
    server.push(Reply::sse(body.clone()));
    let outcome = rt.block_on(agent_turn(&mut agent));
    assert_eq!(outcome.deltas, DELTAS, "the agent saw every delta");
    server.push(Reply::sse(body.clone()));
    let read = rt.block_on(bare_read(&client, &url, &request));
    assert!(
        read >= body.len(),
        "the bare client read the whole body ({read} of {})",
        body.len()
    );
    if let Some(rejected) = server.requests().iter().find_map(|r| r.validation.clone()) {
        panic!("the mock server rejected a request: {rejected}");
    }
    if let Some((variant, turns)) = counted_run() {
        // Run exactly `turns` turns of one variant and stop, for instruction counting (below).
        let _logging = (variant == "debug-log").then(|| tracing::subscriber::set_default(debug_log_subscriber()));
        for _ in 0..turns {
            server.push(Reply::sse(body.clone()));
            assert_eq!(rt.block_on(agent_turn(&mut agent)).deltas, DELTAS);
        }
        std::process::exit(0);
    }

    let mut facts = Facts::new("turn");
    for id in [
        "turn/agent-100k-deltas",
        "turn/agent-100k-deltas-debug-log",
        "turn/bare-reqwest-100k-deltas",
    ] {
        facts.add(id, "deltas", DELTAS);
        facts.add(id, "bytes", body.len());
    }
    facts.save();

    let mut group = c.benchmark_group("turn");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(DELTAS as u64));
    // `iter_custom` so that queueing the reply (a copy of the body) is not timed.
    group.bench_function("agent-100k-deltas", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                server.push(Reply::sse(body.clone()));
                let start = Instant::now();
                let outcome = rt.block_on(agent_turn(&mut agent));
                total += start.elapsed();
                assert_eq!(outcome.deltas, DELTAS);
            }
            total
        })
    });
    // The turn runs on this thread (`block_on`), so a thread-default subscriber sees its spans.
    let logging = tracing::subscriber::set_default(debug_log_subscriber());
    group.bench_function("agent-100k-deltas-debug-log", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                server.push(Reply::sse(body.clone()));
                let start = Instant::now();
                let outcome = rt.block_on(agent_turn(&mut agent));
                total += start.elapsed();
                assert_eq!(outcome.deltas, DELTAS);
            }
            total
        })
    });
    drop(logging);
    group.bench_function("bare-reqwest-100k-deltas", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                server.push(Reply::sse(body.clone()));
                let start = Instant::now();
                let read = rt.block_on(bare_read(&client, &url, &request));
                total += start.elapsed();
                assert!(read >= body.len());
            }
            total
        })
    });
    group.finish();
    // The server's record of requests grows with every iteration; nothing else reads it.
    server.reset();
}

criterion_group!(benches, turn);
criterion_main!(benches);
