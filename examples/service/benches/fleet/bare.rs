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
//! With [`Writes`], the floor also writes each turn as the fleet's store must to keep panto's
//! durability promise (docs/stores.md, "When a turn writes"), at the same points of the turn:
//! the assistant messages' before the turn goes on, the tool results' while the next request
//! travels. What the disk's syncs or the database's commits cost, under the same load, is then
//! the floor's as much as the fleet's, and what remains over it is panto's.
//!
//! - On the JSONL store: a new file per turn, created with the first assistant message's line,
//!   and a line per message after it, each synced (`fdatasync`) when the fleet's store syncs.
//!   The lines are of the store's sizes and the writes run on Tokio's blocking pool, as the
//!   store's do.
//! - On PostgreSQL: the least a store there must do, on the same server: each of the turn's
//!   five appends is one statement committed on its own (so durably, as the server flushes every
//!   commit), writing the session's row (created by the first, updated under the writer's
//!   token by the others, so that a session another writer took gets nothing) and the append's
//!   messages as `jsonb` of the store's sizes, over as many connections as the store's pool,
//!   the statements prepared and pipelined. Not the floor's: the store's session lock (an
//!   advisory lock taken before a session's first append), its schema's other columns and
//!   indexes, and its writing the appends of many sessions in one statement.

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

/// How the floor writes its turns, as the fleet's store must (see the module's overview).
#[derive(Debug, Clone)]
pub enum Writes {
    /// As the JSONL store: a file per turn in `dir`, each write synced when `sync` is (the
    /// store's `Durability::Fsync`).
    Files { dir: PathBuf, sync: bool },
    /// As the PostgreSQL store: into the database at `url`, which the floor has to itself, over
    /// `pool_size` connections (the store's pool).
    Postgres { url: String, pool_size: usize },
}

/// The bytes the JSONL store writes for a fleet turn, in the order of its appends: the header
/// with the prompt and the first assistant message (a new session is written with its first
/// answer), the first tool result, the second assistant message, the second result, the answer.
/// The sizes are those of the session files a fleet run keeps (`PANTO_FLEET_KEEP=1`); a change
/// to the session format changes them.
const LINES: [usize; 5] = [HEADER + PROMPT + ASSISTANT_FIRST, RESULT, ASSISTANT, RESULT, ANSWER];
const HEADER: usize = 153;
const PROMPT: usize = 588;
const ASSISTANT_FIRST: usize = 860;
const RESULT: usize = 675;
const ASSISTANT: usize = 853;
const ANSWER: usize = 835;

/// The messages of the same appends on PostgreSQL (the header is the session's row there), by
/// the sizes of their lines.
const APPENDS: [&[usize]; 5] = [
    &[PROMPT, ASSISTANT_FIRST],
    &[RESULT],
    &[ASSISTANT],
    &[RESULT],
    &[ANSWER],
];

/// Where a turn's writes go.
enum TurnWrites {
    File(TurnFile),
    Rows(TurnRows),
}

impl TurnWrites {
    /// Writes the turn's next append and returns once it is durable (as the store's setting
    /// makes it).
    async fn write(&mut self) -> io::Result<()> {
        match self {
            TurnWrites::File(file) => file.write().await,
            TurnWrites::Rows(rows) => rows.write().await,
        }
    }
}

/// One turn's file: created by the first write, locked as the store locks a session it writes.
struct TurnFile {
    path: PathBuf,
    file: Option<Arc<File>>,
    sync: bool,
    written: usize,
}

impl TurnFile {
    /// Writes the turn's next line (synced per `sync`) and returns once it is written: on the
    /// blocking pool as the store does, except an unsynced line to a file already open, which
    /// the store writes on the calling thread.
    async fn write(&mut self) -> io::Result<()> {
        let len = LINES[self.written.min(LINES.len() - 1)];
        self.written += 1;
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
                    // The store syncs the directory once per new session file; so does the floor.
                    if sync {
                        if let Some(dir) = path.parent() {
                            File::open(dir)?.sync_all()?;
                        }
                    }
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

/// The floor's tables: a session's row and its messages, keyed as the store's.
const SCHEMA: &str = "create table floor_sessions ( \
     id text collate \"C\" primary key, writer text not null, modified timestamptz not null, \
     message_count bigint not null); \
     create table floor_entries ( \
     session_id text collate \"C\" not null references floor_sessions (id) on delete cascade, \
     seq bigint not null, message jsonb not null, primary key (session_id, seq))";

/// A session's first append: its row created, its messages inserted. `$1` the session, `$2` the
/// writer's token, `$3` the message count after the append, `$4`/`$5` the messages' positions
/// and JSON.
const FIRST_APPEND: &str = "with s as ( \
     insert into floor_sessions (id, writer, modified, message_count) values ($1, $2, now(), $3) \
     on conflict (id) do nothing returning id) \
     insert into floor_entries (session_id, seq, message) \
     select s.id, r.seq, r.message::jsonb from s, unnest($4::bigint[], $5::text[]) as r(seq, message)";

/// Every later append: the row updated only while this writer holds the session.
const NEXT_APPEND: &str = "with s as ( \
     update floor_sessions set modified = now(), message_count = $3 where id = $1 and writer = $2 \
     returning id) \
     insert into floor_entries (session_id, seq, message) \
     select s.id, r.seq, r.message::jsonb from s, unnest($4::bigint[], $5::text[]) as r(seq, message)";

/// The floor's connections to PostgreSQL, as many as the store's pool, each with the two
/// statements prepared on it.
struct Database {
    connections: Vec<(tokio_postgres::Client, [tokio_postgres::Statement; 2])>,
    next: std::sync::atomic::AtomicUsize,
    token: String,
    /// Each append's messages, the same for every turn and so made once, before the clock (as
    /// the HTTP bodies are): JSON objects of the lines' sizes, `{"text":"xx…"}`.
    appends: [Vec<String>; 5],
}

impl Database {
    /// Connects `pool_size` times to `url`, with the store's planner settings, and makes the
    /// floor's tables.
    async fn open(url: &str, pool_size: usize) -> Database {
        let token = format!("floor-{}", std::process::id());
        let mut connections = Vec::with_capacity(pool_size);
        for k in 0..pool_size.max(1) {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("the floor's connection to {url}: {e}"));
            tokio::spawn(connection);
            client
                .batch_execute(
                    "set plan_cache_mode = force_generic_plan; set enable_seqscan = off; \
                     set application_name = 'panto fleet floor'",
                )
                .await
                .expect("the floor's connection settings");
            if k == 0 {
                client.batch_execute(SCHEMA).await.expect("the floor's tables");
            }
            let first = client.prepare(FIRST_APPEND).await.expect("the floor's first append");
            let next = client.prepare(NEXT_APPEND).await.expect("the floor's next append");
            // Each statement run once before the clock starts, as the fleet's store runs its
            // own (`warm_up` in fleet.rs): the connection's generic plans made.
            let session = format!("warm-up-{k}");
            for (statement, seq) in [(&first, 0_i64), (&next, 1)] {
                client
                    .execute(statement, &[&session, &token, &(seq + 1), &vec![seq], &vec!["{}"]])
                    .await
                    .expect("the floor's warm-up append");
            }
            connections.push((client, [first, next]));
        }
        Database {
            connections,
            next: Default::default(),
            token,
            appends: APPENDS.map(|sizes| {
                sizes
                    .iter()
                    .map(|&len| format!("{{\"text\":\"{}\"}}", "x".repeat(len.saturating_sub(11))))
                    .collect()
            }),
        }
    }
}

/// One turn's session in the floor's database.
struct TurnRows {
    database: Arc<Database>,
    session: String,
    written: usize,
    messages: i64,
}

impl TurnRows {
    /// Writes the turn's next append in one statement, committed on its own, on the next
    /// connection in turn.
    async fn write(&mut self) -> io::Result<()> {
        let database = &self.database;
        let bodies = &database.appends[self.written.min(APPENDS.len() - 1)];
        let first = self.written == 0;
        self.written += 1;
        let seqs: Vec<i64> = (self.messages..).take(bodies.len()).collect();
        self.messages += bodies.len() as i64;
        let k = database.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % database.connections.len();
        let (client, statements) = &database.connections[k];
        let statement = &statements[usize::from(!first)];
        let written = client
            .execute(
                statement,
                &[&self.session, &database.token, &self.messages, &seqs, bodies],
            )
            .await
            .map_err(io::Error::other)?;
        if written != bodies.len() as u64 {
            return Err(io::Error::other(format!(
                "the floor's session {} was not written ({written} of {} messages)",
                self.session,
                bodies.len()
            )));
        }
        Ok(())
    }
}

/// Runs `n` bare turns and measures them; with `writes`, each turn also writes as the fleet's
/// store would.
pub async fn run(n: usize, writes: Option<&Writes>) -> Floor {
    let mock = MockChild::start(n);
    let mut builder = panto_core::http_client_builder().http2_initial_connection_window_size(CONNECTION_WINDOW);
    if http2() {
        builder = builder.http2_prior_knowledge();
    }
    let client = builder.build().expect("an HTTP client");
    let url = format!("{}/v1/messages", mock.base_url);
    let database = match writes {
        Some(Writes::Files { dir, .. }) => {
            std::fs::create_dir_all(dir).expect("the floor's directory");
            None
        }
        Some(Writes::Postgres { url, pool_size }) => Some(Arc::new(Database::open(url, *pool_size).await)),
        None => None,
    };
    // The sessions' ids: time-ordered as the store's (UUID v7), this run's apart from others'.
    let run_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
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
            let mut file = writes.map(|writes| match writes {
                Writes::Files { dir, sync } => TurnWrites::File(TurnFile {
                    path: dir.join(format!("turn-{i}.jsonl")),
                    file: None,
                    sync: *sync,
                    written: 0,
                }),
                Writes::Postgres { .. } => TurnWrites::Rows(TurnRows {
                    database: database.clone().expect("the floor's database"),
                    session: format!("{run_id:032x}-{i:08}"),
                    written: 0,
                    messages: 0,
                }),
            });
            tokio::spawn(async move {
                tokio::time::sleep_until(start_at.into()).await;
                let t = Instant::now();
                let mut requests = Vec::with_capacity(3);
                let mut writes = 0.0;
                let mut ok = true;
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
                            let send = async {
                                let sent = send.await;
                                (sent, now())
                            };
                            let ((sent, sent_at), written) = tokio::join!(send, async {
                                let written = file.write().await;
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
                        if let Err(e) = file.write().await {
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
