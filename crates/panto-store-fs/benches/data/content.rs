//! Realistic message content for the bench data sets: prompts, thinking with signatures,
//! answers, tool calls and tool results of 4–70 KB, compaction summaries.
//!
//! Everything is deterministic (seeded SplitMix64), so two runs of `cargo xtask bench-data`
//! produce files of the same shape. Large texts are slices of two pre-built corpora (prose and
//! tool output, with the quotes, backslashes, tabs and non-ASCII text that JSON escaping meets in
//! real sessions), so generating a gigabyte costs copies rather than string building.

use panto_core::{ContentBlock, Message, Role, StopReason, ToolResultContent, Usage};
use serde_json::json;

/// A small, fast, seedable generator (SplitMix64); good enough for shaping test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// A number in `lo..=hi`, log-uniformly distributed (small values are more common, as tool
    /// output sizes are).
    pub fn log_uniform(&mut self, lo: usize, hi: usize) -> usize {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let (lo_f, hi_f) = ((lo as f64).ln(), (hi as f64).ln());
        ((lo_f + u * (hi_f - lo_f)).exp() as usize).clamp(lo, hi)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.range(0, items.len() - 1)]
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "session",
    "reads",
    "file",
    "and",
    "then",
    "writes",
    "a",
    "test",
    "for",
    "error",
    "handling",
    "in",
    "parser",
    "which",
    "returns",
    "value",
    "when",
    "input",
    "is",
    "valid",
    "otherwise",
    "we",
    "should",
    "check",
    "lock",
    "before",
    "append",
    "compaction",
    "keeps",
    "summary",
    "of",
    "conversation",
    "model",
    "tool",
    "call",
    "result",
    "stream",
    "event",
    "buffer",
    "line",
    "offset",
    "header",
    "entry",
    "index",
    "could",
    "would",
    "because",
    "so",
    "that",
    "this",
    "function",
    "module",
    "crate",
    "build",
    "fails",
    "passes",
    "with",
    "warning",
    "config",
    "path",
    "directory",
    "user",
    "prompt",
    "café",
    "naïve",
    "Grüße",
    "日本語",
    "résumé",
    "—",
    "“quoted”",
    "o'clock",
];

const IDENTS: &[&str] = &[
    "session",
    "store",
    "writer",
    "entry",
    "parser",
    "buf",
    "offset",
    "line",
    "config",
    "agent",
    "stream",
    "event",
    "decoder",
    "registry",
    "tool_call",
    "result",
    "view",
    "header",
    "path",
    "len",
];

const TYPES: &[&str] = &[
    "Session", "Store", "Writer", "Entry", "Parser", "Vec<u8>", "PathBuf", "Config", "Agent", "Event", "String",
];

/// Pre-built text that larger blocks are sliced from.
#[derive(Debug)]
pub struct Corpus {
    prose: String,
    output: String,
}

impl Corpus {
    /// Builds the corpora (a few hundred KB) from `rng`.
    pub fn new(rng: &mut Rng) -> Self {
        let mut prose = String::with_capacity(96 * 1024);
        while prose.len() < 64 * 1024 {
            prose.push_str(&sentence(rng));
            prose.push(if rng.chance(0.15) { '\n' } else { ' ' });
        }
        let mut output = String::with_capacity(160 * 1024);
        let mut n = 1;
        while output.len() < 128 * 1024 {
            output.push_str(&output_line(rng, n));
            output.push('\n');
            n += 1;
        }
        Corpus { prose, output }
    }

    /// About `len` bytes of prose.
    pub fn prose(&self, rng: &mut Rng, len: usize) -> String {
        slice(&self.prose, rng, len)
    }

    /// About `len` bytes of tool output (source code, logs, test results).
    pub fn output(&self, rng: &mut Rng, len: usize) -> String {
        slice(&self.output, rng, len)
    }
}

/// A slice of `text` of about `len` bytes (repeating it if needed), on character boundaries.
fn slice(text: &str, rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 8);
    while out.len() < len {
        let mut start = rng.range(0, text.len() - 1);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + len - out.len()).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&text[start..end]);
    }
    out
}

fn sentence(rng: &mut Rng) -> String {
    let n = rng.range(5, 18);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(rng.pick(WORDS));
    }
    s.push('.');
    s
}

fn output_line(rng: &mut Rng, n: usize) -> String {
    let (a, b, t) = (rng.pick(IDENTS), rng.pick(IDENTS), rng.pick(TYPES));
    match rng.range(0, 7) {
        0 => format!("    let {a} = {b}.parse(&{a})?; // {}", sentence(rng)),
        1 => format!("fn {a}_{b}({a}: &{t}) -> Result<{t}> {{"),
        2 => format!("{n:>5}\t        return Err(Error::new(\"{a}: unexpected {b} \\\"{t}\\\"\"));"),
        3 => format!("test {a}::tests::{b}_{n} ... ok"),
        4 => format!(
            "2026-11-29T21:{:02}:{:02}Z INFO panto::{a}: {}",
            n % 60,
            (n * 7) % 60,
            sentence(rng)
        ),
        5 => format!(
            "src/{a}/{b}.rs:{n}:17: warning: unused variable `{a}` — {}",
            rng.pick(WORDS)
        ),
        6 => format!("    assert_eq!({a}.len(), {n}, \"{b} mismatch in C:\\\\Users\\\\dev\\\\{t}\");"),
        _ => "}".to_owned(),
    }
}

/// A base64-alphabet string of `len` characters, like a thinking signature.
fn opaque(rng: &mut Rng, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len).map(|_| ALPHABET[rng.range(0, 63)] as char).collect()
}

const TOOLS: &[&str] = &["read_file", "bash", "edit_file", "grep"];

/// A human prompt of up to `max` bytes.
pub fn prompt(corpus: &Corpus, rng: &mut Rng, max: usize) -> Message {
    let len = rng.range(10.min(max), max);
    Message::new(Role::User, vec![ContentBlock::text(corpus.prose(rng, len))])
}

/// An assistant message that calls a tool (after optional thinking and text), with usage.
pub fn tool_call(corpus: &Corpus, rng: &mut Rng, call: usize) -> Message {
    let mut blocks = Vec::new();
    if rng.chance(0.6) {
        let len = rng.range(300, 2500);
        let thinking = corpus.prose(rng, len);
        blocks.push(ContentBlock::Thinking {
            thinking,
            signature: Some(opaque(rng, 344)),
        });
    }
    if rng.chance(0.7) {
        let len = rng.range(60, 600);
        blocks.push(ContentBlock::text(corpus.prose(rng, len)));
    }
    let name = rng.pick(TOOLS);
    let input = match name {
        "bash" => {
            json!({"command": format!("cargo test -p panto-{} -- {}", rng.pick(IDENTS), rng.pick(IDENTS)), "timeout": 120})
        }
        "grep" => json!({"pattern": format!("fn {}", rng.pick(IDENTS)), "path": "crates/"}),
        "edit_file" => json!({
            "path": format!("crates/panto-core/src/{}.rs", rng.pick(IDENTS)),
            "old": corpus.output(rng, 200),
            "new": corpus.output(rng, 240),
        }),
        _ => json!({"path": format!("crates/panto-store-fs/src/{}.rs", rng.pick(IDENTS))}),
    };
    blocks.push(ContentBlock::ToolUse {
        id: format!("toolu_{call:06}{}", opaque(rng, 18).replace(['+', '/'], "x")),
        name: name.to_owned(),
        input,
    });
    assistant(blocks, StopReason::ToolUse, rng)
}

/// The tool result answering the last call of `call_message`, `len` bytes of output.
pub fn tool_result(corpus: &Corpus, rng: &mut Rng, call_message: &Message, len: usize) -> Message {
    let id = call_message
        .tool_uses()
        .last()
        .map(|(id, _, _)| id.to_owned())
        .unwrap_or_default();
    let is_error = rng.chance(0.08);
    Message::new(
        Role::User,
        vec![ContentBlock::ToolResult {
            tool_use_id: id,
            content: vec![ToolResultContent::Text {
                text: corpus.output(rng, len),
            }],
            is_error,
        }],
    )
}

/// A final answer, optionally after thinking.
pub fn answer(corpus: &Corpus, rng: &mut Rng, max: usize) -> Message {
    let mut blocks = Vec::new();
    if max > 1000 && rng.chance(0.4) {
        let len = rng.range(200, 1500);
        blocks.push(ContentBlock::Thinking {
            thinking: corpus.prose(rng, len),
            signature: Some(opaque(rng, 344)),
        });
    }
    let len = rng.range(60.min(max), max);
    blocks.push(ContentBlock::text(corpus.prose(rng, len)));
    assistant(blocks, StopReason::EndTurn, rng)
}

/// A compaction summary message.
pub fn summary(corpus: &Corpus, rng: &mut Rng) -> Message {
    let len = rng.range(1500, 4000);
    Message::new(
        Role::User,
        vec![ContentBlock::CompactionSummary {
            summary: corpus.prose(rng, len),
        }],
    )
}

fn assistant(blocks: Vec<ContentBlock>, stop: StopReason, rng: &mut Rng) -> Message {
    let mut m = Message::new(Role::Assistant, blocks);
    m.usage = Some(Usage {
        input_tokens: rng.range(5, 4000) as u64,
        output_tokens: rng.range(20, 2000) as u64,
        cache_read_tokens: rng.range(0, 150_000) as u64,
        cache_write_tokens: rng.range(0, 8000) as u64,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    });
    m.stop_reason = Some(stop);
    m
}
