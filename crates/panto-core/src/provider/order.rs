//! One block at a time, from sources a server streams interleaved.
//!
//! The OpenAI APIs key their content by source: a Responses stream by output item
//! (`output_index`), a Chat Completions stream's tool calls by `index`. Nothing in either
//! protocol keeps one source open at a time, and some servers do not (LiteLLM's Responses bridge
//! streams a second function call before the first is done). panto's events promise consumers
//! one block at a time: `BlockStart`, its deltas, `BlockComplete`, then the next block, indices in
//! order. [`BlockOrder`] keeps that promise: sources are ordered by when they were opened, the
//! first unfinished one streams live, and what a later one produces waits (its deltas joined)
//! until every source before it has finished.

use std::collections::VecDeque;

use crate::conversation::ContentBlock;
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::ProviderEvent;

/// Orders the blocks of sources keyed by `K` into one sequence of [`ProviderEvent`]s.
///
/// A source emits its blocks one after another (`start`, `delta`s, `complete`, then maybe another
/// block) and is then `finish`ed. The decoder keeps that per-source rule; this type keeps the
/// sources from overlapping.
#[derive(Debug)]
pub(crate) struct BlockOrder<K> {
    /// The completed blocks, in index order; the live block, if any, has index `blocks.len()`.
    blocks: Vec<ContentBlock>,
    /// The sources not yet finished and emitted, in the order they were opened. The first
    /// streams live; the others hold what they produced.
    sources: VecDeque<Source<K>>,
}

impl<K> Default for BlockOrder<K> {
    fn default() -> Self {
        BlockOrder {
            blocks: Vec::new(),
            sources: VecDeque::new(),
        }
    }
}

#[derive(Debug)]
struct Source<K> {
    key: K,
    /// Whether the source will produce nothing more.
    finished: bool,
    /// What the source produced while another was live.
    held: Vec<Held>,
}

/// A block event waiting for its source to become live.
#[derive(Debug)]
enum Held {
    Start(BlockKind, Option<ToolDetails>),
    Delta(ContentDelta),
    Complete(ContentBlock),
}

impl<K: PartialEq + Copy> BlockOrder<K> {
    /// Adds a source after every open one. A key must be opened once.
    pub(crate) fn open(&mut self, key: K) {
        debug_assert!(!self.sources.iter().any(|s| s.key == key), "source opened twice");
        self.sources.push_back(Source {
            key,
            finished: false,
            held: Vec::new(),
        });
    }

    /// Source `key` starts a block.
    pub(crate) fn start(
        &mut self,
        key: K,
        kind: BlockKind,
        tool: Option<ToolDetails>,
        out: &mut VecDeque<ProviderEvent>,
    ) {
        self.push(key, Held::Start(kind, tool), out);
    }

    /// More content for source `key`'s block.
    pub(crate) fn delta(&mut self, key: K, delta: ContentDelta, out: &mut VecDeque<ProviderEvent>) {
        self.push(key, Held::Delta(delta), out);
    }

    /// Source `key`'s block is complete.
    pub(crate) fn complete(&mut self, key: K, block: ContentBlock, out: &mut VecDeque<ProviderEvent>) {
        self.push(key, Held::Complete(block), out);
    }

    /// Source `key` produces nothing more: the sources after it may go on.
    pub(crate) fn finish(&mut self, key: K, out: &mut VecDeque<ProviderEvent>) {
        if let Some(source) = self.sources.iter_mut().find(|s| s.key == key) {
            source.finished = true;
        }
        self.advance(out);
    }

    /// The completed blocks, in index order, once every source has finished.
    pub(crate) fn take_blocks(&mut self) -> Vec<ContentBlock> {
        debug_assert!(self.sources.is_empty(), "a source was never finished");
        std::mem::take(&mut self.blocks)
    }

    fn push(&mut self, key: K, event: Held, out: &mut VecDeque<ProviderEvent>) {
        match self.sources.iter_mut().position(|s| s.key == key) {
            Some(0) => self.emit(event, out),
            Some(i) => {
                let held = &mut self.sources[i].held;
                // Deltas that wait are joined: they reach consumers at once anyway.
                match (held.last_mut(), event) {
                    (Some(Held::Delta(ContentDelta::Text(a))), Held::Delta(ContentDelta::Text(b)))
                    | (Some(Held::Delta(ContentDelta::Thinking(a))), Held::Delta(ContentDelta::Thinking(b)))
                    | (Some(Held::Delta(ContentDelta::ToolInput(a))), Held::Delta(ContentDelta::ToolInput(b))) => {
                        a.push_str(&b)
                    }
                    (_, event) => held.push(event),
                }
            }
            None => debug_assert!(false, "a block event for a source not opened"),
        }
    }

    fn emit(&mut self, event: Held, out: &mut VecDeque<ProviderEvent>) {
        let index = self.blocks.len();
        out.push_back(match event {
            Held::Start(kind, tool) => ProviderEvent::BlockStart { index, kind, tool },
            Held::Delta(delta) => ProviderEvent::Delta { index, delta },
            Held::Complete(block) => {
                self.blocks.push(block.clone());
                ProviderEvent::BlockComplete { index, block }
            }
        });
    }

    /// Drops finished sources from the front, letting the next one go live with what it held.
    fn advance(&mut self, out: &mut VecDeque<ProviderEvent>) {
        while let Some(front) = self.sources.front_mut() {
            let held = std::mem::take(&mut front.held);
            let finished = front.finished;
            for event in held {
                self.emit(event, out);
            }
            if !finished {
                break;
            }
            self.sources.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ContentDelta {
        ContentDelta::Text(s.to_owned())
    }

    #[test]
    fn a_later_source_waits_for_the_earlier_and_its_deltas_are_joined() {
        let mut order = BlockOrder::default();
        let mut out = VecDeque::new();
        order.open(0);
        order.open(1);
        order.start(0, BlockKind::Text, None, &mut out);
        order.start(1, BlockKind::Text, None, &mut out);
        order.delta(1, text("b1"), &mut out);
        order.delta(0, text("a"), &mut out);
        order.delta(1, text("b2"), &mut out);
        order.complete(1, ContentBlock::text("b1b2"), &mut out);
        order.finish(1, &mut out);
        // Only source 0 has reached consumers.
        assert_eq!(out.len(), 2);
        order.complete(0, ContentBlock::text("a"), &mut out);
        order.finish(0, &mut out);
        let events: Vec<ProviderEvent> = out.into();
        assert_eq!(
            events,
            [
                ProviderEvent::BlockStart {
                    index: 0,
                    kind: BlockKind::Text,
                    tool: None
                },
                ProviderEvent::Delta {
                    index: 0,
                    delta: text("a")
                },
                ProviderEvent::BlockComplete {
                    index: 0,
                    block: ContentBlock::text("a")
                },
                ProviderEvent::BlockStart {
                    index: 1,
                    kind: BlockKind::Text,
                    tool: None
                },
                ProviderEvent::Delta {
                    index: 1,
                    delta: text("b1b2")
                },
                ProviderEvent::BlockComplete {
                    index: 1,
                    block: ContentBlock::text("b1b2")
                },
            ]
        );
        assert_eq!(
            order.take_blocks(),
            [ContentBlock::text("a"), ContentBlock::text("b1b2")]
        );
    }
}
