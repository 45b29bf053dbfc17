//! Test support shared by the SSE parser and both decoders: fixture loading, and running a body
//! through [`SseParser`] and a [`Decoder`] the way `ProviderStream` does, under different chunkings.

use std::collections::VecDeque;

use super::SseParser;
use crate::conversation::{ContentBlock, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use crate::provider::{Decoder, ProviderEvent};

/// The directory of recorded wire fixtures.
pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../panto-testkit/fixtures/wire");

/// The bytes of a fixture, by path relative to [`FIXTURES`].
pub(crate) fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{FIXTURES}/{path}");
    std::fs::read(&full).unwrap_or_else(|e| panic!("reading fixture {full}: {e}"))
}

/// Every `.sse` fixture, as paths relative to [`FIXTURES`], sorted.
pub(crate) fn sse_fixtures() -> Vec<String> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(FIXTURES).expect("fixture directory") {
        let dir = dir.expect("fixture directory entry").path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).expect("fixture subdirectory") {
            let file = file.expect("fixture file").path();
            if file.extension().is_some_and(|e| e == "sse") {
                let rel = file.strip_prefix(FIXTURES).expect("fixture under FIXTURES");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    assert!(out.len() >= 20, "expected the wire fixtures, found {out:?}");
    out
}

/// An owned copy of an [`SseEvent`](super::SseEvent): `(event, data, offset)`.
pub(crate) type OwnedEvent = (String, String, u64);

/// Parses a body delivered as `chunks`, draining events after every chunk and calling `finish`
/// at the end.
pub(crate) fn parse_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<OwnedEvent>> {
    match super::collect_events(chunks) {
        (events, None) => Ok(events),
        (_, Some(e)) => Err(e),
    }
}

/// What a body decoded to: the events produced, and the error that stopped it, if any.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// Every event the decoder produced, in order (those before an error included).
    pub events: Vec<ProviderEvent>,
    /// The error that ended decoding.
    pub error: Option<Error>,
}

impl Decoded {
    /// The events and the error's debug form, for comparing two runs.
    fn comparable(&self) -> (Vec<ProviderEvent>, Option<String>) {
        (self.events.clone(), self.error.as_ref().map(|e| format!("{e:?}")))
    }

    /// The `MessageComplete` fields, panicking with the error if decoding failed.
    pub(crate) fn message(&self) -> (&[ContentBlock], Option<Usage>, &StopReason) {
        if let Some(e) = &self.error {
            panic!("decoding failed: {e:?}\nevents: {:#?}", self.events);
        }
        match self.events.last() {
            Some(ProviderEvent::MessageComplete {
                blocks,
                usage,
                stop_reason,
                ..
            }) => (blocks, *usage, stop_reason),
            other => panic!("expected MessageComplete last, got {other:?}"),
        }
    }
}

/// Runs a body, delivered as `chunks`, through a parser and `decoder` exactly as
/// `ProviderStream::next` does: drain events after each chunk, stop once the decoder is done,
/// and at end of body call `finish` and then `on_eof` if the decoder is still waiting.
pub(crate) fn decode_chunks<'a>(decoder: &mut dyn Decoder, chunks: impl IntoIterator<Item = &'a [u8]>) -> Decoded {
    let mut out = VecDeque::new();
    let error = run(decoder, chunks, &mut out).err();
    Decoded {
        events: out.into(),
        error,
    }
}

fn run<'a>(
    decoder: &mut dyn Decoder,
    chunks: impl IntoIterator<Item = &'a [u8]>,
    out: &mut VecDeque<ProviderEvent>,
) -> Result<()> {
    let mut parser = SseParser::default();
    for chunk in chunks {
        parser.feed(chunk);
        while let Some(ev) = parser.next_event()? {
            decoder.on_event(ev.event, ev.data, ev.offset, out)?;
            if decoder.is_done() {
                return Ok(());
            }
        }
    }
    if let Some(ev) = parser.finish()? {
        decoder.on_event(ev.event, ev.data, ev.offset, out)?;
    }
    if !decoder.is_done() {
        decoder.on_eof(out)?;
    }
    Ok(())
}

/// Decodes a fixture whole, split into two chunks at every byte boundary, and fed one byte at a
/// time; asserts the three agree, that the events are well formed, and returns the result.
pub(crate) fn decode_fixture_every_way<D: Decoder + Default>(path: &str) -> Decoded {
    let body = fixture(path);
    decode_every_way::<D>(path, &body)
}

/// [`decode_fixture_every_way`] for a body given inline.
pub(crate) fn decode_every_way<D: Decoder + Default>(name: &str, body: &[u8]) -> Decoded {
    let whole = decode_chunks(&mut D::default(), [body]);
    let expected = whole.comparable();
    for split in 0..=body.len() {
        let (a, b) = body.split_at(split);
        let got = decode_chunks(&mut D::default(), [a, b]).comparable();
        assert!(
            got == expected,
            "{name}: split at byte {split} differs from the whole body:\n{got:#?}"
        );
    }
    let bytes = decode_chunks(&mut D::default(), body.chunks(1)).comparable();
    assert_eq!(bytes, expected, "{name}: 1-byte feeding differs from the whole body");
    assert_well_formed(name, &whole.events);
    whole
}

/// Checks the contract of [`ProviderEvent`]s: each block starts once, in index order, before its
/// deltas, and only after the block before it completed (one block at a time); a tool call starts with the id it completes with (and its name, once known); its
/// deltas add up to the completed block; `MessageComplete` comes last and repeats the completed
/// blocks in index order.
pub(crate) fn assert_well_formed(name: &str, events: &[ProviderEvent]) {
    let mut started: Vec<(BlockKind, String)> = Vec::new();
    let mut tools: Vec<Option<ToolDetails>> = Vec::new();
    let mut completed: Vec<ContentBlock> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        match event {
            ProviderEvent::BlockStart { index, kind, tool } => {
                assert_eq!(*index, started.len(), "{name}: block {index} started out of order");
                assert_eq!(
                    started.len(),
                    completed.len(),
                    "{name}: block {index} started while block {} was open",
                    completed.len()
                );
                assert_eq!(tool.is_some(), *kind == BlockKind::ToolUse, "{name}: tool details");
                started.push((*kind, String::new()));
                tools.push(tool.clone());
            }
            ProviderEvent::Delta { index, delta } => {
                assert!(*index < started.len(), "{name}: delta before start");
                assert!(*index >= completed.len(), "{name}: delta after completion");
                let (kind, acc) = &mut started[*index];
                let (expected_kind, text) = match delta {
                    ContentDelta::Text(t) => (BlockKind::Text, t),
                    ContentDelta::Thinking(t) => (BlockKind::Thinking, t),
                    ContentDelta::ToolInput(t) => (BlockKind::ToolUse, t),
                };
                assert_eq!(*kind, expected_kind, "{name}: delta kind for block {index}");
                assert!(!text.is_empty(), "{name}: empty delta at event {i}");
                acc.push_str(text);
            }
            ProviderEvent::BlockComplete { index, block } => {
                assert_eq!(*index, completed.len(), "{name}: block {index} completed out of order");
                let (kind, acc) = &started[*index];
                match (kind, block) {
                    (BlockKind::Text, ContentBlock::Text { text }) => assert_eq!(acc, text, "{name}"),
                    (BlockKind::Thinking, ContentBlock::Thinking { thinking, .. }) => {
                        assert_eq!(acc, thinking, "{name}")
                    }
                    (BlockKind::Reasoning, ContentBlock::Reasoning { .. }) => assert!(acc.is_empty(), "{name}"),
                    (BlockKind::RedactedThinking, ContentBlock::RedactedThinking { .. }) => {
                        assert!(acc.is_empty(), "{name}")
                    }
                    (
                        BlockKind::ToolUse,
                        ContentBlock::ToolUse {
                            input,
                            id,
                            name: tool_name,
                        },
                    ) => {
                        let start = tools[*index].as_ref().expect("tool details");
                        assert_eq!(&start.id, id, "{name}: tool call {index} changed its id");
                        if !start.name.is_empty() {
                            assert_eq!(&start.name, tool_name, "{name}: tool call {index} changed its name");
                        }
                        // Input the decoder refused (not a JSON object) is kept as `{}`.
                        if *input != serde_json::json!({}) {
                            let streamed: serde_json::Value = serde_json::from_str(acc).expect("streamed input");
                            assert_eq!(&streamed, input, "{name}: streamed tool input");
                        }
                    }
                    other => panic!("{name}: block kind mismatch {other:?}"),
                }
                completed.push(block.clone());
            }
            ProviderEvent::MessageComplete { blocks, rejected, .. } => {
                assert_eq!(i, events.len() - 1, "{name}: MessageComplete is not last");
                assert_eq!(blocks, &completed, "{name}: MessageComplete blocks");
                assert_eq!(started.len(), completed.len(), "{name}: unclosed block");
                for call in rejected {
                    assert!(
                        blocks
                            .iter()
                            .any(|b| matches!(b, ContentBlock::ToolUse { id, .. } if *id == call.id)),
                        "{name}: rejected call {} is not in the message",
                        call.id
                    );
                }
            }
        }
    }
}
