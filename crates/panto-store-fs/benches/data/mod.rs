//! The bench data sets (issue 7): session directories written through the real
//! `JsonlStore`, so every file is a genuine session log.
//!
//! Each set lives in `target/bench-data/<name>/`, with `<name>.ready` beside it once complete.
//! The marker records the parameters it was built with; a set whose marker is missing or differs
//! is rebuilt. `cargo xtask bench-data` builds the default sets (about 1.3 GB) and, with
//! `--large`, the 10 GB one; a bench that needs a default set builds it on first use.

#![allow(dead_code, clippy::print_stderr)]

pub mod content;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use content::{Corpus, Rng};
use panto_core::store::{CompactionRecord, PersistentMessage};
use panto_core::wire::ProviderIdentity;
use panto_core::{ApiStyle, Conversation, Message, ReasoningEffort, Role, Session, ToolDecl};
use panto_store_fs::{Durability, JsonlStore};
use serde_json::json;

/// One KiB and one MiB. Sizes are in binary units so that "1 MB" is never smaller than a
/// megabyte.
pub const KIB: u64 = 1024;
/// One MiB.
pub const MIB: u64 = 1024 * KIB;

/// Bump when the generator or the store's writer changes, so stale sets are rebuilt. (4: the
/// writer puts `timestamp` and `activity` last on every line.)
const GENERATOR_VERSION: u32 = 4;

/// How a set's sessions use compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// Never compacted.
    Never,
    /// A third of the sessions compact once, about 60% of the way in.
    Occasional,
    /// Compacted at a quarter, half and three quarters, and a last time 150 entries before
    /// the end.
    Late,
}

/// A data set.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Directory name under `target/bench-data`.
    pub name: &'static str,
    /// How many sessions.
    pub sessions: usize,
    /// The size each session grows to (at least).
    pub bytes: u64,
    /// An exact entry count per session; `None` stops at `bytes`.
    pub entries: Option<usize>,
    /// Compaction.
    pub compaction: Compaction,
    /// Built only by `bench-data --large`.
    pub large: bool,
}

/// 1,000 sessions of 1 MB: the `list` target, and the directory resume-by-prefix runs in.
pub const SESSIONS_1K_1MB: Spec = Spec {
    name: "sessions-1k-1mb",
    sessions: 1000,
    bytes: MIB,
    entries: None,
    compaction: Compaction::Occasional,
    large: false,
};

/// 10,000 sessions of 1 KB: the smallest real sessions, one short prompt and one short answer
/// each (about 1.5 KB on disk, since every entry carries its activity summary).
pub const SESSIONS_10K_1KB: Spec = Spec {
    name: "sessions-10k-1kb",
    sessions: 10_000,
    bytes: KIB,
    entries: None,
    compaction: Compaction::Never,
    large: false,
};

/// 10,000 sessions of 1 MB (10 GB): only with `--large`.
pub const SESSIONS_10K_1MB: Spec = Spec {
    name: "sessions-10k-1mb",
    sessions: 10_000,
    bytes: MIB,
    entries: None,
    compaction: Compaction::Occasional,
    large: true,
};

/// One 128 MB session of 10,000 entries whose last compaction is 150 entries before the end.
pub const SESSION_128MB_COMPACTED: Spec = Spec {
    name: "session-128mb-compacted",
    sessions: 1,
    bytes: 128 * MIB,
    entries: Some(10_000),
    compaction: Compaction::Late,
    large: false,
};

/// The same size, never compacted: loading it returns the whole history.
pub const SESSION_128MB_FULL: Spec = Spec {
    name: "session-128mb-full",
    sessions: 1,
    bytes: 128 * MIB,
    entries: Some(10_000),
    compaction: Compaction::Never,
    large: false,
};

/// Every set, default ones first.
pub const ALL: [Spec; 5] = [
    SESSIONS_1K_1MB,
    SESSIONS_10K_1KB,
    SESSION_128MB_COMPACTED,
    SESSION_128MB_FULL,
    SESSIONS_10K_1MB,
];

/// `target/bench-data`.
pub fn root() -> PathBuf {
    panto_testkit::bench::target_dir().join("bench-data")
}

/// The directory of `spec`'s sessions.
pub fn dir(spec: &Spec) -> PathBuf {
    root().join(spec.name)
}

fn marker(spec: &Spec) -> PathBuf {
    root().join(format!("{}.ready", spec.name))
}

/// The first line of a set's marker: what it was built with.
fn describe(spec: &Spec) -> String {
    format!(
        "generator v{GENERATOR_VERSION}: {} sessions, {} bytes each, entries {:?}, compaction {:?}",
        spec.sessions, spec.bytes, spec.entries, spec.compaction
    )
}

/// Whether `spec` has been built with the current parameters.
pub fn is_ready(spec: &Spec) -> bool {
    std::fs::read_to_string(marker(spec)).is_ok_and(|m| m.lines().next() == Some(describe(spec).as_str()))
}

/// What a build wrote.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    /// Sessions.
    pub sessions: usize,
    /// Bytes in all files.
    pub bytes: u64,
    /// Entries (lines after the header) in all files.
    pub entries: usize,
}

/// The set's directory, building it first if it is not ready.
pub fn ensure(spec: &Spec) -> PathBuf {
    if !is_ready(spec) {
        if let Err(e) = build(spec) {
            panic!("building bench data set {}: {e}", spec.name);
        }
    }
    dir(spec)
}

/// Builds `spec` from scratch (removing what was there) and writes its marker.
pub fn build(spec: &Spec) -> Result<Written, String> {
    let dir = dir(spec);
    let _ = std::fs::remove_file(marker(spec));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    eprintln!("bench-data: building {} ({})", spec.name, describe(spec));
    let mut rng = Rng::new(0x5eed_0000 ^ spec.sessions as u64 ^ spec.bytes);
    let corpus = Corpus::new(&mut rng);
    let mut total = Written::default();
    for i in 0..spec.sessions {
        let compaction = match spec.compaction {
            Compaction::Occasional if i % 3 == 0 => Compaction::Occasional,
            Compaction::Occasional => Compaction::Never,
            other => other,
        };
        let (bytes, entries) = rt
            .block_on(write_session(&dir, &corpus, &mut rng, spec, compaction, i))
            .map_err(|e| format!("session {i}: {e}"))?;
        total.sessions += 1;
        total.bytes += bytes;
        total.entries += entries;
        if spec.sessions >= 10 && (i + 1) % (spec.sessions / 10) == 0 {
            eprintln!(
                "bench-data: {}: {}/{} sessions, {:.0} MB, {:.1}s",
                spec.name,
                i + 1,
                spec.sessions,
                total.bytes as f64 / 1e6,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let summary = format!(
        "{}\n{} sessions, {} bytes, {} entries, built in {:.1}s\n",
        describe(spec),
        total.sessions,
        total.bytes,
        total.entries,
        started.elapsed().as_secs_f64()
    );
    std::fs::write(marker(spec), &summary).map_err(|e| e.to_string())?;
    eprint!("bench-data: {}: {summary}", spec.name);
    Ok(total)
}

/// The provider identity every generated message carries.
fn wire() -> ProviderIdentity {
    ProviderIdentity {
        api_style: ApiStyle::AnthropicMessages,
        base_url: "https://api.anthropic.com".into(),
        model: "claude-sonnet-4-5".into(),
        reasoning: ReasoningEffort::Medium,
    }
}

/// The tools offered with every message, as the CLI offers its built-ins.
fn tools() -> Vec<ToolDecl> {
    ["read_file", "bash", "edit_file", "grep"]
        .iter()
        .map(|name| ToolDecl {
            name: (*name).to_owned(),
            description: format!("The {name} tool."),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect()
}

/// One session being written the way the agent writes it: one append per message, the
/// conversation kept as the agent holds it (compactions applied).
struct Writer<'a> {
    store: Arc<JsonlStore>,
    session: panto_core::Session,
    conversation: Conversation,
    wire: ProviderIdentity,
    tools: Vec<ToolDecl>,
    spec: &'a Spec,
    bytes: u64,
    entries: usize,
}

impl Writer<'_> {
    fn done(&self) -> bool {
        match self.spec.entries {
            Some(n) => self.entries >= n,
            None => self.bytes >= self.spec.bytes,
        }
    }

    async fn push(&mut self, message: Message) -> panto_core::Result<()> {
        self.conversation.messages.push(message);
        let message = self.conversation.messages.last().expect("just pushed");
        self.append(message.clone(), None).await
    }

    /// Compacts like the agent: system messages before the cut, the summary, the kept tail.
    async fn compact(&mut self, summary: Message) -> panto_core::Result<()> {
        let messages = &self.conversation.messages;
        // Cut before the last human prompt that leaves at least 10 messages to summarise, so no
        // tool call is separated from its result.
        let cut = (10..messages.len().saturating_sub(10))
            .rev()
            .find(|&i| messages[i].is_human_prompt())
            .unwrap_or(messages.len());
        let mut next: Vec<Message> = messages[..cut]
            .iter()
            .filter(|m| m.role == Role::System)
            .cloned()
            .collect();
        next.push(summary.clone());
        next.extend_from_slice(&messages[cut..]);
        let tokens_before = (messages.iter().map(|m| m.text().len()).sum::<usize>() / 4) as u64;
        let tokens_after = (next.iter().map(|m| m.text().len()).sum::<usize>() / 4) as u64;
        self.conversation.messages = next;
        let record = CompactionRecord {
            first_kept: cut,
            tokens_before,
            tokens_after,
        };
        self.append(summary, Some(record)).await
    }

    async fn append(&mut self, message: Message, compaction: Option<CompactionRecord>) -> panto_core::Result<()> {
        let entry = PersistentMessage {
            message: &message,
            usage: message.usage,
            wire: (message.role != Role::System).then_some(&self.wire),
            conversation: &self.conversation,
            tools_available: &self.tools,
            compaction,
        };
        self.session.append(&[entry]).await?;
        self.entries += 1;
        let path = self.store.session_path(self.session.id())?;
        self.bytes = std::fs::metadata(&path)
            .map_err(|e| panto_core::Error::store("stat", e))?
            .len();
        Ok(())
    }

    /// A tool result size: 4–70 KB, log-uniform, nudged so that a session with an exact entry
    /// count ends near its byte size.
    fn result_size(&self, rng: &mut Rng) -> usize {
        let (lo, hi) = (4 * 1024, 70 * 1024);
        let raw = rng.log_uniform(lo, hi) as f64;
        let Some(goal) = self.spec.entries else {
            return raw as usize;
        };
        let left_entries = goal.saturating_sub(self.entries).max(1) as f64;
        let left_bytes = self.spec.bytes.saturating_sub(self.bytes) as f64;
        // Tool results are about half the entries; the other half average about 3 KB.
        let wanted = (2.0 * left_bytes / left_entries - 3000.0).max(0.0);
        let factor = (wanted / 23_000.0).clamp(0.15, 4.0);
        ((raw * factor) as usize).clamp(lo, hi)
    }
}

async fn write_session(
    dir: &Path,
    corpus: &Corpus,
    rng: &mut Rng,
    spec: &Spec,
    compaction: Compaction,
    seq: usize,
) -> panto_core::Result<(u64, usize)> {
    // A store per session, so the whole set never holds thousands of files open and locked.
    let store = JsonlStore::with_durability(dir, Durability::None);
    let session = Session::create(store.clone());
    let metadata = json!({"project": "panto-bench", "seq": seq}).to_string();
    let mut w = Writer {
        store,
        session,
        conversation: Conversation::with_metadata(metadata),
        wire: wire(),
        tools: tools(),
        spec,
        bytes: 0,
        entries: 0,
    };
    let small = spec.bytes < 16 * KIB;
    let mut compactions: Vec<usize> = match (compaction, spec.entries) {
        (Compaction::Late, Some(n)) => vec![n.saturating_sub(150), 3 * n / 4, n / 2, n / 4],
        _ => Vec::new(),
    };
    let mut occasional = compaction == Compaction::Occasional;
    let mut call = 0;
    while !w.done() {
        if small {
            w.push(content::prompt(corpus, rng, 60)).await?;
            if !w.done() {
                w.push(content::answer(corpus, rng, 120)).await?;
            }
            continue;
        }
        if compactions.last().is_some_and(|&at| w.entries >= at) {
            compactions.pop();
            w.compact(content::summary(corpus, rng)).await?;
            continue;
        }
        if occasional && w.bytes >= spec.bytes * 6 / 10 {
            occasional = false;
            w.compact(content::summary(corpus, rng)).await?;
            continue;
        }
        // Sessions sized in bytes end where a turn ends, as real ones do, except one in ten that
        // was interrupted mid-turn (its last entry a tool call or a tool result).
        let exact = spec.entries.is_some();
        let interrupted = !exact && rng.chance(0.1);
        let stop_early = |w: &Writer<'_>| (exact || interrupted) && w.done();
        w.push(content::prompt(corpus, rng, 600)).await?;
        for _ in 0..rng.range(1, 7) {
            if stop_early(&w) {
                break;
            }
            call += 1;
            let request = content::tool_call(corpus, rng, call);
            w.push(request.clone()).await?;
            if stop_early(&w) {
                break;
            }
            let size = w.result_size(rng);
            w.push(content::tool_result(corpus, rng, &request, size)).await?;
        }
        if !stop_early(&w) {
            w.push(content::answer(corpus, rng, 1500)).await?;
        }
    }
    Ok((w.bytes, w.entries))
}
