//! The assistant message being streamed, kept so that a cancel or an error can salvage what the
//! user already saw.

use std::collections::BTreeMap;

use crate::conversation::ContentBlock;
use crate::event::ContentDelta;
use crate::provider::ProviderEvent;

/// What has streamed of the current assistant message.
#[derive(Debug, Default)]
pub(crate) struct PartialMessage {
    complete: BTreeMap<usize, ContentBlock>,
    open_text: BTreeMap<usize, String>,
    /// Whether any content reached the consumer.
    pub seen: bool,
}

impl PartialMessage {
    /// Folds one provider event in.
    pub(super) fn observe(&mut self, event: &ProviderEvent) {
        match event {
            ProviderEvent::BlockStart { .. } => self.seen = true,
            ProviderEvent::Delta { index, delta } => {
                self.seen = true;
                if let ContentDelta::Text(text) = delta {
                    self.open_text.entry(*index).or_default().push_str(text);
                }
            }
            ProviderEvent::BlockComplete { index, block } => {
                self.open_text.remove(index);
                self.complete.insert(*index, block.clone());
            }
            ProviderEvent::MessageComplete { .. } => {}
        }
    }

    /// The blocks worth keeping: complete text, thinking, redacted thinking and reasoning items, and text still
    /// streaming. Tool calls are dropped: they never ran, and a call without a result would make
    /// the conversation invalid.
    pub(super) fn salvage(self) -> Vec<ContentBlock> {
        let mut blocks: BTreeMap<usize, ContentBlock> = self
            .complete
            .into_iter()
            .filter(|(_, b)| {
                matches!(
                    b,
                    ContentBlock::Text { .. }
                        | ContentBlock::Thinking { .. }
                        | ContentBlock::RedactedThinking { .. }
                        | ContentBlock::Reasoning { .. }
                )
            })
            .collect();
        for (index, text) in self.open_text {
            if !text.is_empty() {
                blocks.insert(index, ContentBlock::Text { text });
            }
        }
        blocks
            .into_values()
            .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
            .collect()
    }
}
