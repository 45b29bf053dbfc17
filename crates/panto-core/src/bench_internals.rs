//! Hidden entry points into the wire layer, for benchmarks and fuzz targets only.
//!
//! The SSE parser and the two decoders are private to the crate (they are not part of the API),
//! but their speed and robustness are what the benchmarks and fuzzers must measure. This module
//! exposes exactly the path the agent's provider stream drives, without the network, behind the
//! `bench-internals` cargo feature. It is `#[doc(hidden)]` and carries no stability promise.

use std::collections::VecDeque;

use crate::config::ApiStyle;
use crate::conversation::Message;
use crate::error::{Error, Result};
use crate::provider::sse::SseParser;
use crate::provider::ProviderEvent;

/// What decoding one response body produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireCounts {
    /// SSE events the parser dispatched.
    pub sse_events: usize,
    /// Provider events the decoder produced (block starts, deltas, block completions and the
    /// final message).
    pub provider_events: usize,
    /// Whether the decoder saw the stream's terminal event.
    pub complete: bool,
}

/// Decodes a response body delivered as `chunks` the way a live response is decoded: each chunk
/// is fed to the SSE parser, every complete event goes to `style`'s decoder, and every provider
/// event is taken off the queue one at a time. At end of body the parser is finished and the
/// decoder told, so a truncated body is an error here as it is on the wire.
pub fn decode<'a>(style: ApiStyle, chunks: impl IntoIterator<Item = &'a [u8]>) -> Result<WireCounts> {
    let mut decoder = crate::provider::new_decoder(style, &[]);
    let mut parser = SseParser::default();
    let mut pending: VecDeque<ProviderEvent> = VecDeque::new();
    let mut counts = WireCounts::default();
    for chunk in chunks {
        if decoder.is_done() {
            break;
        }
        parser.feed(chunk);
        while let Some(ev) = parser.next_event()? {
            counts.sse_events += 1;
            decoder.on_event(ev.event, ev.data, ev.offset, &mut pending)?;
            drain(&mut pending, &mut counts);
            if decoder.is_done() {
                break;
            }
        }
    }
    if !decoder.is_done() {
        if let Some(ev) = parser.finish()? {
            counts.sse_events += 1;
            decoder.on_event(ev.event, ev.data, ev.offset, &mut pending)?;
        }
        if !decoder.is_done() {
            decoder.on_eof(&mut pending)?;
        }
        drain(&mut pending, &mut counts);
    }
    Ok(counts)
}

/// The assistant message a response completed as, the way the agent adds it to the
/// conversation, and the tool calls of it that the agent would not run.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedMessage {
    /// The message: blocks, usage, stop reason.
    pub message: Message,
    /// `(call id, error result text)` of each tool call that does not run.
    pub rejected: Vec<(String, String)>,
}

/// Decodes a whole response body, answering a request that carried `history`, to the message
/// it completes as. The body goes through the SSE parser and `style`'s decoder as a live one
/// does (in one chunk); an error is what a live response would fail with.
pub fn decode_message(style: ApiStyle, history: &[Message], body: &[u8]) -> Result<DecodedMessage> {
    let mut decoder = crate::provider::new_decoder(style, history);
    let mut parser = SseParser::default();
    let mut pending: VecDeque<ProviderEvent> = VecDeque::new();
    parser.feed(body);
    while let Some(ev) = parser.next_event()? {
        decoder.on_event(ev.event, ev.data, ev.offset, &mut pending)?;
        if decoder.is_done() {
            break;
        }
    }
    if !decoder.is_done() {
        if let Some(ev) = parser.finish()? {
            decoder.on_event(ev.event, ev.data, ev.offset, &mut pending)?;
        }
        if !decoder.is_done() {
            decoder.on_eof(&mut pending)?;
        }
    }
    match pending.pop_back() {
        Some(ProviderEvent::MessageComplete {
            blocks,
            usage,
            stop_reason,
            rejected,
        }) => Ok(DecodedMessage {
            message: Message::assistant(blocks, usage, stop_reason),
            rejected: rejected.into_iter().map(|r| (r.id, r.reason)).collect(),
        }),
        _ => Err(Error::Truncated {
            expected: "the end of the message",
        }),
    }
}

/// Takes every queued provider event off the queue, as the agent's stream does one by one.
fn drain(pending: &mut VecDeque<ProviderEvent>, counts: &mut WireCounts) {
    while let Some(event) = pending.pop_front() {
        // Reading the event keeps the optimiser from discarding the decoding work.
        if matches!(event, ProviderEvent::MessageComplete { .. }) {
            counts.complete = true;
        }
        counts.provider_events += 1;
    }
}

/// One SSE event as the parser dispatched it: `event` field, data, and byte offset in the body.
pub type SseRecord = (String, String, u64);

/// Splits a body delivered as `chunks` into SSE events (no decoding), draining after every chunk
/// and finishing at end of body. Returns the events before the first error and that error, so
/// that two chunkings of one body can be compared even when the body is invalid.
pub fn sse_events<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> (Vec<SseRecord>, Option<String>) {
    let (events, error) = crate::provider::sse::collect_events(chunks);
    (events, error.map(|e| e.to_string()))
}

/// Splits a body delivered as `chunks` into SSE events, as [`sse_events`] does, but keeps only
/// each event's data length: what the parser costs, without copying what it found.
pub fn sse_data_lengths<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<usize>> {
    let mut parser = SseParser::default();
    let mut lengths = Vec::new();
    for chunk in chunks {
        parser.feed(chunk);
        while let Some(ev) = parser.next_event()? {
            lengths.push(ev.data.len());
        }
    }
    if let Some(ev) = parser.finish()? {
        lengths.push(ev.data.len());
    }
    while let Some(ev) = parser.next_event()? {
        lengths.push(ev.data.len());
    }
    Ok(lengths)
}

/// The body of the request `config`'s API style would send for `messages` with this system
/// prompt and these tools, as bytes: what the agent builds before each request.
pub fn request_body(
    config: &crate::config::ProviderConfig,
    system: &[&str],
    messages: &[Message],
    tools: &[crate::tool::ToolDecl],
) -> Vec<u8> {
    let request = crate::provider::ProviderRequest {
        config,
        system,
        messages,
        tools,
        require_tool: false,
        session_id: "bench-session",
    };
    crate::provider::build_request(&request).2
}
