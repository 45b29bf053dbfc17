//! The fleet bench (`cargo xtask bench --only fleet`): N agents at once in one process, the
//! service case of issue 21.
//!
//! For each store (the JSONL store with fsync on, PostgreSQL with its default durability) and
//! each N (100, 1,000, 10,000, or `PANTO_FLEET_SIZES=100,1000`), N agents on one Tokio runtime
//! with two worker threads each run one 3-step tool turn (tool call, tool call, answer) against
//! the mock LLM server, which runs in a child process (this binary again) so that its sockets
//! and CPU are not counted as the fleet's. Every agent is made from one `Config` (so they share one HTTP
//! client) and has its own script, picked by the `x-mock-key` header. Each reply starts after a
//! Sonnet-class model's time to first token (400 ms; `PANTO_FLEET_FIRST_TOKEN_MS`) and streams in
//! 96-byte pieces, 10 ms apart, as streams of one HTTP/2 connection (cleartext, prior
//! knowledge), or with `PANTO_FLEET_HTTP=1` over kept-alive HTTP/1.1 connections, one per
//! request in flight. The agents' starts are spread over
//! one second (`PANTO_FLEET_RAMP_MS`), as a service's requests arrive; every turn overlaps the
//! others. `PANTO_FLEET_STORES=jsonl` or `postgres` runs one store; `PANTO_FLEET_FSYNC=0` runs
//! the JSONL store without fsync, to see what the syncs cost.
//!
//! Measured, per N: turns per second (N over the wall time of the whole fleet), panto's added
//! latency (a turn's wall time minus the time the mock spent answering its three requests,
//! p50/p99), heap and RSS per agent (fresh, mid-turn peak, idle after its turn, and the idle
//! agent's heap beyond its conversation), descriptors per agent (peak and idle), CPU time per
//! turn (the fleet process's alone) and the descriptors the run needed at its peak. Printed, and written to
//! `target/bench-results/fleet.tsv` for `cargo xtask bench`'s table.
//!
//! Before each fleet, the floor under its added latency (`bare.rs`): the same turns made by a
//! bare HTTP client against a mock with the same scripts, same ramp, reading each reply to its
//! end and writing each turn as the fleet's store must (lines synced to a file, or appends
//! committed to PostgreSQL). Panto's own added latency is the fleet's over the floor's. The
//! same turns without the writes (the HTTP floor) show what panto and its store add together.
//! `PANTO_FLEET_TURNS=FILE` writes every turn's phases by its start time; `PANTO_FLEET_KEEP=1`
//! leaves the session files behind.
//!
//! And where the added latency went (`timeline.rs`): every append timed, each turn's start and
//! end, and the mock's span for each request (read, last byte written) on the same wall clock,
//! split into getting a request to the mock, reading a reply's tail after the mock's last byte,
//! the store, the tool steps and the turn's end; with the time each process's threads waited
//! for a CPU (`schedstat`), which is the machine's load and not panto's work.
#![allow(clippy::print_stdout)]

#[path = "fleet/bare.rs"]
mod bare;
#[path = "fleet/timeline.rs"]
mod timeline;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap::Cap;
use nix::sys::resource::{getrlimit, getrusage, setrlimit, Resource, UsageWho};
use panto_core::{
    async_trait, Agent, ApiStyle, Config, Event, ProviderConfig, Session, SessionStore, Tool, ToolCall, ToolCallResult,
    ToolDecl, ToolError,
};
use panto_store_fs::{Durability, JsonlStore};
use panto_store_postgres::{PostgresOptions, PostgresStore};
use panto_testkit::bench::Facts;
use panto_testkit::script::AnthropicScript;
use panto_testkit::{Chunking, MockServer, Reply, KEY_HEADER};
use serde_json::json;
use timeline::{Phases, SchedTotals, TimedStore, TurnTimes};

/// Counts the heap bytes in use, so an agent's memory is measured exactly rather than through
/// RSS alone (which the allocator's caching blurs).
#[global_allocator]
static HEAP: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

/// How the mock streams each reply: pieces of this many bytes, this far apart (about a
/// hundred tokens a second, as a Sonnet-class model streams).
const PIECE: usize = 96;
const PIECE_DELAY: Duration = Duration::from_millis(10);

/// How long the mock takes to a reply's first piece by default: a Sonnet-class model's time to
/// first token (the bench's requests name `claude-sonnet-4-5`), about 400 ms at the median.
/// It is what makes a fleet's agents concurrent as a service's are: each request waits on the
/// model far longer than panto works on it. `PANTO_FLEET_FIRST_TOKEN_MS=0` answers at once,
/// which asks the two cores for a turn per agent as fast as the ramp starts them: a test of the
/// machine's capacity rather than of many agents at once.
const FIRST_TOKEN: Duration = Duration::from_millis(400);

/// The tool every step calls: answers at once.
struct Lookup;

#[async_trait]
impl Tool for Lookup {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "lookup".into(),
            description: "Looks a word up.".into(),
            input_schema: json!({"type": "object", "properties": {"word": {"type": "string"}}}),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        Ok(ToolCallResult::text(format!("the entry for {}", call.input)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    Jsonl,
    Postgres,
}

impl StoreKind {
    fn name(self) -> &'static str {
        match self {
            StoreKind::Jsonl => "jsonl",
            StoreKind::Postgres => "postgres",
        }
    }
}

/// What one run measured.
#[derive(Debug, Default)]
struct Measured {
    turns_per_s: f64,
    added_p50_ms: f64,
    added_p99_ms: f64,
    mock_ms_per_turn: f64,
    heap_fresh_kb: f64,
    heap_peak_kb: f64,
    heap_idle_kb: f64,
    conversation_kb: f64,
    heap_idle_beyond_conversation_kb: f64,
    rss_peak_kb: f64,
    rss_idle_kb: f64,
    fds_peak: f64,
    fds_idle: f64,
    sockets_idle: f64,
    fds_after_drop: usize,
    connections: usize,
    cpu_ms_per_turn: f64,
    peak_descriptors: usize,
    failed: usize,
    /// The added latency split by phase ([`Phases`]): mean and p99 per turn, ms.
    phases_mean_ms: [f64; 6],
    phases_p99_ms: [f64; 6],
    /// Per turn, ms: the fleet's threads' time runnable but not running, and the same for the
    /// mock child's; the fleet's CPU time by its threads' schedstat.
    fleet_runq_ms_per_turn: f64,
    mock_runq_ms_per_turn: f64,
    mock_cpu_ms_per_turn: f64,
    /// The PostgreSQL server's CPU time and run-queue wait per turn, ms (0 on the JSONL store).
    postgres_cpu_ms_per_turn: f64,
    postgres_runq_ms_per_turn: f64,
    /// The most threads the fleet process had at once (workers and the blocking pool).
    threads_peak: usize,
}

/// Set in the child process that serves the mock: how many agents' scripts it holds.
const MOCK_CHILD: &str = "PANTO_FLEET_MOCK_AGENTS";

/// Lets the file system finish what a floor's files left it (a journal's checkpoint where it
/// keeps one, the writeback of their metadata), which the next run would otherwise pay for: at
/// 1,000 agents with fsync it made the fleet's p50 two to four times longer. A floor on
/// PostgreSQL leaves the server's background writer a moment of work as well.
fn settle(kind: StoreKind) {
    if kind == StoreKind::Jsonl {
        let _ = std::process::Command::new("sync").status();
    }
    std::thread::sleep(Duration::from_secs(2));
}

fn main() {
    if let Ok(n) = std::env::var(MOCK_CHILD) {
        serve_mock(n.parse().expect("a number of agents"));
        return;
    }
    // `cargo bench` passes `--bench`; nothing else is an option here.
    let sizes: Vec<usize> = std::env::var("PANTO_FLEET_SIZES")
        .unwrap_or_else(|_| "100,1000,10000".to_owned())
        .split(',')
        .map(|s| s.trim().parse().expect("PANTO_FLEET_SIZES is a list of numbers"))
        .collect();
    let stores: Vec<StoreKind> = std::env::var("PANTO_FLEET_STORES")
        .unwrap_or_else(|_| "jsonl,postgres".to_owned())
        .split(',')
        .map(|s| match s.trim() {
            "jsonl" => StoreKind::Jsonl,
            "postgres" => StoreKind::Postgres,
            other => panic!("PANTO_FLEET_STORES: unknown store {other:?} (jsonl, postgres)"),
        })
        .collect();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let limit = raise_descriptor_limit(largest as u64 * 4 + 1024);
    println!(
        "fleet: descriptor limit raised to {limit} (soft); {}",
        if http2() { "HTTP/2 (h2c)" } else { "HTTP/1.1" }
    );

    let postgres = stores.contains(&StoreKind::Postgres).then(|| {
        // `PANTO_FLEET_PG_FSYNC=0`: a server that flushes nothing, to see what the flushes cost.
        let durability = match std::env::var("PANTO_FLEET_PG_FSYNC").as_deref() {
            Ok("0") => panto_testkit::postgres::Durability::Fast,
            _ => panto_testkit::postgres::Durability::Fsync,
        };
        panto_testkit::postgres::start(durability)
            .unwrap_or_else(|e| panic!("PostgreSQL could not be started for the fleet bench: {e}"))
    });
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.worker_threads(2).enable_all();
    // `PANTO_FLEET_BLOCKING=N` caps the blocking pool (Tokio's default is 512 threads).
    if let Ok(n) = std::env::var("PANTO_FLEET_BLOCKING") {
        runtime.max_blocking_threads(n.parse().expect("PANTO_FLEET_BLOCKING is a number of threads"));
    }
    let runtime = runtime.build().expect("a Tokio runtime");

    let mut facts = Facts::new("fleet");
    facts.add("fleet", "descriptor_limit", limit);
    facts.add("fleet", "http_version", if http2() { 2 } else { 1 });
    println!(
        "{:<9} {:>6} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>8} {:>7} {:>8} {:>7} {:>6}",
        "store",
        "agents",
        "turns/s",
        "add p50",
        "add p99",
        "heap new",
        "heap mid",
        "heap idl",
        "beyond cv",
        "rss mid",
        "fd peak",
        "fd idl",
        "sock idl",
        "conns",
        "cpu/turn",
        "fds max",
        "failed"
    );
    let mut kept = Vec::new();
    let mut warmed = false;
    for &kind in &stores {
        for (n_index, &n) in sizes.iter().enumerate() {
            let url = postgres.as_ref().filter(|_| kind == StoreKind::Postgres).map(|server| {
                let name = format!("fleet_{}_{n_index}", std::process::id());
                server.createdb(&name).expect("a database for the bench");
                server.url(&name)
            });
            // The floor first, in the same minutes: the same turns by a bare HTTP client.
            // `PANTO_FLEET_FLOOR=0` skips it (to profile the fleet alone).
            // Each run's session files (and its floor's) are kept until the bench ends: ext4
            // skips the inodes of files deleted in the last minutes when it allocates new ones,
            // scanning past each (`recently_deleted`, under the directory's lock), so deleting
            // one run's thousands of files made the next run's session creations several times
            // dearer. `PANTO_FLEET_KEEP=1` leaves them behind when it ends (their paths
            // printed), so that alternating invocations of two builds do not pay for each
            // other's deletions.
            let dir = tempfile::tempdir().expect("a temporary directory");
            // The floor writes each turn as the fleet's store must: on the JSONL store on the
            // same file system, so that the disk's syncs are the floor's as much as the
            // fleet's; on PostgreSQL into a database of its own on the same server.
            let floor_database = |name: &str| {
                let server = postgres.as_ref().expect("the bench's PostgreSQL");
                let name = format!("{name}_{}_{n_index}", std::process::id());
                server.createdb(&name).expect("a database for the floor");
                bare::Writes::Postgres {
                    url: server.url(&name),
                    pool_size: postgres_options().pool_size,
                }
            };
            let (http_floor, floor, writes) = if std::env::var("PANTO_FLEET_FLOOR").as_deref() == Ok("0") {
                (bare::Floor::default(), bare::Floor::default(), None)
            } else {
                let writes = match kind {
                    StoreKind::Jsonl => bare::Writes::Files {
                        dir: dir.path().join("floor"),
                        sync: jsonl_durability() == Durability::Fsync,
                    },
                    StoreKind::Postgres => floor_database("floor"),
                };
                if !warmed {
                    // The process's first fleet pays for what every later one finds ready (the
                    // blocking pool's threads, the allocator's arenas, the pages of a thousand
                    // tasks): a floor measured cold had a p99 above the warm fleet's own. One
                    // unmeasured floor of the same size first.
                    let warm_up = match &writes {
                        bare::Writes::Files { dir, sync } => bare::Writes::Files {
                            dir: dir.with_file_name("warm-up"),
                            sync: *sync,
                        },
                        bare::Writes::Postgres { .. } => floor_database("warm_up"),
                    };
                    let _ = runtime.block_on(bare::run(n, Some(&warm_up)));
                    settle(kind);
                    warmed = true;
                }
                // The HTTP alone, then with the store's writes: what panto adds over each.
                let http_floor = runtime.block_on(bare::run(n, None));
                let floor = runtime.block_on(bare::run(n, Some(&writes)));
                settle(kind);
                (http_floor, floor, Some(writes))
            };
            let m = runtime.block_on(run(kind, n, url.as_deref(), dir.path()));
            if std::env::var("PANTO_FLEET_KEEP").as_deref() == Ok("1") {
                println!("fleet: session files kept in {}", dir.keep().display());
            } else {
                kept.push(dir);
            }
            println!(
                "{:<9} {:>6} {:>8.0} {:>7.2}ms {:>7.2}ms {:>7.1}KB {:>7.1}KB {:>7.1}KB {:>7.1}KB {:>7.1}KB {:>8.2} {:>7.2} {:>8.2} {:>7} {:>6.2}ms {:>7} {:>6}",
                kind.name(),
                n,
                m.turns_per_s,
                m.added_p50_ms,
                m.added_p99_ms,
                m.heap_fresh_kb,
                m.heap_peak_kb,
                m.heap_idle_kb,
                m.heap_idle_beyond_conversation_kb,
                m.rss_peak_kb,
                m.fds_peak,
                m.fds_idle,
                m.sockets_idle,
                m.connections,
                m.cpu_ms_per_turn,
                m.peak_descriptors,
                m.failed,
            );
            let id = format!("fleet/{}/{n}", kind.name());
            for (key, value) in [
                ("turns_per_s", m.turns_per_s),
                ("added_p50_ms", m.added_p50_ms),
                ("added_p99_ms", m.added_p99_ms),
                ("mock_ms_per_turn", m.mock_ms_per_turn),
                ("heap_fresh_kb", m.heap_fresh_kb),
                ("heap_peak_kb", m.heap_peak_kb),
                ("heap_idle_kb", m.heap_idle_kb),
                ("conversation_kb", m.conversation_kb),
                ("heap_idle_beyond_conversation_kb", m.heap_idle_beyond_conversation_kb),
                ("rss_peak_kb", m.rss_peak_kb),
                ("rss_idle_kb", m.rss_idle_kb),
                ("fds_peak", m.fds_peak),
                ("fds_idle", m.fds_idle),
                ("sockets_idle", m.sockets_idle),
                ("fds_after_drop", m.fds_after_drop as f64),
                ("connections", m.connections as f64),
                ("cpu_ms_per_turn", m.cpu_ms_per_turn),
                ("peak_descriptors", m.peak_descriptors as f64),
                ("failed", m.failed as f64),
                ("fleet_runq_ms_per_turn", m.fleet_runq_ms_per_turn),
                ("mock_runq_ms_per_turn", m.mock_runq_ms_per_turn),
                ("mock_cpu_ms_per_turn", m.mock_cpu_ms_per_turn),
                ("threads_peak", m.threads_peak as f64),
                ("postgres_cpu_ms_per_turn", m.postgres_cpu_ms_per_turn),
                ("postgres_runq_ms_per_turn", m.postgres_runq_ms_per_turn),
                ("bare_added_p50_ms", floor.added_p50_ms),
                ("bare_added_p99_ms", floor.added_p99_ms),
                ("bare_to_mock_mean_ms", floor.to_mock_mean_ms),
                ("bare_after_mock_mean_ms", floor.after_mock_mean_ms),
                ("bare_cpu_ms_per_turn", floor.cpu_ms_per_turn),
                ("bare_writes_mean_ms", floor.writes_mean_ms),
                ("bare_failed", floor.failed as f64),
                ("panto_added_p50_ms", m.added_p50_ms - floor.added_p50_ms),
                ("panto_added_p99_ms", m.added_p99_ms - floor.added_p99_ms),
                ("http_floor_added_p50_ms", http_floor.added_p50_ms),
                ("http_floor_added_p99_ms", http_floor.added_p99_ms),
                ("panto_added_over_http_p50_ms", m.added_p50_ms - http_floor.added_p50_ms),
                ("panto_added_over_http_p99_ms", m.added_p99_ms - http_floor.added_p99_ms),
            ] {
                facts.add(&id, key, value);
            }
            for (i, name) in Phases::NAMES.iter().enumerate() {
                facts.add(&id, &format!("phase_{name}_mean_ms"), m.phases_mean_ms[i]);
                facts.add(&id, &format!("phase_{name}_p99_ms"), m.phases_p99_ms[i]);
            }
            println!(
                "          where the added time went, per turn (mean / p99 ms): {}",
                Phases::NAMES
                    .iter()
                    .enumerate()
                    .map(|(i, name)| format!("{name} {:.2}/{:.2}", m.phases_mean_ms[i], m.phases_p99_ms[i]))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            println!(
                "          the floor (a bare HTTP client {}, same mock, scripts and ramp): added p50 {:.2} / p99 {:.2} ms (to_mock {:.2}, after_mock {:.2}, writes {:.2} mean), CPU {:.2} ms a turn, {} failed; panto over it: p50 {:.2}, p99 {:.2} ms",
                match &writes {
                    Some(bare::Writes::Files { sync: true, .. }) => "writing and syncing as the store",
                    Some(bare::Writes::Files { sync: false, .. }) => "writing as the store",
                    Some(bare::Writes::Postgres { .. }) => "committing each append to PostgreSQL",
                    None => "(not run)",
                },
                floor.added_p50_ms,
                floor.added_p99_ms,
                floor.to_mock_mean_ms,
                floor.after_mock_mean_ms,
                floor.writes_mean_ms,
                floor.cpu_ms_per_turn,
                floor.failed,
                m.added_p50_ms - floor.added_p50_ms,
                m.added_p99_ms - floor.added_p99_ms,
            );
            println!(
                "          the HTTP floor (no writes): added p50 {:.2} / p99 {:.2} ms, {} failed; panto and its store over it: p50 {:.2}, p99 {:.2} ms",
                http_floor.added_p50_ms,
                http_floor.added_p99_ms,
                http_floor.failed,
                m.added_p50_ms - http_floor.added_p50_ms,
                m.added_p99_ms - http_floor.added_p99_ms,
            );
            println!(
                "          run-queue wait per turn: fleet {:.2} ms, mock {:.2} ms, PostgreSQL {:.2} ms; CPU per turn: mock {:.2} ms, PostgreSQL {:.2} ms; fleet threads peak {}",
                m.fleet_runq_ms_per_turn,
                m.mock_runq_ms_per_turn,
                m.postgres_runq_ms_per_turn,
                m.mock_cpu_ms_per_turn,
                m.postgres_cpu_ms_per_turn,
                m.threads_peak
            );
        }
    }
    facts.save();
}

/// Raises the soft descriptor limit to `wanted` (and the hard one, when this process may),
/// returning the soft limit in force.
fn raise_descriptor_limit(wanted: u64) -> u64 {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("reading the descriptor limit");
    if soft >= wanted {
        return soft;
    }
    if hard < wanted && setrlimit(Resource::RLIMIT_NOFILE, wanted, wanted).is_ok() {
        return wanted;
    }
    let soft = wanted.min(hard);
    setrlimit(Resource::RLIMIT_NOFILE, soft, hard).expect("raising the soft descriptor limit");
    soft
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// The open descriptors that are sockets.
fn open_sockets() -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count()
}

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn cpu_time() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_SELF).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(usage.user_time()) + tv(usage.system_time())
}

/// The duration in milliseconds that environment variable `name` holds, or `default`.
fn millis_from_env(name: &str, default: Duration) -> Duration {
    match std::env::var(name) {
        Ok(v) => Duration::from_millis(
            v.parse()
                .unwrap_or_else(|_| panic!("{name} is a number of milliseconds, not {v:?}")),
        ),
        Err(_) => default,
    }
}

/// How long the agents' starts are spread over: `PANTO_FLEET_RAMP_MS`, default 1,000.
fn ramp() -> Duration {
    millis_from_env("PANTO_FLEET_RAMP_MS", Duration::from_secs(1))
}

/// The mock's time to a reply's first piece: `PANTO_FLEET_FIRST_TOKEN_MS`, default
/// [`FIRST_TOKEN`]. Read by the mock's process (this binary again, with the bench's
/// environment).
fn first_token() -> Duration {
    millis_from_env("PANTO_FLEET_FIRST_TOKEN_MS", FIRST_TOKEN)
}

/// Whether the agents talk HTTP/2 to the mock (cleartext, prior knowledge: every request a
/// stream of one shared connection), unless `PANTO_FLEET_HTTP=1` (HTTP/1.1, a kept-alive
/// connection per request in flight).
fn http2() -> bool {
    !matches!(std::env::var("PANTO_FLEET_HTTP").as_deref(), Ok("1"))
}

/// The PostgreSQL store's options: the defaults, or `PANTO_FLEET_PG_POOL` connections and
/// `PANTO_FLEET_PG_APPENDS` append statements at once.
fn postgres_options() -> PostgresOptions {
    let mut options = PostgresOptions::default();
    if let Ok(n) = std::env::var("PANTO_FLEET_PG_POOL") {
        options.pool_size = n.parse().expect("PANTO_FLEET_PG_POOL is a number of connections");
    }
    if let Ok(n) = std::env::var("PANTO_FLEET_PG_APPENDS") {
        options.appends_in_flight = n.parse().expect("PANTO_FLEET_PG_APPENDS is a number of statements");
    }
    options
}

/// The JSONL store's durability: fsync on, unless `PANTO_FLEET_FSYNC=0` (to see what the
/// syncs cost).
fn jsonl_durability() -> Durability {
    match std::env::var("PANTO_FLEET_FSYNC").as_deref() {
        Ok("0") => Durability::None,
        _ => Durability::Fsync,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

/// The three replies of agent `i`'s turn: two tool calls, then the answer, each starting after
/// `first_token`.
fn script(i: usize, first_token: Duration) -> [Reply; 3] {
    let reply = |body: Vec<u8>| {
        Reply::sse(body)
            .chunking(Chunking::Fixed(PIECE))
            .first_delay(first_token)
            .delay(PIECE_DELAY)
    };
    [
        reply(
            AnthropicScript::new()
                .text("Let me look that up.")
                .tool_use(&format!("toolu_{i}_1"), "lookup", r#"{"word": "fleet"}"#)
                .build(),
        ),
        reply(
            AnthropicScript::new()
                .text("And one more.")
                .tool_use(&format!("toolu_{i}_2"), "lookup", r#"{"word": "agent"}"#)
                .build(),
        ),
        reply(
            AnthropicScript::new()
                .text("A fleet is many agents in one process; each keeps its own conversation.")
                .build(),
        ),
    ]
}

/// The mock LLM server, in a child process (this binary again): its sockets and its CPU are
/// then not the fleet's, and the fleet's descriptors fit the limit (10,000 agents with a file
/// and a connection each are 20,000 descriptors already).
fn serve_mock(n: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    runtime.block_on(async {
        let mock = MockServer::start().await;
        mock.set_keep_alive(true);
        mock.set_recording(false);
        let first_token = first_token();
        for i in 0..n {
            for reply in script(i, first_token) {
                mock.push_keyed(&format!("agent-{i}"), reply);
            }
        }
        println!("{}", mock.anthropic_base_url());
        // Serve until the parent closes our stdin.
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
    });
}

/// The mock child: its base URL; it stops when dropped.
struct MockChild {
    child: std::process::Child,
    base_url: String,
}

impl MockChild {
    fn start(n: usize) -> MockChild {
        let mut child = std::process::Command::new(std::env::current_exe().expect("this binary"))
            .env(MOCK_CHILD, n.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("starting the mock child");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("its stdout")),
            &mut line,
        )
        .expect("the mock's address");
        MockChild {
            child,
            base_url: line.trim().to_owned(),
        }
    }

    /// The mock's `GET /__mock/stats`: connections accepted, and seconds served per key.
    async fn stats(&self) -> serde_json::Value {
        let client = panto_core::http_client_builder().build().expect("an HTTP client");
        let response = client
            .get(format!("{}/__mock/stats", self.base_url))
            .send()
            .await
            .expect("the mock's stats");
        serde_json::from_slice(&response.bytes().await.expect("the mock's stats")).expect("JSON stats")
    }
}

impl Drop for MockChild {
    fn drop(&mut self) {
        // Closing stdin ends it.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The peaks a fleet reached while it ran.
#[derive(Debug, Default)]
struct Peaks {
    /// Descriptors.
    fds: usize,
    /// Descriptors, all of them: what the process needed (the same now that the mock runs in
    /// another process).
    all_fds: usize,
    rss: usize,
    heap: usize,
    threads: usize,
    fleet_sched: SchedTotals,
    mock_sched: SchedTotals,
    /// The PostgreSQL server's processes (all of them on the machine: the bench's own server).
    postgres_sched: SchedTotals,
    /// The CPU time the sampler itself took, which is not the fleet's.
    sampler_cpu: Duration,
}

/// How often the sampler reads `/proc`. Each sample lists the process's descriptors, which
/// costs about 1.4 ms of CPU at 1,000 agents and ten times that at 10,000: every 20 ms it took
/// 7% of a core from a fleet on two.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The thread that samples a run's peaks of descriptors, RSS and heap, and its threads'
/// scheduling. On a thread of its own: reading `/proc` is blocking I/O (thousands of descriptor
/// entries), which on one of the runtime's two workers would stall the agents queued behind it
/// and be counted as theirs. The floor runs one too, though it needs none of the peaks, so that
/// both carry the same load on the same two cores.
struct Sampler {
    running: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Peaks>,
}

impl Sampler {
    /// Starts sampling this process and the mock's, and the PostgreSQL server's where the run
    /// has one.
    fn start(mock_pid: String, postgres: bool) -> Sampler {
        let running = Arc::new(AtomicBool::new(true));
        let thread = {
            let running = running.clone();
            std::thread::spawn(move || sample_peaks(&running, &mock_pid, postgres))
        };
        Sampler { running, thread }
    }

    /// Takes a last sample and returns the peaks.
    fn stop(self) -> Peaks {
        self.running.store(false, Ordering::Relaxed);
        self.thread.join().expect("the sampler")
    }
}

fn sample_peaks(running: &AtomicBool, mock_pid: &str, postgres: bool) -> Peaks {
    let mut peaks = Peaks::default();
    // The threads' scheduling is sampled once more after the run, so that it counts to the end.
    loop {
        peaks.fleet_sched.sample("self");
        peaks.mock_sched.sample(mock_pid);
        if postgres {
            peaks.postgres_sched.sample_named("postgres");
        }
        if !running.load(Ordering::Relaxed) {
            break;
        }
        peaks.threads = peaks.threads.max(thread_count());
        let all = open_descriptors();
        peaks.all_fds = peaks.all_fds.max(all);
        peaks.fds = peaks.fds.max(all);
        peaks.rss = peaks.rss.max(rss_bytes());
        peaks.heap = peaks.heap.max(HEAP.allocated());
        std::thread::sleep(SAMPLE_EVERY);
    }
    peaks.sampler_cpu = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos);
    peaks
}

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

/// Has the store serve a few sessions of its own before the clock starts, as a service's store
/// has by the time a thousand agents are in flight: its pool's connections open, their
/// statements prepared and the lock connection's. The floor's connections are opened before its
/// clock too. A cold store's first appends queue behind the opening of its connections, which
/// would measure the pool's start rather than the fleet (docs/performance-log.md has the runs).
async fn warm_up(store: &Arc<dyn SessionStore>) {
    let conversation = panto_core::Conversation::new();
    let prompt = panto_core::Message::new(panto_core::Role::User, vec![panto_core::ContentBlock::text("warm-up")]);
    let sessions: Vec<_> = (0..2 * postgres_options().pool_size)
        .map(|_| {
            let (store, conversation, prompt) = (store.clone(), conversation.clone(), prompt.clone());
            tokio::spawn(async move {
                let mut session = Session::create(store.clone());
                for _ in 0..3 {
                    session
                        .append(&[panto_core::store::PersistentMessage::new(&prompt, &conversation)])
                        .await
                        .expect("the store's warm-up append");
                }
                store.release_writer(session.id());
            })
        })
        .collect();
    for session in sessions {
        session.await.expect("a warm-up session's task");
    }
}

async fn run(kind: StoreKind, n: usize, postgres_url: Option<&str>, dir: &Path) -> Measured {
    let mock = MockChild::start(n);
    let inner: Arc<dyn SessionStore> = match kind {
        StoreKind::Jsonl => JsonlStore::with_durability(dir.join("sessions"), jsonl_durability()),
        StoreKind::Postgres => PostgresStore::connect_with(postgres_url.expect("a database URL"), postgres_options())
            .await
            .expect("connecting to the bench database"),
    };
    if kind == StoreKind::Postgres {
        warm_up(&inner).await;
    }
    let timed = TimedStore::new(inner);
    let store: Arc<dyn SessionStore> = timed.clone();
    let config = Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_base_url(mock.base_url.clone())
            .with_api_key("bench-key")
            .with_http2_prior_knowledge(http2()),
    );
    let tool: Arc<dyn Tool> = Arc::new(Lookup);

    let fds_base = open_descriptors();
    let sockets_base = open_sockets();
    let rss_base = rss_bytes();
    let heap_base = HEAP.allocated();
    let agents: Vec<Agent> = (0..n)
        .map(|i| {
            let mut config = config.clone();
            config.provider = config.provider.with_header(KEY_HEADER, format!("agent-{i}"));
            let mut agent = Agent::new(config, Session::create(store.clone()), None).expect("an agent");
            agent.register_tool(tool.clone()).expect("the tool");
            agent
        })
        .collect();
    let heap_fresh = HEAP.allocated().saturating_sub(heap_base);

    // What the threads had spent before the run, so that only the run's time is counted.
    let sched_start = {
        let mut totals = SchedTotals::default();
        totals.sample("self");
        totals.totals()
    };
    let postgres_sched_start = {
        let mut totals = SchedTotals::default();
        if kind == StoreKind::Postgres {
            totals.sample_named("postgres");
        }
        totals.totals()
    };
    let mock_sched_start = {
        let mut totals = SchedTotals::default();
        totals.sample(&mock.child.id().to_string());
        totals.totals()
    };
    let sampler = Sampler::start(mock.child.id().to_string(), kind == StoreKind::Postgres);
    let cpu_start = cpu_time();
    let started = Instant::now();
    let ramp = ramp();
    let tasks: Vec<_> = agents
        .into_iter()
        .enumerate()
        .map(|(i, mut agent)| {
            // Requests reach a service spread over time, not in one instant: agent i starts at
            // i/N of the ramp.
            let start_at = started + ramp.mul_f64(i as f64 / n as f64);
            tokio::spawn(async move {
                tokio::time::sleep_until(start_at.into()).await;
                let t = Instant::now();
                let mut times = TurnTimes {
                    start: timeline::now(),
                    ..TurnTimes::default()
                };
                let outcome = {
                    let mut stream = agent.run("Look up two words, then answer.".into());
                    let mut outcome = Err("the turn ended without turn_complete".to_owned());
                    loop {
                        match stream.next().await {
                            Ok(Some(Event::TurnComplete { .. })) => outcome = Ok(()),
                            Ok(Some(Event::ProviderRetry(retry))) => times.retries.push(retry.reason),
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(e) => {
                                outcome = Err(e.to_string());
                                break;
                            }
                        }
                    }
                    outcome
                };
                times.end = timeline::now();
                (agent, t.elapsed(), outcome, times)
            })
        })
        .collect();
    let mut agents = Vec::with_capacity(n);
    let mut walls = Vec::with_capacity(n);
    let mut turn_times = Vec::with_capacity(n);
    let mut failed = 0;
    let mut retries: std::collections::BTreeMap<String, usize> = Default::default();
    for (i, task) in tasks.into_iter().enumerate() {
        let (agent, wall, outcome, mut times) = task.await.expect("an agent's task");
        walls.push(wall);
        for reason in times.retries.drain(..) {
            *retries.entry(reason).or_default() += 1;
        }
        turn_times.push((agent.session_id().to_owned(), times));
        if let Err(e) = outcome {
            if failed == 0 {
                println!("fleet: agent {i}'s turn failed: {e}");
            }
            failed += 1;
        }
        agents.push(agent);
    }
    let elapsed = started.elapsed();
    if failed > 0 {
        println!("fleet: {failed} of {n} turns failed");
    }
    // A retried request is answered from the next scripted reply, so one retry fails its turn
    // later: say why requests were retried.
    let mut reasons: Vec<_> = retries.into_iter().collect();
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (reason, count) in reasons.iter().take(3) {
        println!("fleet: {count} requests retried: {reason}");
    }
    let cpu = cpu_time().saturating_sub(cpu_start);
    let peaks = sampler.stop();
    let cpu = cpu.saturating_sub(peaks.sampler_cpu);
    // Steady state: every agent idle, its session held.
    let fds_idle = open_descriptors().saturating_sub(fds_base);
    let sockets_idle = open_sockets().saturating_sub(sockets_base);
    let heap_idle = HEAP.allocated().saturating_sub(heap_base);
    let rss_idle = rss_bytes().saturating_sub(rss_base);
    // What the conversations alone take: a copy of each, measured as it is made.
    let before = HEAP.allocated();
    let copies: Vec<_> = agents.iter().map(|a| a.conversation().clone()).collect();
    let conversations = HEAP.allocated().saturating_sub(before);
    drop(copies);
    drop(agents);
    drop(store);
    // The last handle on the shared HTTP client: its pooled connections close with it.
    drop(config);
    // Let the stores finish letting go (PostgreSQL unlocks on tasks).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fds_after_drop = open_descriptors().saturating_sub(fds_base);

    // Only now: at 10,000 agents the fleet's connections may leave no descriptor for this one.
    let stats = mock.stats().await;
    let connections = stats["connections"].as_u64().unwrap_or(0) as usize;
    let mut mock_total = Duration::ZERO;
    let mut added: Vec<f64> = walls
        .iter()
        .enumerate()
        .map(|(i, wall)| {
            let served = stats["served_seconds"][format!("agent-{i}")].as_f64().unwrap_or(0.0);
            let served = Duration::from_secs_f64(served);
            mock_total += served;
            wall.saturating_sub(served).as_secs_f64() * 1e3
        })
        .collect();
    let added_by_turn = added.clone();
    added.sort_by(f64::total_cmp);

    // Where the added time went, turn by turn.
    let mut by_phase: [Vec<f64>; 6] = Default::default();
    // `PANTO_FLEET_TURNS=FILE` writes every turn's phases, to see when in the run time was lost.
    let mut turns_out =
        String::from("start_s\tadded_ms\tto_mock_ms\tafter_mock_ms\tfirst_append_ms\tstore_ms\ttools_ms\n");
    let first_start = turn_times.iter().map(|(_, t)| t.start).fold(f64::INFINITY, f64::min);
    for (i, (session_id, times)) in turn_times.iter().enumerate() {
        let spans: Vec<[f64; 2]> =
            serde_json::from_value(stats["served_spans"][format!("agent-{i}")].clone()).unwrap_or_default();
        if let Some(phases) = Phases::of(times, &timed.appends(session_id), &spans) {
            let v = phases.values();
            turns_out.push_str(&format!(
                "{:.4}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\n",
                times.start - first_start,
                added_by_turn.get(i).copied().unwrap_or_default(),
                v[0] * 1e3,
                v[1] * 1e3,
                v[2] * 1e3,
                v[3] * 1e3,
                v[4] * 1e3
            ));
            for (list, value) in by_phase.iter_mut().zip(v) {
                list.push(value * 1e3);
            }
        }
    }
    if let Ok(path) = std::env::var("PANTO_FLEET_TURNS") {
        std::fs::write(&path, turns_out).expect("writing PANTO_FLEET_TURNS");
    }
    let mut phases_mean_ms = [0.0; 6];
    let mut phases_p99_ms = [0.0; 6];
    for (k, list) in by_phase.iter_mut().enumerate() {
        list.sort_by(f64::total_cmp);
        phases_mean_ms[k] = list.iter().sum::<f64>() / list.len().max(1) as f64;
        phases_p99_ms[k] = percentile(list, 0.99);
    }
    let (_, fleet_wait) = peaks.fleet_sched.totals();
    let (mock_cpu, mock_wait) = peaks.mock_sched.totals();
    let (postgres_cpu, postgres_wait) = peaks.postgres_sched.totals();
    let (postgres_cpu, postgres_wait) = if kind == StoreKind::Postgres {
        (
            postgres_cpu - postgres_sched_start.0,
            postgres_wait - postgres_sched_start.1,
        )
    } else {
        (0.0, 0.0)
    };

    let per = |bytes: usize| bytes as f64 / n as f64 / 1024.0;
    Measured {
        turns_per_s: n as f64 / elapsed.as_secs_f64(),
        added_p50_ms: percentile(&added, 0.50),
        added_p99_ms: percentile(&added, 0.99),
        mock_ms_per_turn: mock_total.as_secs_f64() * 1e3 / n as f64,
        heap_fresh_kb: per(heap_fresh),
        heap_peak_kb: per(peaks.heap.saturating_sub(heap_base)),
        heap_idle_kb: per(heap_idle),
        conversation_kb: per(conversations),
        heap_idle_beyond_conversation_kb: per(heap_idle.saturating_sub(conversations)),
        rss_peak_kb: per(peaks.rss.saturating_sub(rss_base)),
        rss_idle_kb: per(rss_idle),
        fds_peak: peaks.fds.saturating_sub(fds_base) as f64 / n as f64,
        fds_idle: fds_idle as f64 / n as f64,
        sockets_idle: sockets_idle as f64 / n as f64,
        fds_after_drop,
        connections,
        cpu_ms_per_turn: cpu.as_secs_f64() * 1e3 / n as f64,
        peak_descriptors: peaks.all_fds,
        failed,
        phases_mean_ms,
        phases_p99_ms,
        fleet_runq_ms_per_turn: (fleet_wait - sched_start.1) * 1e3 / n as f64,
        mock_runq_ms_per_turn: (mock_wait - mock_sched_start.1) * 1e3 / n as f64,
        mock_cpu_ms_per_turn: (mock_cpu - mock_sched_start.0) * 1e3 / n as f64,
        threads_peak: peaks.threads,
        postgres_cpu_ms_per_turn: postgres_cpu * 1e3 / n as f64,
        postgres_runq_ms_per_turn: postgres_wait * 1e3 / n as f64,
    }
}
