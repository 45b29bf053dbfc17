//! The floor under the fleet's added latency: the same turns made by a bare HTTP client.
//!
//! A turn's added latency (its wall time minus the mock's time answering its requests) holds
//! more than panto: the HTTP stack, the loopback, the mock's own queue before it reads a request
//! and after it writes a reply's last piece, and the runtime's queue on two busy cores. To tell
//! panto's part, N tasks on the same runtime, against a mock child holding the same scripts,
//! with the same ramp, make each agent's three requests (bodies of the agent's sizes) through a
//! client configured as a provider's shared client, and read each reply to its end, decoding
//! nothing and storing nothing. What such a turn adds is the floor; panto's added latency is
//! what a fleet of agents adds over it.

use std::time::Instant;

use futures_util::StreamExt;
use panto_testkit::KEY_HEADER;
use serde_json::json;

use super::timeline::now;
use super::{cpu_time, http2, percentile, ramp, MockChild};

/// The connection window of a provider's shared client (panto-core's config.rs).
const CONNECTION_WINDOW: u32 = 64 << 20;

/// What the bare fleet measured.
#[derive(Debug, Default)]
pub struct Floor {
    /// Per turn: wall time minus the mock's time, p50 and p99, ms.
    pub added_p50_ms: f64,
    pub added_p99_ms: f64,
    /// Means per turn, ms, as the agents' phases of the same names: from a request's start to
    /// the mock having read it, and from the mock's last piece to the body's end read.
    pub to_mock_mean_ms: f64,
    pub after_mock_mean_ms: f64,
    /// The bare fleet's CPU time per turn (this process), ms.
    pub cpu_ms_per_turn: f64,
    pub failed: usize,
}

/// The three request bodies of a turn, of the sizes an agent's are: the prompt with the tool's
/// declaration, then with each tool call and result added.
fn bodies(i: usize) -> [Vec<u8>; 3] {
    let tools = json!([{
        "name": "lookup",
        "description": "Looks a word up.",
        "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    }]);
    let mut messages =
        vec![json!({"role": "user", "content": [{"type": "text", "text": "Look up two words, then answer."}]})];
    let mut out: [Vec<u8>; 3] = Default::default();
    for (k, body) in out.iter_mut().enumerate() {
        *body = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 8192,
            "stream": true,
            "tools": tools,
            "messages": messages,
        })
        .to_string()
        .into_bytes();
        let id = format!("toolu_{i}_{}", k + 1);
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": id, "name": "lookup", "input": {"word": "fleet"}},
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "a word: fleet"}]},
        ]}));
    }
    out
}

/// Runs `n` bare turns and measures them.
pub async fn run(n: usize) -> Floor {
    let mock = MockChild::start(n);
    let mut builder = panto_core::http_client_builder().http2_initial_connection_window_size(CONNECTION_WINDOW);
    if http2() {
        builder = builder.http2_prior_knowledge();
    }
    let client = builder.build().expect("an HTTP client");
    let url = format!("{}/v1/messages", mock.base_url);
    // Made before the clock starts: the floor is the HTTP and the mock, not building JSON.
    let mut all_bodies: Vec<[Vec<u8>; 3]> = (0..n).map(bodies).collect();
    let cpu_start = cpu_time();
    let started = Instant::now();
    let ramp = ramp();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            let bodies = std::mem::take(&mut all_bodies[i]);
            let start_at = started + ramp.mul_f64(i as f64 / n as f64);
            tokio::spawn(async move {
                tokio::time::sleep_until(start_at.into()).await;
                let t = Instant::now();
                let mut requests = Vec::with_capacity(3);
                let mut ok = true;
                for body in bodies {
                    let ready = now();
                    let sent = client
                        .post(&url)
                        .header(KEY_HEADER, format!("agent-{i}"))
                        .header("x-api-key", "bench-key")
                        .header("anthropic-version", "2023-06-01")
                        .header("content-type", "application/json")
                        .header("accept", "text/event-stream")
                        .body(body)
                        .send()
                        .await;
                    let response = match sent.and_then(reqwest::Response::error_for_status) {
                        Ok(response) => response,
                        Err(e) => {
                            if i == 0 {
                                println!("fleet: the bare client's turn 0 failed: {e}");
                            }
                            ok = false;
                            break;
                        }
                    };
                    let mut stream = response.bytes_stream();
                    while let Some(chunk) = stream.next().await {
                        ok &= chunk.is_ok();
                    }
                    requests.push([ready, now()]);
                }
                (t.elapsed(), ok, requests)
            })
        })
        .collect();
    let mut turns = Vec::with_capacity(n);
    for task in tasks {
        turns.push(task.await.expect("a bare turn's task"));
    }
    let cpu = cpu_time().saturating_sub(cpu_start);
    let stats = mock.stats().await;
    let mut floor = Floor {
        cpu_ms_per_turn: cpu.as_secs_f64() * 1e3 / n as f64,
        ..Floor::default()
    };
    let mut added = Vec::with_capacity(n);
    for (i, (wall, ok, requests)) in turns.iter().enumerate() {
        let key = format!("agent-{i}");
        let spans: Vec<[f64; 2]> = serde_json::from_value(stats["served_spans"][&key].clone()).unwrap_or_default();
        if !ok || spans.len() != 3 || requests.len() != 3 {
            floor.failed += 1;
            continue;
        }
        let served = stats["served_seconds"][&key].as_f64().unwrap_or(0.0);
        added.push((wall.as_secs_f64() - served) * 1e3);
        for (request, span) in requests.iter().zip(&spans) {
            floor.to_mock_mean_ms += (span[0] - request[0]) * 1e3;
            floor.after_mock_mean_ms += (request[1] - span[1]) * 1e3;
        }
    }
    added.sort_by(f64::total_cmp);
    let counted = added.len().max(1) as f64;
    floor.to_mock_mean_ms /= counted;
    floor.after_mock_mean_ms /= counted;
    floor.added_p50_ms = percentile(&added, 0.50);
    floor.added_p99_ms = percentile(&added, 0.99);
    floor
}
