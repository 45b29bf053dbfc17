//! MCP over stdio against `mcp-fault-server` (panto-testkit):
//!
//! - `mcp-call/panto`: one `echo` call through [`McpSource`]'s `ToolSource::call` (rmcp's
//!   session, the result conversion and cap), and `mcp-call/raw`: the same call as one JSON line
//!   written to the same kind of server and one line read back by hand, which is the server's
//!   own time plus the pipes. panto's overhead is the difference of the two p50s (target:
//!   <= 1 ms), recorded in `target/bench-results/mcp.tsv`.
//! - `mcp-start/1` and `mcp-start/5`: `start_all` of one server and of five (in parallel), to
//!   the tools listed.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use panto_core::{ToolCall, ToolSource};
use panto_mcp::{start_all, McpSource, ServerConfig};
use panto_testkit::bench::Facts;

/// Calls timed one by one for the percentiles.
const SAMPLES: usize = 2_000;

fn server() -> ServerConfig {
    ServerConfig::stdio(panto_testkit::mcp::fault_server().to_string_lossy())
}

fn p50(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The fault server driven by hand: the initialization, then one `tools/call` per line.
struct RawClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl RawClient {
    fn start() -> RawClient {
        let mut child = Command::new(panto_testkit::mcp::fault_server())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting mcp-fault-server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = RawClient {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        client.request(
            r#""method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}"#,
        );
        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        client
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request (`body` is the JSON after the id) and reads lines up to its response.
    fn request(&mut self, body: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#));
        let marker = format!(r#""id":{id}"#);
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed its output"
            );
            if line.contains(&marker) {
                return line;
            }
        }
    }

    fn echo(&mut self) -> String {
        self.request(r#""method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"}}"#)
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn echo_call() -> ToolCall {
    ToolCall::new("b", "echo", serde_json::json!({"text": "ping"}))
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let source = rt
        .block_on(McpSource::start("bench", server()))
        .expect("starting the server");
    let mut raw = RawClient::start();
    assert!(raw.echo().contains("ping"));

    let mut group = c.benchmark_group("mcp-call");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("panto", |b| b.iter(|| rt.block_on(source.call(echo_call())).unwrap()));
    group.bench_function("raw", |b| b.iter(|| raw.echo()));
    group.finish();

    let panto_times: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            rt.block_on(source.call(echo_call())).unwrap();
            start.elapsed()
        })
        .collect();
    let raw_times: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            raw.echo();
            start.elapsed()
        })
        .collect();
    let (panto_p50, raw_p50) = (p50(panto_times), p50(raw_times));
    let overhead_us = panto_p50.as_secs_f64() * 1e6 - raw_p50.as_secs_f64() * 1e6;

    let mut group = c.benchmark_group("mcp-start");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    for count in [1usize, 5] {
        group.bench_function(count.to_string(), |b| {
            b.iter(|| {
                let servers = (0..count).map(|i| (format!("s{i}"), server()));
                let started = rt.block_on(start_all(servers));
                assert_eq!(started.sources.len(), count, "{:?}", started.warnings);
                started
            })
        });
    }
    group.finish();

    let mut facts = Facts::new("mcp");
    facts.add("mcp-call/panto", "p50_us", panto_p50.as_secs_f64() * 1e6);
    facts.add("mcp-call/raw", "p50_us", raw_p50.as_secs_f64() * 1e6);
    facts.add("mcp-call/panto", "overhead_p50_us", overhead_us);
    facts.save();
}

criterion_group!(benches, bench);
criterion_main!(benches);
