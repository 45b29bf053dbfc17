//! The Anthropic prompt cache, as the mock server bills it.
//!
//! [`PromptCache`] implements the API's rules so that tests and benches see the numbers the real
//! API would report:
//!
//! - A request is a sequence of blocks in prefix order: each tool, each system block, each
//!   content block of each message. A block's tokens are its compact JSON length over four,
//!   rounded up, with its `cache_control` left out ([`block_tokens`]).
//! - A block carrying `cache_control` is a breakpoint: the prefix up to and including it is
//!   written to the cache (if it is at least the model's minimum, [`min_cacheable_tokens`]) with
//!   the breakpoint's lifetime (`ttl`: `5m`, the default, or `1h`).
//! - A request reads the longest cached prefix that ends within [`LOOKBACK_BLOCKS`] blocks
//!   before one of its breakpoints (the breakpoint's own block included). Nothing is read
//!   without a breakpoint.
//! - Usage: `cache_read_input_tokens` is that prefix; `cache_creation_input_tokens` is what the
//!   breakpoints after it wrote, split by lifetime in `cache_creation`; `input_tokens` is the
//!   rest (what follows the last breakpoint, and prefixes too short to cache).
//! - An entry lives for its lifetime after it was last written or read.
//!
//! Hashes cover the model and the blocks' JSON, so two requests share a prefix only if their
//! blocks are byte for byte the same once `cache_control` is taken out.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How many blocks back from a breakpoint a read is looked for, its own block included.
pub const LOOKBACK_BLOCKS: usize = 20;

/// The most breakpoints a request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// The smallest prefix, in tokens, the API caches for `model`: 4096 for Claude Opus 4.5 and
/// Haiku 4.5, 2048 for the Haiku 3 family, 1024 for the others.
pub fn min_cacheable_tokens(model: &str) -> u64 {
    let model = model.to_ascii_lowercase();
    if model.contains("opus-4-5") || model.contains("haiku-4-5") {
        4096
    } else if model.contains("haiku") {
        2048
    } else {
        1024
    }
}

/// The tokens the mock counts for one block: its compact JSON without `cache_control`, four
/// bytes a token, rounded up.
pub fn block_tokens(block: &Value) -> u64 {
    canonical(block).len().div_ceil(4) as u64
}

/// What one request was billed, as the API reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Input neither read from nor written to the cache.
    pub input_tokens: u64,
    /// Input read from the cache.
    pub cache_read_input_tokens: u64,
    /// Input written with the five-minute lifetime.
    pub ephemeral_5m_input_tokens: u64,
    /// Input written with the one-hour lifetime.
    pub ephemeral_1h_input_tokens: u64,
    /// How many breakpoints the request carried.
    pub breakpoints: usize,
}

impl CacheUsage {
    /// Every cache write: `cache_creation_input_tokens`.
    pub fn cache_creation_input_tokens(&self) -> u64 {
        self.ephemeral_5m_input_tokens + self.ephemeral_1h_input_tokens
    }

    /// Every input token of the request.
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens()
    }
}

/// One block of a request in prefix order.
#[derive(Debug, Clone)]
pub struct PrefixBlock {
    /// Its tokens ([`block_tokens`]).
    pub tokens: u64,
    /// The hash of the prefix up to and including it.
    pub prefix_hash: u64,
    /// Its breakpoint's lifetime, when it carries `cache_control`.
    pub breakpoint: Option<Duration>,
    /// Its compact JSON without `cache_control` (message blocks are preceded by their role at
    /// the first block of each message), for byte comparisons in tests.
    pub bytes: String,
}

/// The blocks of a Messages request body in prefix order; `None` when it is not JSON.
pub fn prefix_blocks(body: &[u8]) -> Option<Vec<PrefixBlock>> {
    let root: Value = serde_json::from_slice(body).ok()?;
    let mut hasher = DefaultHasher::new();
    root.get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .hash(&mut hasher);
    let mut out = Vec::new();
    let mut push = |block: &Value, lead: &str| {
        let bytes = format!("{lead}{}", canonical(block));
        bytes.hash(&mut hasher);
        out.push(PrefixBlock {
            tokens: block_tokens(block),
            prefix_hash: hasher.finish(),
            breakpoint: ttl_of(block),
            bytes,
        });
    };
    for tool in root.get("tools").and_then(Value::as_array).into_iter().flatten() {
        push(tool, "tool:");
    }
    match root.get("system") {
        Some(Value::String(text)) => push(&serde_json::json!({"type": "text", "text": text}), "system:"),
        Some(Value::Array(blocks)) => blocks.iter().for_each(|b| push(b, "system:")),
        _ => {}
    }
    for message in root.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        match message.get("content") {
            Some(Value::String(text)) => push(&serde_json::json!({"type": "text", "text": text}), role),
            Some(Value::Array(blocks)) => {
                for (i, block) in blocks.iter().enumerate() {
                    push(block, if i == 0 { role } else { "" });
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// The lifetime a block's `cache_control` asks for, `None` without one.
fn ttl_of(block: &Value) -> Option<Duration> {
    let control = block.get("cache_control")?;
    Some(match control.get("ttl").and_then(Value::as_str) {
        Some("1h") => Duration::from_secs(3600),
        _ => Duration::from_secs(300),
    })
}

/// Compact JSON of `block` without its `cache_control`.
fn canonical(block: &Value) -> String {
    match block {
        Value::Object(map) if map.contains_key("cache_control") => {
            let mut map = map.clone();
            map.remove("cache_control");
            Value::Object(map).to_string()
        }
        other => other.to_string(),
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    expires: Instant,
    ttl: Duration,
}

/// The cache of one mock server: prefix hashes written at breakpoints, with their expiry.
#[derive(Debug, Default)]
pub struct PromptCache {
    entries: HashMap<u64, Entry>,
    /// Added to the real clock, so a test can let entries expire without waiting.
    skew: Duration,
}

impl PromptCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the cache's clock forward, as if `by` had passed.
    pub fn advance(&mut self, by: Duration) {
        self.skew += by;
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Bills one request body, reading and writing the cache as the API does. `None` when the
    /// body is not a JSON object with a model.
    pub fn bill(&mut self, body: &[u8]) -> Option<CacheUsage> {
        let root: Value = serde_json::from_slice(body).ok()?;
        let model = root.get("model")?.as_str()?.to_owned();
        let blocks = prefix_blocks(body)?;
        Some(self.bill_blocks(&blocks, min_cacheable_tokens(&model)))
    }

    /// Bills a request given as its prefix blocks, with this minimum cacheable size.
    pub fn bill_blocks(&mut self, blocks: &[PrefixBlock], min_tokens: u64) -> CacheUsage {
        let now = Instant::now() + self.skew;
        self.entries.retain(|_, e| e.expires > now);
        let mut cumulative = Vec::with_capacity(blocks.len());
        let mut sum = 0u64;
        for block in blocks {
            sum += block.tokens;
            cumulative.push(sum);
        }
        let total = sum;
        let breakpoints: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].breakpoint.is_some()).collect();
        // The longest cached prefix within the lookback of some breakpoint.
        let read = breakpoints
            .iter()
            .filter_map(|&b| {
                (b.saturating_sub(LOOKBACK_BLOCKS - 1)..=b)
                    .rev()
                    .find(|&j| self.entries.contains_key(&blocks[j].prefix_hash))
            })
            .max();
        if let Some(r) = read {
            if let Some(entry) = self.entries.get_mut(&blocks[r].prefix_hash) {
                entry.expires = now + entry.ttl;
            }
        }
        let mut usage = CacheUsage {
            breakpoints: breakpoints.len(),
            ..CacheUsage::default()
        };
        let mut cached_to = read.map_or(0, |r| cumulative[r]);
        usage.cache_read_input_tokens = cached_to;
        for &b in &breakpoints {
            let ttl = blocks[b].breakpoint.unwrap_or(Duration::from_secs(300));
            if cumulative[b] < min_tokens {
                continue;
            }
            let entry = self
                .entries
                .entry(blocks[b].prefix_hash)
                .or_insert(Entry { expires: now, ttl });
            entry.expires = now + entry.ttl.max(ttl);
            entry.ttl = entry.ttl.max(ttl);
            if cumulative[b] <= cached_to {
                continue;
            }
            let written = cumulative[b] - cached_to;
            if ttl >= Duration::from_secs(3600) {
                usage.ephemeral_1h_input_tokens += written;
            } else {
                usage.ephemeral_5m_input_tokens += written;
            }
            cached_to = cumulative[b];
        }
        usage.input_tokens = total - cached_to;
        usage
    }
}

/// The input cost of a sequence of requests (each given as its prefix blocks) under the best
/// placement possible: each request reads all of the previous one and writes the rest at the
/// five-minute rate, except the last, which has no one to write for. In units of the input
/// price (a read costs 0.1, a write 1.25). Assumes each request extends the previous one, as a
/// tool loop's requests do.
pub fn best_placement_cost(requests: &[Vec<PrefixBlock>], min_tokens: u64) -> f64 {
    let mut cost = 0.0;
    let mut previous = 0u64;
    for (n, blocks) in requests.iter().enumerate() {
        let total: u64 = blocks.iter().map(|b| b.tokens).sum();
        let read = if previous >= min_tokens { previous.min(total) } else { 0 };
        let rest = (total - read) as f64;
        let last = n + 1 == requests.len();
        cost += read as f64 * 0.1 + if last || total < min_tokens { rest } else { rest * 1.25 };
        previous = total;
    }
    cost
}

/// The input cost of `usage` in units of the input price, with the API's multipliers: a read
/// 0.1, a five-minute write 1.25, a one-hour write 2.
pub fn input_cost(usage: &CacheUsage) -> f64 {
    usage.input_tokens as f64
        + usage.cache_read_input_tokens as f64 * 0.1
        + usage.ephemeral_5m_input_tokens as f64 * 1.25
        + usage.ephemeral_1h_input_tokens as f64 * 2.0
}

/// One SSE event (its lines and blank line) with the usage of a `message_start` or
/// `message_delta` payload replaced; `None` for any other event.
pub(crate) fn rewrite_usage(event: &str, usage: &CacheUsage) -> Option<String> {
    let mut out = String::with_capacity(event.len() + 128);
    let mut changed = false;
    for line in event.split_inclusive('\n') {
        let Some(data) = line.strip_prefix("data:") else {
            out.push_str(line);
            continue;
        };
        let mut payload: serde_json::Value = serde_json::from_str(data.trim()).ok()?;
        let slot = match payload.get("type").and_then(serde_json::Value::as_str) {
            Some("message_start") => payload.get_mut("message").and_then(|m| m.get_mut("usage")),
            Some("message_delta") => payload.get_mut("usage"),
            _ => None,
        }?;
        let fields = slot.as_object_mut()?;
        fields.insert("input_tokens".into(), usage.input_tokens.into());
        fields.insert("cache_read_input_tokens".into(), usage.cache_read_input_tokens.into());
        fields.insert(
            "cache_creation_input_tokens".into(),
            usage.cache_creation_input_tokens().into(),
        );
        fields.insert(
            "cache_creation".into(),
            serde_json::json!({
                "ephemeral_5m_input_tokens": usage.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": usage.ephemeral_1h_input_tokens,
            }),
        );
        out.push_str("data: ");
        out.push_str(&payload.to_string());
        out.push('\n');
        changed = true;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(blocks: &[(&str, bool)]) -> Vec<u8> {
        let content: Vec<Value> = blocks
            .iter()
            .map(|(text, mark)| {
                let mut block = json!({"type": "text", "text": text});
                if *mark {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                block
            })
            .collect();
        json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": content}]})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn writes_at_breakpoints_then_reads_within_the_lookback() {
        let big = "x".repeat(8000);
        let mut cache = PromptCache::new();
        let first = cache.bill(&body(&[(&big, true)])).unwrap();
        assert_eq!(first.cache_read_input_tokens, 0);
        assert!(
            first.ephemeral_5m_input_tokens > 2000 && first.input_tokens == 0,
            "{first:?}"
        );
        // The same prefix then one more block, breakpoint on the new block: read + write.
        let second = cache.bill(&body(&[(&big, false), ("more", true)])).unwrap();
        assert_eq!(second.cache_read_input_tokens, first.ephemeral_5m_input_tokens);
        assert!(
            second.ephemeral_5m_input_tokens > 0 && second.input_tokens == 0,
            "{second:?}"
        );
        // No breakpoint, no read.
        let third = cache.bill(&body(&[(&big, false), ("more", false)])).unwrap();
        assert_eq!(third.cache_read_input_tokens, 0);
        // Beyond the lookback: 25 blocks past the cached prefix, nothing is found.
        let mut far: Vec<(&str, bool)> = vec![(&big, false)];
        far.extend(std::iter::repeat_n(("b", false), 24));
        far.push(("end", true));
        let fourth = cache.bill(&body(&far)).unwrap();
        assert_eq!(fourth.cache_read_input_tokens, 0, "{fourth:?}");
    }

    #[test]
    fn short_prefixes_are_not_cached_and_entries_expire() {
        let mut cache = PromptCache::new();
        let short = cache.bill(&body(&[("tiny", true)])).unwrap();
        assert_eq!(short.cache_creation_input_tokens(), 0);
        assert!(short.input_tokens > 0);
        let big = "y".repeat(8000);
        cache.bill(&body(&[(&big, true)])).unwrap();
        cache.advance(Duration::from_secs(301));
        let late = cache.bill(&body(&[(&big, true)])).unwrap();
        assert_eq!(late.cache_read_input_tokens, 0, "{late:?}");
    }
}
