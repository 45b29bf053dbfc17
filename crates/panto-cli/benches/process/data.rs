//! The session directories the process benches run in.
//!
//! The big sets come from `cargo xtask bench-data` (panto-store-fs's `bench_data`, in
//! `target/bench-data/`) when it has built them; otherwise a smaller generator here writes
//! equivalent ones through the real store. The resume benches append to the session they resume,
//! so they never run in a shared set: each gets its own directory of hard links to the shared
//! files (no copying), plus a private copy of the session it resumes, restored before every run.

use std::path::{Path, PathBuf};

use panto_core::store::PersistentMessage;
use panto_core::wire::ProviderIdentity;
use panto_core::{
    ApiStyle, ContentBlock, Conversation, Message, ReasoningEffort, Role, Session, StopReason, ToolResultContent, Usage,
};
use panto_store_fs::{Durability, JsonlStore};

/// `target/bench-data`.
pub fn root() -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    };
    target.join("bench-data")
}

/// The session files of `dir`, sorted by name.
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| Some(e.ok()?.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A shared, read-only set: xtask's when it is ready, else one generated here.
pub fn shared_set(xtask_name: &str, own_name: &str, sessions: usize, bytes: u64) -> PathBuf {
    let root = root();
    let xtask = root.join(xtask_name);
    if root.join(format!("{xtask_name}.ready")).exists() && session_files(&xtask).len() >= sessions {
        return xtask;
    }
    let own = root.join(own_name);
    let marker = root.join(format!("{own_name}.ready"));
    let describe = format!("{sessions} sessions of at least {bytes} bytes");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == describe) {
        return own;
    }
    eprintln!("process bench: generating {} ({describe})", own.display());
    if own.exists() {
        std::fs::remove_dir_all(&own).unwrap_or_else(|e| panic!("removing {}: {e}", own.display()));
    }
    generate(&own, sessions, bytes);
    std::fs::write(&marker, describe).unwrap_or_else(|e| panic!("writing {}: {e}", marker.display()));
    own
}

/// Writes `sessions` sessions of at least `bytes` each into `dir`, one append per message as the
/// agent writes them: a system prompt, a prompt, tool calls with 4–70 KB results until the size
/// is reached, and an answer.
fn generate(dir: &Path, sessions: usize, bytes: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("a runtime: {e}"));
    let store = JsonlStore::with_durability(dir, Durability::None);
    let wire = ProviderIdentity {
        api_style: ApiStyle::AnthropicMessages,
        base_url: "https://api.anthropic.com".into(),
        model: "claude-sonnet-4-5".into(),
        reasoning: ReasoningEffort::Off,
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..sessions {
        let session = Session::create(store.clone());
        let path = store.session_path(session.id()).unwrap_or_else(|e| panic!("{e}"));
        let mut conversation = Conversation::new();
        let mut session = session;
        let mut push = |conversation: &mut Conversation, message: Message| {
            conversation.messages.push(message);
            let m = conversation
                .messages
                .last()
                .unwrap_or_else(|| unreachable!("just pushed"));
            let entry = PersistentMessage {
                message: m,
                usage: m.usage,
                wire: (m.role != Role::System).then_some(&wire),
                conversation,
                tools_available: &[],
                compaction: None,
            };
            rt.block_on(session.append(&[entry]))
                .unwrap_or_else(|e| panic!("generating session {i}: {e}"));
        };
        push(&mut conversation, system("You are a careful coding assistant."));
        push(
            &mut conversation,
            text(Role::User, &format!("Session {i}: please look at the parser.")),
        );
        let mut call = 0;
        while std::fs::metadata(&path).map_or(0, |m| m.len()) < bytes.saturating_sub(2_000) {
            call += 1;
            let id = format!("toolu_{i:04}_{call:04}");
            push(&mut conversation, tool_call(&id, call));
            let size = 4 * 1024 + (next() % (66 * 1024)) as usize;
            push(&mut conversation, tool_result(&id, size));
        }
        push(
            &mut conversation,
            answer("The parser is fine; the bug was in the caller."),
        );
        if sessions >= 10 && (i + 1) % (sessions / 10) == 0 {
            eprintln!("process bench: {}/{sessions} sessions", i + 1);
        }
    }
}

fn system(t: &str) -> Message {
    Message::new(
        Role::System,
        vec![ContentBlock::System {
            text: t.to_owned(),
            mode: panto_core::SystemMode::Append,
        }],
    )
}

fn text(role: Role, t: &str) -> Message {
    Message::new(role, vec![ContentBlock::text(t)])
}

fn usage() -> Option<Usage> {
    Some(Usage {
        input_tokens: 1200,
        output_tokens: 80,
        cache_read_tokens: 9000,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    })
}

fn tool_call(id: &str, n: usize) -> Message {
    let mut m = Message::new(
        Role::Assistant,
        vec![
            ContentBlock::text(format!("Let me read part {n} of the parser.")),
            ContentBlock::ToolUse {
                id: id.to_owned(),
                name: "read".into(),
                input: serde_json::json!({"path": format!("src/parser/part{n}.rs")}),
            },
        ],
    );
    m.usage = usage();
    m.stop_reason = Some(StopReason::ToolUse);
    m
}

fn tool_result(id: &str, size: usize) -> Message {
    const LINE: &str = "    let value = parser.next_token()?; // \"quoted\", tabs\tand naïve text\n";
    let mut out = String::with_capacity(size + LINE.len());
    let mut n = 1;
    while out.len() < size {
        out.push_str(&format!("{n:>6}\t{LINE}"));
        n += 1;
    }
    Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: id.to_owned(),
            content: vec![ToolResultContent::Text { text: out }],
            is_error: false,
        }],
    )
}

fn answer(t: &str) -> Message {
    let mut m = text(Role::Assistant, t);
    m.usage = usage();
    m.stop_reason = Some(StopReason::EndTurn);
    m
}

/// A directory to resume in: hard links to `others` sessions of a shared set, and a private
/// copy of one more, the one resumed.
#[derive(Debug)]
pub struct ResumeDir {
    /// The directory.
    pub dir: PathBuf,
    /// The resumed session's file.
    target: PathBuf,
    /// Its untouched copy, restored before every run.
    pristine: PathBuf,
    /// The id prefix the bench resumes by.
    pub prefix: String,
}

impl ResumeDir {
    /// Builds `name` under [`root`] from `source`: its first file is the resumed session, the
    /// next `others` files are linked beside it.
    pub fn build(name: &str, source: &Path, others: usize) -> ResumeDir {
        let files = session_files(source);
        assert!(
            files.len() > others,
            "{} holds {} sessions; {} are needed",
            source.display(),
            files.len(),
            others + 1
        );
        let dir = root().join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("removing {}: {e}", dir.display()));
        }
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        for file in &files[1..=others] {
            let link = dir.join(file.file_name().unwrap_or_default());
            if std::fs::hard_link(file, &link).is_err() {
                std::fs::copy(file, &link).unwrap_or_else(|e| panic!("copying {}: {e}", file.display()));
            }
        }
        let source_target = &files[0];
        let target = dir.join(source_target.file_name().unwrap_or_default());
        let pristine = root().join(format!("{name}.pristine"));
        std::fs::copy(source_target, &pristine).unwrap_or_else(|e| panic!("copying the resumed session: {e}"));
        let names: Vec<String> = session_files(&dir)
            .iter()
            .chain(std::iter::once(&target))
            .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
            .collect();
        let id = target
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_else(|| panic!("{} is not named for a session id", target.display()))
            .to_owned();
        let prefix = unique_prefix(&id, &names);
        let resume = ResumeDir {
            dir,
            target,
            pristine,
            prefix,
        };
        resume.restore();
        resume
    }

    /// Puts the resumed session back as it was before any run appended to it.
    pub fn restore(&self) {
        std::fs::copy(&self.pristine, &self.target)
            .unwrap_or_else(|e| panic!("restoring {}: {e}", self.target.display()));
    }

    /// The resumed session's file.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Bytes of the resumed session.
    pub fn target_bytes(&self) -> u64 {
        std::fs::metadata(&self.pristine).map_or(0, |m| m.len())
    }
}

/// The shortest prefix of `id`, at least 8 characters (as `panto sessions` shows ids), that no
/// other name in `names` starts with.
fn unique_prefix(id: &str, names: &[String]) -> String {
    (8..=id.len())
        .map(|n| &id[..n])
        .find(|p| names.iter().filter(|name| name.starts_with(p)).count() == 1)
        .unwrap_or(id)
        .to_owned()
}
