//! Where a Messages request asks Anthropic to cache: `cache_control` breakpoints.
//!
//! The API caches the prefix of a request (tools, then system, then messages) up to a block that
//! carries `cache_control`, and on a later request finds such a prefix by looking back at most
//! [`LOOKBACK_BLOCKS`] blocks from each of that request's breakpoints. A request may carry at
//! most [`MAX_BREAKPOINTS`]. panto places them so that each request reads the longest prefix the
//! previous one wrote and writes only what is new:
//!
//! 1. the last tool (the tools survive a system prompt change),
//! 2. the last system block (tools and system survive a new conversation),
//! 3. the newest message's last cacheable block (everything, for the next request to read),
//! 4. the previous request's newest breakpoint, only when it is more than the lookback before
//!    the newest one (a turn whose tool results added many blocks), so the read still finds it.
//!
//! No breakpoint goes on a block the API refuses one on (thinking, redacted thinking, empty
//! text), nor where the prefix is shorter than the model's minimum cacheable size, since the API
//! would ignore it. The placement depends only on the request itself, so a resumed session places
//! them exactly as the process that wrote it did.

use serde_json::{json, Map, Value};

use crate::config::{CacheMode, CacheTtl, ProviderConfig};

/// The most breakpoints one request may carry.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// How many blocks back from a breakpoint the API looks for a cached prefix (the breakpoint's
/// own block included).
pub(crate) const LOOKBACK_BLOCKS: usize = 20;

/// Bytes of JSON per token in panto's estimate of a prefix's size. Deliberately low (JSON
/// syntax makes blocks longer than their token count), so that a prefix estimated to reach
/// the minimum does.
const BYTES_PER_TOKEN: usize = 4;

/// The smallest prefix, in tokens, the API caches for `model`: 4096 for Claude Opus 4.5 and
/// Haiku 4.5, 2048 for the Haiku 3 family, 1024 for the others.
pub(crate) fn min_cacheable_tokens(model: &str) -> usize {
    let model = model.to_ascii_lowercase();
    if model.contains("opus-4-5") || model.contains("haiku-4-5") {
        4096
    } else if model.contains("haiku") {
        2048
    } else {
        1024
    }
}

/// One place a breakpoint can go: which array the block is in, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Tool(usize),
    System(usize),
    /// Message index, block index in its content.
    Message(usize, usize),
}

/// Adds `cache_control` to the blocks of `body` (a Messages request with `tools`, `system`
/// and `messages` already in their wire form) where caching pays, unless caching is off.
pub(crate) fn place_breakpoints(body: &mut Map<String, Value>, config: &ProviderConfig) {
    if config.cache == CacheMode::Off {
        return;
    }
    let slots = breakpoints(body, min_cacheable_tokens(&config.model));
    let marker = match config.cache_ttl {
        CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
        CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
    };
    for slot in slots {
        if let Some(Value::Object(block)) = block_mut(body, slot) {
            block.insert("cache_control".into(), marker.clone());
        }
    }
}

/// Where the breakpoints of `body` go, at most [`MAX_BREAKPOINTS`], in prefix order.
fn breakpoints(body: &Map<String, Value>, min_tokens: usize) -> Vec<Slot> {
    // Every block in prefix order, with whether it may carry a breakpoint.
    let mut blocks: Vec<(Slot, &Value)> = Vec::new();
    let array = |key: &str| {
        body.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    let tools = array("tools");
    let system = array("system");
    let messages = array("messages");
    blocks.extend(tools.iter().enumerate().map(|(i, t)| (Slot::Tool(i), t)));
    blocks.extend(system.iter().enumerate().map(|(i, b)| (Slot::System(i), b)));
    // The flat index where each message's blocks start, and the last assistant message.
    let mut last_assistant = None;
    for (m, message) in messages.iter().enumerate() {
        if message["role"] == "assistant" {
            last_assistant = Some(blocks.len());
        }
        let content = message["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        blocks.extend(
            content
                .iter()
                .enumerate()
                .map(|(b, block)| (Slot::Message(m, b), block)),
        );
    }
    let Some(first_big_enough) = first_reaching(&blocks, min_tokens) else {
        return Vec::new();
    };
    let usable = |index: usize| index >= first_big_enough && cacheable(blocks[index].1);

    let mut chosen: Vec<usize> = Vec::with_capacity(MAX_BREAKPOINTS);
    if !tools.is_empty() && usable(tools.len() - 1) {
        chosen.push(tools.len() - 1);
    }
    let system_end = tools.len() + system.len();
    if !system.is_empty() && usable(system_end - 1) {
        chosen.push(system_end - 1);
    }
    let newest = (system_end..blocks.len()).rev().find(|&i| usable(i));
    if let Some(newest) = newest {
        // The previous request ended before the newest assistant message; its newest
        // breakpoint was its last cacheable block.
        let previous = last_assistant.and_then(|end| (system_end..end).rev().find(|&i| usable(i)));
        if let Some(previous) = previous {
            if newest - previous >= LOOKBACK_BLOCKS {
                chosen.push(previous);
            }
        }
        chosen.push(newest);
    }
    chosen.dedup();
    chosen.truncate(MAX_BREAKPOINTS);
    chosen.into_iter().map(|i| blocks[i].0).collect()
}

/// The index of the first block whose prefix (it included) reaches `min_tokens`, by the
/// estimate; `None` when the whole request is shorter. Serialises only as far as it must.
fn first_reaching(blocks: &[(Slot, &Value)], min_tokens: usize) -> Option<usize> {
    let wanted = min_tokens.saturating_mul(BYTES_PER_TOKEN);
    let mut bytes = 0usize;
    for (index, (_, block)) in blocks.iter().enumerate() {
        bytes = bytes.saturating_add(json_len(block));
        if bytes >= wanted {
            return Some(index);
        }
    }
    None
}

/// The length of `value` as compact JSON, without building the string.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Whether the API accepts a breakpoint on `block`: not on thinking, redacted thinking or an
/// empty text block.
fn cacheable(block: &Value) -> bool {
    match block.get("type").and_then(Value::as_str) {
        Some("thinking" | "redacted_thinking") => false,
        Some("text") => block["text"].as_str().is_some_and(|t| !t.is_empty()),
        // A tool definition has no `type`.
        _ => true,
    }
}

fn block_mut(body: &mut Map<String, Value>, slot: Slot) -> Option<&mut Value> {
    match slot {
        Slot::Tool(i) => body.get_mut("tools")?.get_mut(i),
        Slot::System(i) => body.get_mut("system")?.get_mut(i),
        Slot::Message(m, b) => body.get_mut("messages")?.get_mut(m)?.get_mut("content")?.get_mut(b),
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
