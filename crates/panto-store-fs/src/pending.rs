//! The messages of a batch as this store keeps them: borrowed for an append on the caller's
//! thread, owned to move to a blocking thread.

use panto_core::{CompactionRecord, Message, Usage, WireIdentity};

/// One message of a batch: what of a `PersistentMessage` this store keeps, borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending<'a> {
    pub message: &'a Message,
    pub usage: Option<Usage>,
    pub wire: Option<&'a WireIdentity>,
    pub compaction: Option<CompactionRecord>,
}

/// An owned copy of one message of a batch, so the batch can move to a blocking thread.
#[derive(Debug)]
pub(crate) struct OwnedPending {
    message: Message,
    usage: Option<Usage>,
    wire: Option<WireIdentity>,
    compaction: Option<CompactionRecord>,
}

impl OwnedPending {
    pub fn of(p: Pending<'_>) -> Self {
        OwnedPending {
            message: p.message.clone(),
            usage: p.usage,
            wire: p.wire.cloned(),
            compaction: p.compaction,
        }
    }

    pub fn borrow(&self) -> Pending<'_> {
        Pending {
            message: &self.message,
            usage: self.usage,
            wire: self.wire.as_ref(),
            compaction: self.compaction,
        }
    }
}
