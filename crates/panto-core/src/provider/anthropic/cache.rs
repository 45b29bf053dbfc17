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

use super::body::{Block, BlockKind, Body, CacheControl, WireTool};
use crate::config::{CacheMode, ProviderConfig};

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

/// A tool definition or a content block.
#[derive(Clone, Copy)]
enum Item<'b> {
    Tool(&'b WireTool<'b>),
    Block(&'b Block<'b>),
}

impl Item<'_> {
    /// The item's length as compact JSON, without building the text.
    fn json_len(self) -> usize {
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
        // Writing to a writer that never fails cannot fail: every map key is a string.
        let _ = match self {
            Item::Tool(tool) => serde_json::to_writer(&mut count, tool),
            Item::Block(block) => serde_json::to_writer(&mut count, block),
        };
        count.0
    }

    /// Whether the API accepts a breakpoint on the item: not on thinking, redacted thinking or
    /// an empty text block. A tool definition has no kind the API refuses.
    fn cacheable(self) -> bool {
        match self {
            Item::Tool(_) => true,
            Item::Block(block) => match &block.kind {
                BlockKind::Thinking { .. } | BlockKind::RedactedThinking { .. } => false,
                BlockKind::Text(text) => !text.is_empty(),
                _ => true,
            },
        }
    }
}

/// Marks the blocks of `body` where caching pays with `cache_control`, unless caching is off.
pub(super) fn place_breakpoints(body: &mut Body<'_>, config: &ProviderConfig) {
    if config.cache == CacheMode::Off {
        return;
    }
    let slots = breakpoints(body, min_cacheable_tokens(&config.model));
    let marker = CacheControl(config.cache_ttl);
    for slot in slots {
        match slot {
            Slot::Tool(i) => body.tools[i].cache_control = Some(marker),
            Slot::System(i) => body.system[i].cache_control = Some(marker),
            Slot::Message(m, b) => body.messages[m].content[b].cache_control = Some(marker),
        }
    }
}

/// Where the breakpoints of `body` go, at most [`MAX_BREAKPOINTS`], in prefix order.
fn breakpoints<'b>(body: &'b Body<'b>, min_tokens: usize) -> Vec<Slot> {
    // Every block in prefix order.
    let mut blocks: Vec<(Slot, Item<'b>)> = Vec::new();
    blocks.extend(
        body.tools
            .iter()
            .enumerate()
            .map(|(i, t)| (Slot::Tool(i), Item::Tool(t))),
    );
    blocks.extend(
        body.system
            .iter()
            .enumerate()
            .map(|(i, b)| (Slot::System(i), Item::Block(b))),
    );
    let (tools, system) = (body.tools.len(), body.system.len());
    // The flat index where the last assistant message's blocks start.
    let mut last_assistant = None;
    for (m, message) in body.messages.iter().enumerate() {
        if message.role == "assistant" {
            last_assistant = Some(blocks.len());
        }
        blocks.extend(
            message
                .content
                .iter()
                .enumerate()
                .map(|(b, block)| (Slot::Message(m, b), Item::Block(block))),
        );
    }
    let Some(first_big_enough) = first_reaching(&blocks, min_tokens) else {
        return Vec::new();
    };
    let usable = |index: usize| index >= first_big_enough && blocks[index].1.cacheable();

    let mut chosen: Vec<usize> = Vec::with_capacity(MAX_BREAKPOINTS);
    if tools > 0 && usable(tools - 1) {
        chosen.push(tools - 1);
    }
    let system_end = tools + system;
    if system > 0 && usable(system_end - 1) {
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
/// estimate; `None` when the whole request is shorter. Measures only as far as it must.
fn first_reaching(blocks: &[(Slot, Item<'_>)], min_tokens: usize) -> Option<usize> {
    let wanted = min_tokens.saturating_mul(BYTES_PER_TOKEN);
    let mut bytes = 0usize;
    for (index, (_, item)) in blocks.iter().enumerate() {
        bytes = bytes.saturating_add(item.json_len());
        if bytes >= wanted {
            return Some(index);
        }
    }
    None
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
