//! The messages of a batch as this store keeps them: borrowed for an append on the caller's
//! thread, owned to move to a blocking thread.

use panto_core::store::CompactionRecord;
use panto_core::wire::ProviderIdentity;
use panto_core::{Message, Usage};

/// One message of a batch: what of a `PersistentMessage` this store keeps, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchMessage<'a> {
    pub message: &'a Message,
    pub usage: Option<Usage>,
    pub wire: Option<&'a ProviderIdentity>,
    pub compaction: Option<CompactionRecord>,
}

/// An owned copy of one message of a batch, so the batch can move to a blocking thread.
#[derive(Debug)]
pub(crate) struct OwnedBatchMessage {
    message: Message,
    usage: Option<Usage>,
    wire: Option<ProviderIdentity>,
    compaction: Option<CompactionRecord>,
}

impl OwnedBatchMessage {
    pub(crate) fn of(p: BatchMessage<'_>) -> Self {
        OwnedBatchMessage {
            message: p.message.clone(),
            usage: p.usage,
            wire: p.wire.cloned(),
            compaction: p.compaction,
        }
    }

    pub(crate) fn borrow(&self) -> BatchMessage<'_> {
        BatchMessage {
            message: &self.message,
            usage: self.usage,
            wire: self.wire.as_ref(),
            compaction: self.compaction,
        }
    }
}
