//! Server-sent events: bytes in, events out. (Being written; see the provider helper.)

use crate::error::Result;

/// One SSE event, borrowed from the parser's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    /// The `event:` field, empty when absent.
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
    /// Byte offset of the event's first line in the body.
    pub offset: u64,
}

/// An incremental SSE parser.
#[derive(Debug, Default)]
pub(crate) struct SseParser {}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn feed(&mut self, _chunk: &[u8]) {
        todo!()
    }
    pub fn next_event(&mut self) -> Result<Option<SseEvent<'_>>> {
        todo!()
    }
    pub fn finish(&mut self) -> Result<Option<SseEvent<'_>>> {
        todo!()
    }
}
