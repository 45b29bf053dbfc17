//! Prompt caching: a 50-step tool loop through `Agent` against the loopback mock server, which
//! bills every request by the Anthropic cache rules (`MockServer::enable_prompt_cache`).
//!
//! Target (issue 14): the input cost billed with panto's breakpoints is at most 1.05x the cost of
//! the best placement possible (each request reads all of the previous one and writes only what
//! is new). Recorded as facts for `cargo xtask bench`: the billed input cost, the best, and the
//! cost with no cache at all, in input-price tokens (a read costs 0.1, a five-minute write
//! 1.25). Criterion times the loop itself (51 requests, 50 tool calls).

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use panto_core::{async_trait, Agent, ApiStyle, Config, NullStore, ProviderConfig, Session};
use panto_core::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use panto_testkit::bench::Facts;
use panto_testkit::cache::{best_placement_cost, input_cost, min_cacheable_tokens};
use panto_testkit::script::AnthropicScript;
use panto_testkit::{MockServer, Reply};
use tokio::runtime::Runtime;

const STEPS: usize = 50;
const MODEL: &str = "claude-sonnet-4-5";
const ID: &str = "cache/tool-loop-50";

/// `echo`: returns its `text` argument, as a tool returning a file's contents would.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "echo".into(),
            description: "Returns its text. ".repeat(40),
            input_schema: serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        }
    }
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        Ok(ToolCallResult::text(
            call.input["text"].as_str().unwrap_or("").to_owned(),
        ))
    }
}

fn queue(server: &MockServer) {
    for step in 0..STEPS {
        let input = format!(r#"{{"text":"step {step}: {}"}}"#, "a line of tool output ".repeat(20));
        server.push(Reply::sse(
            AnthropicScript::new()
                .text(&format!("Step {step}."))
                .tool_use(&format!("toolu_{step:02}"), "echo", &input)
                .build(),
        ));
    }
    server.push(Reply::sse(AnthropicScript::new().text("Done.").build()));
}

async fn tool_loop(server: &MockServer) {
    let config = Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, MODEL)
            .with_base_url(server.anthropic_base_url())
            .with_api_key("bench-key"),
    )
    .with_max_steps(STEPS as u32 + 1);
    let mut agent = Agent::new(config, Session::create(NullStore::shared()), None).unwrap_or_else(|e| panic!("{e}"));
    agent.register_tool(Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    agent
        .conversation_mut()
        .add_system_message("You are a careful engineer. Read before you write. ".repeat(100));
    queue(server);
    let mut stream = agent.run("Work through every step.".into());
    while let Some(_event) = stream.next().await.unwrap_or_else(|e| panic!("the loop failed: {e}")) {}
}

fn cache(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let server = rt.block_on(MockServer::start());
    server.enable_prompt_cache();

    // The bill of one loop against an empty cache.
    rt.block_on(tool_loop(&server));
    let requests = server.requests();
    assert_eq!(requests.len(), STEPS + 1, "every step made its request");
    let mut billed = 0.0;
    let mut uncached = 0.0;
    let mut most_breakpoints = 0;
    for request in &requests {
        if let Some(problem) = &request.validation {
            panic!("the mock server rejected request {}: {problem}", request.index);
        }
        let usage = request
            .cache
            .unwrap_or_else(|| panic!("request {} was not billed", request.index));
        billed += input_cost(&usage);
        uncached += usage.total_input_tokens() as f64;
        most_breakpoints = most_breakpoints.max(usage.breakpoints);
    }
    let blocks: Vec<_> = requests
        .iter()
        .map(|r| {
            r.prefix_blocks()
                .unwrap_or_else(|| panic!("request {} is not JSON", r.index))
        })
        .collect();
    let best = best_placement_cost(&blocks, min_cacheable_tokens(MODEL));
    let mut facts = Facts::new("cache");
    facts.add(ID, "billed", billed);
    facts.add(ID, "best", best);
    facts.add(ID, "uncached", uncached);
    facts.add(ID, "max_breakpoints", most_breakpoints);
    facts.save();
    server.reset();

    let mut group = c.benchmark_group("cache");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("tool-loop-50", |b| {
        b.iter(|| {
            rt.block_on(tool_loop(&server));
            // The record of requests grows with every loop; nothing else reads it.
            server.reset();
        })
    });
    group.finish();
}

criterion_group!(benches, cache);
criterion_main!(benches);
