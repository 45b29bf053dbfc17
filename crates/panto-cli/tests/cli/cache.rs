//! Prompt caching through the binary: a long `panto -p` tool loop against the mock server
//! billing by the Anthropic cache rules, and the cached share the REPL shows.

use panto_testkit::cache::{best_placement_cost, input_cost, min_cacheable_tokens, MAX_BREAKPOINTS};
use panto_testkit::{script, MockServer, Reply};

use super::support::{Home, Talk};

/// Writes `count` files of about 1,000 bytes and queues a `read` of each, then an answer.
fn queue_reads(server: &MockServer, home: &Home, count: usize, tag: &str) {
    for n in 0..count {
        let name = format!("{tag}{n:02}.txt");
        std::fs::write(home.work().join(&name), format!("line {n} of the notes\n").repeat(45)).unwrap();
        server.push(Reply::sse(script::anthropic_text_and_tool_uses(
            &format!("Reading {name}."),
            &[(
                &format!("toolu_{tag}{n:02}"),
                "read",
                &format!(r#"{{"path":"{name}"}}"#),
            )],
        )));
    }
    server.push(Reply::sse(script::anthropic_text("Read them all.")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifty_step_print_mode_tool_loop_is_billed_within_five_percent_of_the_best_placement() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut home = Home::new();
    home.anthropic(&server);
    home.write_config("max_steps = 60\n");
    queue_reads(&server, &home, 50, "f");
    let out = home.run(&["-p", "read every file"], None).await;
    assert_eq!(out.ok(), "Read them all.\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 51);
    let mut cost = 0.0;
    let mut uncached = 0.0;
    for request in &requests {
        assert_eq!(request.validation, None, "request {} was refused", request.index);
        let usage = request.cache.expect("the mock billed it");
        assert!(
            usage.breakpoints <= MAX_BREAKPOINTS,
            "request {}: {} breakpoints",
            request.index,
            usage.breakpoints
        );
        cost += input_cost(&usage);
        uncached += usage.total_input_tokens() as f64;
    }
    let blocks: Vec<_> = requests.iter().map(|r| r.prefix_blocks().unwrap()).collect();
    let best = best_placement_cost(&blocks, min_cacheable_tokens("claude-sonnet-4-5"));
    assert!(
        cost <= best * 1.05,
        "billed {cost:.0} input-price tokens; the best placement {best:.0}, no cache {uncached:.0}"
    );
    assert!(cost < uncached / 3.0, "billed {cost:.0} of {uncached:.0} uncached");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_repl_shows_the_cached_share_per_turn_and_cost_shows_the_saving() {
    let server = MockServer::start().await;
    server.enable_prompt_cache();
    let mut home = Home::new();
    home.anthropic(&server);
    queue_reads(&server, &home, 3, "a");
    queue_reads(&server, &home, 3, "b");
    home.in_repl(&[], |p| {
        p.type_line("read the a files");
        p.expect("Read them all.");
        // rexpect reads bytes as Latin-1, so match ASCII only.
        // The status line after the turn: `model · N in · N out · … · NN% cached · 1.2 s`, which
        // may wrap at the terminal's width.
        p.exp_regex(r"\d+ in [\s\S]*? \d+ out [\s\S]*? ([1-9]\d)% cached")
            .unwrap();
        p.type_line("now the b files");
        p.expect("Read them all.");
        p.exp_regex(r"([89]\d)% cached").unwrap();
        p.type_line("/cost");
        p.expect("this run, 2 turns");
        // The line is broken at spaces to the terminal's width.
        p.exp_regex(r"cache:\s+[\d,]+\s+read,\s+[\d,]+\s+written[\s\S]*?%\s+of\s+input\s+cached[\s\S]*?saved\s+\$\d+\.\d{4}\s+vs\s+no\s+cache")
            .unwrap();
        p.quit();
    })
    .await;
}
