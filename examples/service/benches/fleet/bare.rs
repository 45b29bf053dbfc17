//! The floor under the fleet's added latency: the same turns made by a bare HTTP client.
//!
//! A turn's added latency (its wall time minus the mock's time answering its requests) holds
//! more than panto: the HTTP stack, the loopback, the mock's own queue before it reads a request
//! and after it writes a reply's last piece, and the runtime's queue on two busy cores. To tell
//! panto's part, N tasks on the same runtime, against a mock child holding the same scripts,
//! with the same ramp, make each agent's three requests (bodies of the agent's sizes) through a
//! client configured as a provider's shared client, and read each reply to its end, decoding
//! nothing. What such a turn adds is the floor; panto's added latency is what a fleet of agents
//! adds over it.
//!
//! When the fleet's store is the JSONL one, the floor also writes each turn as that store must
//! to keep panto's durability promise (docs/stores.md, "When a turn writes"): a new file per
//! turn, created with the first assistant message's line, and a line per message after it,
//! each synced (`fdatasync`) when the fleet's store syncs, at the same points of the turn: the
//! assistant messages' before the turn goes on, the tool results' while the next request
//! travels. The lines are of the store's sizes and the writes run on Tokio's blocking pool, as
//! the store's do. What the disk's syncs cost, under the same load of syncs, is then the
//! floor's as much as the fleet's, and what remains over it is panto's.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use panto_testkit::KEY_HEADER;
use serde_json::json;

use super::timeline::now;
use super::{cpu_time, http2, percentile, ramp, MockChild, Sampler};

/// The connection window of a provider's shared client (panto-core's config.rs).
const CONNECTION_WINDOW: u32 = 256 << 20;

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
    /// Mean per turn, ms: the time the turn waited on its writes (whole for the assistant
    /// messages', what outlasted the next request's send for the tool results'). 0 without
    /// [`Files`].
    pub writes_mean_ms: f64,
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

/// Where and how the floor writes its turns, as the JSONL store would (see the module's
/// overview).
#[derive(Debug, Clone)]
pub struct Files {
    /// The directory the turns' files go to (one file per turn).
    pub dir: PathBuf,
    /// Whether each write is synced, as the store's `Durability::Fsync`.
    pub sync: bool,
}

/// The bytes the JSONL store writes for a fleet turn, in the order of its appends: the header
/// with the prompt and the first assistant message (a new session is written with its first
/// answer), the first tool result, the second assistant message, the second result, the answer.
/// Measured from the session files of a fleet run (`PANTO_FLEET_KEEP=1`, 2026-12-02).
const LINES: [usize; 5] = [FIRST_APPEND, RESULT, ASSISTANT, RESULT, ANSWER];
const FIRST_APPEND: usize = 153 + 588 + 860;
const RESULT: usize = 675;
const ASSISTANT: usize = 853;
const ANSWER: usize = 835;

/// One turn's file: created by the first write, locked as the store locks a session it writes.
struct TurnFile {
    path: PathBuf,
    file: Option<Arc<File>>,
    sync: bool,
}

impl TurnFile {
    /// Writes the turn's next line of `len` bytes (synced per `sync`) and returns once it is
    /// written: on the blocking pool as the store does, except an unsynced line to a file
    /// already open, which the store writes on the calling thread.
    async fn write(&mut self, len: usize) -> io::Result<()> {
        let line = move || {
            let mut line = vec![b'x'; len];
            line[len - 1] = b'\n';
            line
        };
        if let (Some(file), false) = (&self.file, self.sync) {
            return (&**file).write_all(&line());
        }
        let (path, file, sync) = (self.path.clone(), self.file.clone(), self.sync);
        let file = tokio::task::spawn_blocking(move || -> io::Result<Arc<File>> {
            let file = match file {
                Some(file) => file,
                None => {
                    let file = std::fs::OpenOptions::new()
                        .append(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&path)?;
                    file.try_lock().map_err(io::Error::other)?;
                    Arc::new(file)
                }
            };
            (&*file).write_all(&line())?;
            if sync {
                file.sync_data()?;
            }
            Ok(file)
        })
        .await
        .map_err(io::Error::other)??;
        self.file = Some(file);
        Ok(())
    }
}

/// Runs `n` bare turns and measures them; with `files`, each turn also writes as the JSONL store
/// would.
pub async fn run(n: usize, files: Option<&Files>) -> Floor {
    let mock = MockChild::start(n);
    let mut builder = panto_core::http_client_builder().http2_initial_connection_window_size(CONNECTION_WINDOW);
    if http2() {
        builder = builder.http2_prior_knowledge();
    }
    let client = builder.build().expect("an HTTP client");
    let url = format!("{}/v1/messages", mock.base_url);
    if let Some(files) = files {
        std::fs::create_dir_all(&files.dir).expect("the floor's directory");
    }
    // Made before the clock starts: the floor is the HTTP and the mock, not building JSON.
    let mut all_bodies: Vec<[Vec<u8>; 3]> = (0..n).map(bodies).collect();
    let sampler = Sampler::start(mock.child.id().to_string(), false);
    let cpu_start = cpu_time();
    let started = Instant::now();
    let ramp = ramp();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            let bodies = std::mem::take(&mut all_bodies[i]);
            let start_at = started + ramp.mul_f64(i as f64 / n as f64);
            let mut file = files.map(|files| TurnFile {
                path: files.dir.join(format!("turn-{i}.jsonl")),
                file: None,
                sync: files.sync,
            });
            tokio::spawn(async move {
                tokio::time::sleep_until(start_at.into()).await;
                let t = Instant::now();
                let mut requests = Vec::with_capacity(3);
                let mut writes = 0.0;
                let mut ok = true;
                let mut lines = LINES.iter().copied();
                for (k, body) in bodies.into_iter().enumerate() {
                    let ready = now();
                    let send = client
                        .post(&url)
                        .header(KEY_HEADER, format!("agent-{i}"))
                        .header("x-api-key", "bench-key")
                        .header("anthropic-version", "2023-06-01")
                        .header("content-type", "application/json")
                        .header("accept", "text/event-stream")
                        .body(body)
                        .send();
                    // A tool step's results are written while the request carrying them
                    // travels, and stored before its response is read.
                    let (sent, written) = match file.as_mut().filter(|_| k > 0) {
                        Some(file) => {
                            let len = lines.next().unwrap_or(RESULT);
                            let send = async {
                                let sent = send.await;
                                (sent, now())
                            };
                            let ((sent, sent_at), written) = tokio::join!(send, async {
                                let written = file.write(len).await;
                                (written, now())
                            });
                            writes += (written.1 - sent_at).max(0.0) * 1e3;
                            (sent, written.0)
                        }
                        None => (send.await, Ok(())),
                    };
                    let response = match (sent.and_then(reqwest::Response::error_for_status), written) {
                        (Ok(response), Ok(())) => response,
                        (Err(e), _) => {
                            if i == 0 {
                                println!("fleet: the bare client's turn 0 failed: {e}");
                            }
                            ok = false;
                            break;
                        }
                        (_, Err(e)) => {
                            if i == 0 {
                                println!("fleet: the bare client's turn 0 failed to write: {e}");
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
                    // The assistant message is stored before the turn goes on.
                    if let Some(file) = file.as_mut() {
                        let before = now();
                        let len = lines.next().unwrap_or(ASSISTANT);
                        if let Err(e) = file.write(len).await {
                            if i == 0 {
                                println!("fleet: the bare client's turn 0 failed to write: {e}");
                            }
                            ok = false;
                            break;
                        }
                        writes += (now() - before) * 1e3;
                    }
                }
                (t.elapsed(), ok, requests, writes)
            })
        })
        .collect();
    let mut turns = Vec::with_capacity(n);
    for task in tasks {
        turns.push(task.await.expect("a bare turn's task"));
    }
    let cpu = cpu_time().saturating_sub(cpu_start);
    let cpu = cpu.saturating_sub(sampler.stop().sampler_cpu);
    let stats = mock.stats().await;
    let mut floor = Floor {
        cpu_ms_per_turn: cpu.as_secs_f64() * 1e3 / n as f64,
        ..Floor::default()
    };
    let mut added = Vec::with_capacity(n);
    for (i, (wall, ok, requests, writes)) in turns.iter().enumerate() {
        let key = format!("agent-{i}");
        let spans: Vec<[f64; 2]> = serde_json::from_value(stats["served_spans"][&key].clone()).unwrap_or_default();
        if !ok || spans.len() != 3 || requests.len() != 3 {
            floor.failed += 1;
            continue;
        }
        let served = stats["served_seconds"][&key].as_f64().unwrap_or(0.0);
        added.push((wall.as_secs_f64() - served) * 1e3);
        floor.writes_mean_ms += writes;
        for (request, span) in requests.iter().zip(&spans) {
            floor.to_mock_mean_ms += (span[0] - request[0]) * 1e3;
            floor.after_mock_mean_ms += (request[1] - span[1]) * 1e3;
        }
    }
    added.sort_by(f64::total_cmp);
    let counted = added.len().max(1) as f64;
    floor.to_mock_mean_ms /= counted;
    floor.after_mock_mean_ms /= counted;
    floor.writes_mean_ms /= counted;
    floor.added_p50_ms = percentile(&added, 0.50);
    floor.added_p99_ms = percentile(&added, 0.99);
    floor
}
