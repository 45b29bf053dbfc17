//! A libFuzzer-free driver for the fuzz targets, runnable on stable Rust:
//!
//! ```text
//! cargo run --release --no-default-features --bin drive -- <target> <seconds> [corpus dir]
//! cargo run --release --no-default-features --bin drive -- seeds   # rewrite the JSONL seeds
//! ```
//!
//! It is not coverage-guided: it mutates the seed corpus at random (bit flips, byte edits,
//! inserted and deleted runs, splices of two seeds, bytes that matter to the formats) and runs
//! the target on each result until the time is up. A panic saves the input under
//! `artifacts/<target>/` and exits with status 1.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use panto_fuzz::{FUZZ_SESSION_ID, TARGETS};

/// A small, fast, seedable generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes that steer the SSE and JSONL grammars, and the tool calls inside responses.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\r",
    b"\n\n",
    b"data: ",
    b"event: ",
    b"id: ",
    b":",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b"\\u0000",
    b",",
    b"null",
    b"\xEF\xBB\xBF",
    b"\xC3",
    b"\xFF",
    b"{\"type\":\"message\"}",
    b"\"message\"",
    b"\"compaction\"",
    b"\"parent_id\"",
    b"message_stop",
    b"[DONE]",
    b"\"id\":\"\"",
    b"\"tool_use\"",
    b"\"tool_calls\"",
    b"{\\\"a\\\":",
    b"[[[[[[[[[[[[[[[[",
];

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = corpus[rng.below(corpus.len())].clone();
    for _ in 0..=rng.below(8) {
        let len = data.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next() as u8;
            }
            2 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                let at = rng.below(len + 1);
                data.splice(at..at, token.iter().copied());
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = rng.below((len - at).min(64)) + 1;
                data.drain(at..at + n);
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let n = rng.below((len - at).min(64)) + 1;
                let run: Vec<u8> = data[at..at + n].to_vec();
                let to = rng.below(len + 1);
                data.splice(to..to, run);
            }
            5 => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            _ => data.truncate(rng.below(len + 1)),
        }
    }
    data
}

fn read_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.sort();
    let mut corpus: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    corpus
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if args.first().map(String::as_str) == Some("seeds") {
        return write_seeds(&root.join("corpus/jsonl_loader"));
    }
    let (Some(name), Some(seconds)) = (args.first(), args.get(1).and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!("usage: drive <target> <seconds> [corpus dir] | drive seeds");
        return ExitCode::FAILURE;
    };
    let Some(&(_, target)) = TARGETS.iter().find(|(n, _)| n == name) else {
        eprintln!(
            "unknown target {name:?}; targets: {:?}",
            TARGETS.iter().map(|t| t.0).collect::<Vec<_>>()
        );
        return ExitCode::FAILURE;
    };
    let corpus_dir = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("corpus").join(name));
    let corpus = read_corpus(&corpus_dir);
    // The seeds themselves first, then mutations.
    for seed in &corpus {
        target(seed);
    }
    let mut rng = Rng(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut runs: u64 = 0;
    let started = Instant::now();
    // A panic message is printed by the default hook; the input is saved below.
    while Instant::now() < deadline {
        let input = mutate(&mut rng, &corpus);
        let outcome = std::panic::catch_unwind(|| target(&input));
        runs += 1;
        if outcome.is_err() {
            let dir = root.join("artifacts").join(name);
            let _ = std::fs::create_dir_all(&dir);
            let path = dir.join(format!("crash-{:016x}", rng.next()));
            let _ = std::fs::write(&path, &input);
            eprintln!(
                "drive {name}: crash after {runs} runs; input saved to {}",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    }
    println!(
        "drive {name}: {runs} runs in {:.0}s ({:.0}/s) from {} seeds, 0 crashes",
        started.elapsed().as_secs_f64(),
        runs as f64 / started.elapsed().as_secs_f64().max(1e-9),
        corpus.len()
    );
    ExitCode::SUCCESS
}

/// Writes the JSONL seeds: small session files made by the real store, under the id the target
/// uses.
fn write_seeds(dir: &Path) -> ExitCode {
    use panto_core::store::{CompactionRecord, PersistentMessage};
    use panto_core::{ContentBlock, Conversation, Message, Role, SessionStore};
    use panto_store_fs::{Durability, JsonlStore};

    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let scratch = std::env::temp_dir().join(format!("panto-fuzz-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut conversation = Conversation::with_metadata(r#"{"project":"fuzz"}"#);
    conversation.add_system_message("You are terse.");
    conversation.add_user_message("List the files, “please” \\ now");
    conversation.add_assistant_message(
        vec![
            ContentBlock::Thinking {
                thinking: "I should call ls.".into(),
                signature: Some("c2lnbmF0dXJl".into()),
            },
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "bash".into(),
                input: serde_json::json!({"command": "ls -la \"src\"", "timeout": 30}),
            },
        ],
        None,
    );
    conversation.messages.push(Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: vec![panto_core::ToolResultContent::Text {
                text: "a.rs\nb.rs\n日本語.txt".into(),
            }],
            is_error: false,
        }],
    ));
    conversation.add_assistant_message(vec![ContentBlock::text("Two Rust files and one text file.")], None);
    let summary = Message::new(
        Role::User,
        vec![ContentBlock::CompactionSummary {
            summary: "The user listed files.".into(),
        }],
    );
    // A session over 16 KB, so that the readers' paths for larger files are fuzzed too.
    let mut long = conversation.clone();
    long.messages[3] = Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: "toolu_1".into(),
            content: vec![panto_core::ToolResultContent::Text {
                text: "fn main() {\n    println!(\"hi\");\n}\n".repeat(700),
            }],
            is_error: false,
        }],
    );
    // "interrupted" ends on the long tool result: a last line longer than the tail that `list`
    // reads, whose listing fields it finds from the line's end.
    let steps: [(&str, usize, &Conversation); 5] = [
        ("short", 2, &conversation),
        ("tools", 5, &conversation),
        ("compacted", 6, &conversation),
        ("long", 6, &long),
        ("interrupted", 4, &long),
    ];
    for (name, upto, conversation) in steps {
        let store = JsonlStore::with_durability(&scratch, Durability::None);
        let result = rt.block_on(async {
            for m in conversation.messages.iter().take(upto.min(5)) {
                let entry = PersistentMessage {
                    message: m,
                    usage: None,
                    wire: None,
                    conversation,
                    tools_available: &[],
                    compaction: None,
                };
                store.append(FUZZ_SESSION_ID, &[entry]).await?;
            }
            if upto > 5 {
                let entry = PersistentMessage {
                    message: &summary,
                    usage: None,
                    wire: None,
                    conversation,
                    tools_available: &[],
                    compaction: Some(CompactionRecord {
                        first_kept: 4,
                        tokens_before: 100,
                        tokens_after: 20,
                    }),
                };
                store.append(FUZZ_SESSION_ID, &[entry]).await?;
            }
            Ok::<_, panto_core::Error>(())
        });
        if let Err(e) = result {
            eprintln!("writing seed {name}: {e}");
            return ExitCode::FAILURE;
        }
        drop(store);
        let file = scratch.join(format!("{FUZZ_SESSION_ID}.jsonl"));
        let copied =
            std::fs::create_dir_all(dir).and_then(|()| std::fs::copy(&file, dir.join(format!("{name}.jsonl"))));
        if let Err(e) = copied.and_then(|_| std::fs::remove_file(&file)) {
            eprintln!("saving seed {name}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!("wrote {} seeds to {}", steps.len(), dir.display());
    ExitCode::SUCCESS
}
