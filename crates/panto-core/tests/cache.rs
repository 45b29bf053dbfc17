//! Prompt caching end to end: the agent's requests against the mock server billing by the
//! Anthropic cache rules (`MockServer::enable_prompt_cache`), checked on the recorded bytes.

use std::time::Duration;

use panto_core::{Agent, ApiStyle, CacheMode, CacheTtl, Event, MemoryStore, Session, Usage};
use panto_testkit::cache::{best_placement_cost, input_cost, min_cacheable_tokens, CacheUsage, MAX_BREAKPOINTS};
use panto_testkit::script::AnthropicScript;
use panto_testkit::{MockServer, RecordedRequest, Reply};

use crate::support::*;

/// A system prompt of about 1,500 tokens: above the 1,024-token minimum on its own.
fn system_prompt() -> String {
    "You are a careful engineer. Read before you write; test what you change. ".repeat(80)
}

/// Queues `steps` replies calling `echo` with a text of about 100 tokens, then a final answer.
fn queue_tool_loop(server: &MockServer, steps: usize, tag: &str) {
    for step in 0..steps {
        let input = format!(r#"{{"text":"{tag} step {step}: {}"}}"#, "output line ".repeat(35));
        server.push(Reply::sse(
            AnthropicScript::new()
                .text(&format!("Looking at part {step}."))
                .tool_use(&format!("toolu_{tag}{step:02}"), "echo", &input)
                .build(),
        ));
    }
    server.push(Reply::sse(AnthropicScript::new().text("All done.").build()));
}

async fn cached_agent(server: &MockServer, session: Session) -> Agent {
    let mut agent = Agent::new(config(ApiStyle::AnthropicMessages, server), session, None).unwrap();
    agent.register_tool(std::sync::Arc::new(Echo)).unwrap();
    agent.conversation_mut().add_system_message(system_prompt());
    agent
}

fn turn_usage(events: &[Event]) -> Usage {
    events
        .iter()
        .find_map(|e| match e {
            Event::TurnComplete { usage, .. } => Some(*usage),
            _ => None,
        })
        .expect("the turn completed")
}

fn billed(requests: &[RecordedRequest]) -> Vec<CacheUsage> {
    requests
        .iter()
        .map(|r| {
            assert_eq!(r.validation, None, "request {} was refused", r.index);
            r.cache.expect("the mock billed the request")
        })
        .collect()
}

/// Request `next` repeats request `previous` byte for byte up to `previous`'s last breakpoint.
fn assert_prefix_kept(previous: &RecordedRequest, next: &RecordedRequest) {
    let before = previous.prefix_blocks().unwrap();
    let after = next.prefix_blocks().unwrap();
    let last = before
        .iter()
        .rposition(|b| b.breakpoint.is_some())
        .unwrap_or_else(|| panic!("request {} has no breakpoint", previous.index));
    for (i, block) in before.iter().enumerate().take(last + 1) {
        assert_eq!(
            after.get(i).map(|b| b.bytes.as_str()),
            Some(block.bytes.as_str()),
            "block {i} of request {} differs from request {}",
            next.index,
            previous.index
        );
    }
}

#[tokio::test]
async fn a_fifty_step_tool_loop_is_billed_within_five_percent_of_the_best_placement() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut agent = cached_agent(&server, Session::create(panto_core::NullStore::shared())).await;
    let config = agent.config().clone().with_max_steps(60);
    agent.set_config(config);
    queue_tool_loop(&server, 50, "a");
    let events = collect(&mut agent, "Refactor the parser, one part at a time.")
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 51);
    let usages = billed(&requests);
    for (request, usage) in requests.iter().zip(&usages) {
        assert!(
            (1..=MAX_BREAKPOINTS).contains(&usage.breakpoints),
            "request {} carried {} breakpoints",
            request.index,
            usage.breakpoints
        );
    }
    for pair in requests.windows(2) {
        assert_prefix_kept(&pair[0], &pair[1]);
    }
    // What panto reports is what the API billed.
    let reported = turn_usage(&events);
    let total_read: u64 = usages.iter().map(|u| u.cache_read_input_tokens).sum();
    let total_written: u64 = usages.iter().map(CacheUsage::cache_creation_input_tokens).sum();
    let total_input: u64 = usages.iter().map(CacheUsage::total_input_tokens).sum();
    assert_eq!(
        (
            reported.cache_read_tokens,
            reported.cache_write_tokens,
            reported.total_input_tokens()
        ),
        (total_read, total_written, total_input)
    );
    let cost: f64 = usages.iter().map(input_cost).sum();
    let blocks: Vec<_> = requests.iter().map(|r| r.prefix_blocks().unwrap()).collect();
    let best = best_placement_cost(&blocks, min_cacheable_tokens("claude-sonnet-4-5"));
    let uncached = total_input as f64;
    assert!(
        cost <= best * 1.05,
        "billed {cost:.0} input-price tokens, best placement {best:.0}, uncached {uncached:.0}"
    );
    assert!(cost < uncached * 0.3, "billed {cost:.0} of {uncached:.0} uncached");
    assert!(reported.cached_percent() >= 80, "{reported:?}");
}

#[tokio::test]
async fn the_prefix_holds_across_turns_and_after_a_resume() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let store = MemoryStore::new();
    let session = Session::create(store.clone());
    let id = session.id().to_owned();
    let mut agent = cached_agent(&server, session).await;
    queue_tool_loop(&server, 3, "a");
    collect(&mut agent, "First task.").await.unwrap();
    queue_tool_loop(&server, 2, "b");
    collect(&mut agent, "Second task.").await.unwrap();
    drop(agent);

    let session = Session::resolve(store, &id)
        .await
        .unwrap()
        .expect("the session was stored");
    let mut config = config(ApiStyle::AnthropicMessages, &server);
    config.provider = config.provider.with_cache(CacheMode::Auto);
    let mut resumed = Agent::resume(config, session).await.unwrap();
    resumed.register_tool(std::sync::Arc::new(Echo)).unwrap();
    queue_tool_loop(&server, 1, "c");
    collect(&mut resumed, "Third task, after a restart.").await.unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 4 + 3 + 2);
    let usages = billed(&requests);
    for pair in requests.windows(2) {
        assert_prefix_kept(&pair[0], &pair[1]);
    }
    // Every request after the first reads at least all the previous one wrote.
    for n in 1..requests.len() {
        let previous = usages[n - 1].cache_read_input_tokens + usages[n - 1].cache_creation_input_tokens();
        assert!(
            usages[n].cache_read_input_tokens >= previous,
            "request {} read {} of the {previous} cached before: {:?}",
            n + 1,
            usages[n].cache_read_input_tokens,
            usages[n]
        );
    }
}

#[tokio::test]
async fn a_model_switch_busts_the_cache_once() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut agent = cached_agent(&server, Session::create(panto_core::NullStore::shared())).await;
    queue_tool_loop(&server, 1, "a");
    collect(&mut agent, "First.").await.unwrap();
    let mut other = agent.config().clone();
    other.provider.model = "claude-opus-4-1".into();
    agent.set_config(other);
    queue_tool_loop(&server, 2, "b");
    collect(&mut agent, "Second, on another model.").await.unwrap();
    let usages = billed(&server.requests());
    // Request 3 is the first on the new model: nothing to read. Requests 4 and 5 read again.
    assert_eq!(usages[2].cache_read_input_tokens, 0, "{:?}", usages[2]);
    assert!(usages[3].cache_read_input_tokens > usages[2].cache_creation_input_tokens() / 2);
    assert!(usages[4].cache_read_input_tokens > usages[3].cache_read_input_tokens);
}

#[tokio::test]
async fn one_hour_entries_outlive_five_minutes_and_are_counted_apart() {
    for (ttl, survives) in [(CacheTtl::FiveMinutes, false), (CacheTtl::OneHour, true)] {
        let server = MockServer::start().await;
        server.enable_prompt_cache();
        let mut agent = cached_agent(&server, Session::create(panto_core::NullStore::shared())).await;
        let mut config = agent.config().clone();
        config.provider = config.provider.with_cache_ttl(ttl);
        agent.set_config(config);
        queue_tool_loop(&server, 0, "a");
        let first = turn_usage(&collect(&mut agent, "Hello.").await.unwrap());
        assert!(first.cache_write_tokens > 0);
        let one_hour = if survives { first.cache_write_tokens } else { 0 };
        assert_eq!(first.cache_write_1h_tokens, one_hour, "{ttl}: {first:?}");
        server.advance_prompt_cache(Duration::from_secs(30 * 60));
        queue_tool_loop(&server, 0, "b");
        let second = turn_usage(&collect(&mut agent, "Still there?").await.unwrap());
        assert_eq!(second.cache_read_tokens > 0, survives, "{ttl}: {second:?}");
    }
}

#[tokio::test]
async fn cache_off_sends_no_breakpoints() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut agent = cached_agent(&server, Session::create(panto_core::NullStore::shared())).await;
    let mut config = agent.config().clone();
    config.provider = config.provider.with_cache(CacheMode::Off);
    agent.set_config(config);
    queue_tool_loop(&server, 2, "a");
    let usage = turn_usage(&collect(&mut agent, "Go.").await.unwrap());
    assert_eq!((usage.cache_read_tokens, usage.cache_write_tokens), (0, 0));
    assert!(billed(&server.requests()).iter().all(|u| u.breakpoints == 0));
}

#[tokio::test]
async fn openai_gets_the_session_id_as_prompt_cache_key_only_when_configured() {
    for send in [false, true] {
        let server = MockServer::start().await;
        let session = Session::create(panto_core::NullStore::shared());
        let id = session.id().to_owned();
        let mut config = config(ApiStyle::OpenAiChat, &server);
        config.provider = config.provider.with_prompt_cache_key(send);
        let mut agent = Agent::new(config, session, None).unwrap();
        server.push(Reply::sse(text(ApiStyle::OpenAiChat, "hi")));
        collect(&mut agent, "Hello.").await.unwrap();
        let sent = body(&server.requests(), 0);
        let expected = if send {
            serde_json::json!(id)
        } else {
            serde_json::Value::Null
        };
        assert_eq!(sent["prompt_cache_key"], expected, "{sent}");
    }
}

#[tokio::test]
async fn many_parallel_tool_results_still_read_the_previous_prefix() {
    // 25 results put the newest block beyond the API's 20-block lookback from the previous
    // request's breakpoint; panto marks that breakpoint again so the read still finds it.
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut agent = cached_agent(&server, Session::create(panto_core::NullStore::shared())).await;
    let mut script = AnthropicScript::new();
    for n in 0..25 {
        script = script.tool_use(&format!("toolu_{n:02}"), "echo", &format!(r#"{{"text":"result {n}"}}"#));
    }
    server.push(Reply::sse(script.build()));
    server.push(Reply::sse(AnthropicScript::new().text("Done.").build()));
    collect(&mut agent, "Check all 25 parts at once.").await.unwrap();
    let requests = server.requests();
    let usages = billed(&requests);
    let first_cached = usages[0].cache_read_input_tokens + usages[0].cache_creation_input_tokens();
    assert!(first_cached > 0, "{:?}", usages[0]);
    assert_eq!(usages[1].cache_read_input_tokens, first_cached, "{:?}", usages[1]);
    assert!(usages[1].breakpoints <= MAX_BREAKPOINTS);
    assert_prefix_kept(&requests[0], &requests[1]);
}

#[tokio::test]
async fn a_system_prompt_replacement_busts_the_cache_once() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut agent = cached_agent(&server, Session::create(panto_core::NullStore::shared())).await;
    queue_tool_loop(&server, 1, "a");
    collect(&mut agent, "First.").await.unwrap();
    agent
        .conversation_mut()
        .replace_system_message("You are a terse reviewer. Point out bugs only. ".repeat(120));
    queue_tool_loop(&server, 2, "b");
    collect(&mut agent, "Second, under the new prompt.").await.unwrap();
    let requests = server.requests();
    let usages = billed(&requests);
    // Request 3 is the first with the new system prompt: nothing after the tools is read. From
    // request 4 on, the new prefix is read again.
    assert_eq!(usages[2].cache_read_input_tokens, 0, "{:?}", usages[2]);
    assert!(usages[2].cache_creation_input_tokens() > 0);
    for n in 3..requests.len() {
        assert_prefix_kept(&requests[n - 1], &requests[n]);
        let before = usages[n - 1].cache_read_input_tokens + usages[n - 1].cache_creation_input_tokens();
        assert_eq!(
            usages[n].cache_read_input_tokens,
            before,
            "request {}: {:?}",
            n + 1,
            usages[n]
        );
    }
}
