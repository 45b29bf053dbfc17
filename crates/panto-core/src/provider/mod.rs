//! Providers: the HTTP transport, the SSE layer, and the mapping of each API onto one internal
//! event vocabulary.
//!
//! The layering follows codex-rs: `http` sends a request and classifies failures; `sse` splits
//! bytes into events; `anthropic`, `openai` (Chat Completions) and `responses` build request bodies and decode their own event
//! payloads into [`ProviderEvent`]s. The agent drives [`ProviderStream`] and never sees wire JSON.

pub(crate) mod anthropic;
pub(crate) mod cache;
pub(crate) mod http;
pub(crate) mod models;
pub(crate) mod openai;
pub(crate) mod order;
pub(crate) mod redact;
pub(crate) mod responses;
pub(crate) mod sse;
pub(crate) mod validate;

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;

use crate::config::{ApiStyle, ProviderConfig};
use crate::conversation::ToolDecl;
use crate::conversation::{ContentBlock, Message, StopReason, Usage};
use crate::error::{Error, Result};
use crate::event::{BlockKind, ContentDelta, ToolDetails};
use validate::{RejectedCall, ToolCallCheck};

/// Everything a provider needs to build one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProviderRequest<'a> {
    /// Endpoint, model, key, reasoning, limits.
    pub config: &'a ProviderConfig,
    /// The effective system prompt blocks, in order.
    pub system: &'a [&'a str],
    /// The conversation. Messages with [`Role::System`](crate::Role::System) are skipped by the
    /// encoders (the system prompt travels in `system`).
    pub messages: &'a [Message],
    /// Tools offered, already under their offered names.
    pub tools: &'a [ToolDecl],
    /// Whether the model must call one of `tools` rather than answer in text (Anthropic
    /// `tool_choice: any`, OpenAI `tool_choice: required`). Ignored without tools.
    pub require_tool: bool,
    /// The session the request belongs to, sent as OpenAI's `prompt_cache_key` when configured
    /// ([`cache::prompt_cache_key`]). Empty when there is none.
    pub session_id: &'a str,
}

/// One decoded step of a provider response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProviderEvent {
    /// A block starts at `index` (indices count blocks of this message from 0, in order). Blocks
    /// come one at a time: a block starts after the one before it completed, however the server
    /// interleaved its sources (see [`order`]).
    BlockStart {
        index: usize,
        kind: BlockKind,
        tool: Option<ToolDetails>,
    },
    /// More content for block `index`.
    Delta { index: usize, delta: ContentDelta },
    /// Block `index` is complete.
    BlockComplete { index: usize, block: ContentBlock },
    /// The message is complete: its blocks in index order, usage, and why it stopped. The decoder
    /// emits nothing after this.
    MessageComplete {
        blocks: Vec<ContentBlock>,
        usage: Option<Usage>,
        stop_reason: StopReason,
        /// Tool calls of `blocks` that must not run, and the error result each gets instead
        /// (see [`validate`]).
        rejected: Vec<RejectedCall>,
    },
}

impl ProviderEvent {
    /// The `MessageComplete` of `blocks`. Without a stop reason on the wire, a message with tool
    /// calls stopped for them: tool calls are the one thing the agent must not miss.
    pub(crate) fn message_complete(
        blocks: Vec<ContentBlock>,
        usage: Option<Usage>,
        stop: Option<StopReason>,
        rejected: Vec<RejectedCall>,
    ) -> Self {
        let stop_reason = stop.unwrap_or_else(|| {
            if blocks.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. })) {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        });
        ProviderEvent::MessageComplete {
            blocks,
            usage,
            stop_reason,
            rejected,
        }
    }
}

/// A decoder for one API's SSE payloads.
pub(crate) trait Decoder: Send {
    /// Decodes one SSE event (`event` is the `event:` field, empty when absent) and pushes what it
    /// produces onto `out`. `offset` is the event's byte offset in the body, for error messages.
    fn on_event(&mut self, event: &str, data: &str, offset: u64, out: &mut VecDeque<ProviderEvent>) -> Result<()>;

    /// Called when the body ends. Returns `Ok` only if the terminal event was seen (after pushing
    /// anything still owed onto `out`), else [`Error::Truncated`].
    fn on_eof(&mut self, out: &mut VecDeque<ProviderEvent>) -> Result<()>;

    /// Whether the decoder has produced `MessageComplete` and wants no more input.
    fn is_done(&self) -> bool;
}

/// The text a compaction summary is sent as, on both APIs: the model reads it as a user turn.
pub(crate) fn summary_text(summary: &str) -> String {
    format!("Summary of the conversation so far:\n\n<summary>{summary}</summary>")
}

/// Builds the URL, the headers and the JSON body of a request.
pub(crate) fn build_request(req: &ProviderRequest<'_>) -> (String, Vec<(String, String)>, Vec<u8>) {
    match req.config.api_style {
        ApiStyle::AnthropicMessages => (
            anthropic::endpoint(&req.config.base_url),
            anthropic::headers(req.config),
            anthropic::request_body(req),
        ),
        ApiStyle::OpenAiChat => (
            openai::endpoint(&req.config.base_url),
            openai::headers(req.config),
            openai::request_body(req),
        ),
        ApiStyle::OpenAiResponses => (
            responses::endpoint(&req.config.base_url),
            responses::headers(req.config),
            responses::request_body(req),
        ),
    }
}

/// `body` as compact JSON. The wire structs (`*/body.rs`) hold strings, numbers and `Value`s,
/// whose map keys are strings: writing them into a `Vec` cannot fail.
fn json_bytes(body: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}

/// A request's body parsed back, for tests that look at what an encoder built.
#[cfg(test)]
pub(crate) fn request_json(req: &ProviderRequest<'_>) -> serde_json::Value {
    serde_json::from_slice(&build_request(req).2).expect("the request body is JSON")
}

/// A decoder for a response to a request that carried `history`: the tool calls it decodes get
/// ids unique in the conversation.
pub(crate) fn new_decoder(style: ApiStyle, history: &[Message]) -> Box<dyn Decoder> {
    let check = ToolCallCheck::after(history);
    match style {
        ApiStyle::AnthropicMessages => Box::new(anthropic::AnthropicDecoder::new(check)),
        ApiStyle::OpenAiChat => Box::new(openai::OpenAiDecoder::new(check)),
        ApiStyle::OpenAiResponses => Box::new(responses::ResponsesDecoder::new(check)),
    }
}

/// The longest a finished response's remaining bytes are waited for (see
/// [`ProviderStream::drain_rest`]).
const DRAIN_WAIT: Duration = Duration::from_millis(50);

/// The most bytes read past the end of a finished message.
const DRAIN_BYTES: usize = 64 * 1024;

/// A response being streamed: bytes in, [`ProviderEvent`]s out.
pub(crate) struct ProviderStream {
    /// The response's HTTP status (a success), for the request's trace.
    pub status: u16,
    body: futures_util::stream::BoxStream<'static, reqwest::Result<Bytes>>,
    parser: sse::SseParser,
    decoder: Box<dyn Decoder>,
    pending: VecDeque<ProviderEvent>,
    idle_timeout: Duration,
    /// When the last bytes arrived, and one timer that checks it: a timer per read would put an
    /// entry in the runtime's timer wheel and take it out again for every chunk of every
    /// response, which a fleet of agents streaming small deltas pays thousands of times a
    /// second. This one fires at most once per `idle_timeout`, and is re-armed from the last
    /// arrival when bytes came since.
    last_bytes: tokio::time::Instant,
    idle: std::pin::Pin<Box<tokio::time::Sleep>>,
    eof: bool,
    eof_reported: bool,
    /// The body's bytes so far, and the most it may take (`ProviderConfig::max_response_bytes`).
    received: u64,
    max_bytes: u64,
    /// Scrubs the key and header values out of errors quoting what the provider sent.
    redactor: redact::Redactor,
    /// The body's items read by [`ProviderStream::read_ahead`] and not decoded yet, in order,
    /// with their bytes; the body's end or failure, once read ahead, is the last.
    ahead: VecDeque<Option<reqwest::Result<Bytes>>>,
    ahead_bytes: u64,
}

impl std::fmt::Debug for ProviderStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderStream")
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

impl ProviderStream {
    /// Sends the request and returns the stream once the status line and headers are in.
    pub(crate) async fn open(
        client: &reqwest::Client,
        req: &ProviderRequest<'_>,
        idle_timeout: Duration,
    ) -> Result<Self> {
        Self::start(client, req, idle_timeout).await
    }

    /// What [`ProviderStream::open`] does, with everything taken from `req` before the first
    /// await: the future borrows nothing, so the agent can write its session while the request
    /// is on its way (agent/stream.rs, `Phase::Request`).
    pub(crate) fn start(
        client: &reqwest::Client,
        req: &ProviderRequest<'_>,
        idle_timeout: Duration,
    ) -> impl std::future::Future<Output = Result<Self>> + Send + 'static {
        let (url, headers, body) = build_request(req);
        let redactor = redact::Redactor::new(req.config);
        let parser = sse::SseParser::new(req.config.max_event_bytes);
        let max_bytes = req.config.max_response_bytes;
        let decoder = new_decoder(req.config.api_style, req.messages);
        let client = client.clone();
        async move {
            let response = http::send(&client, &url, &headers, body, idle_timeout)
                .await
                .map_err(|e| redactor.scrub(e))?;
            Ok(ProviderStream {
                status: response.status().as_u16(),
                body: response.bytes_stream().boxed(),
                parser,
                decoder,
                pending: VecDeque::new(),
                idle_timeout,
                last_bytes: tokio::time::Instant::now(),
                idle: Box::pin(tokio::time::sleep(idle_timeout)),
                eof: false,
                eof_reported: false,
                received: 0,
                max_bytes,
                redactor,
                ahead: VecDeque::new(),
                ahead_bytes: 0,
            })
        }
    }

    /// Reads what is left of a response whose message is complete (usually only the end of the
    /// chunked body), so that the connection goes back to the client's pool for the next
    /// request, of this agent or another, instead of being closed. Bounded by [`DRAIN_WAIT`] and
    /// [`DRAIN_BYTES`]: a server that keeps talking after the end of the message only loses the
    /// connection.
    async fn drain_rest(&mut self) {
        self.eof = true;
        let deadline = tokio::time::Instant::now() + DRAIN_WAIT;
        let mut left = DRAIN_BYTES;
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, self.body.next()).await {
            match left.checked_sub(chunk.len()) {
                Some(rest) if rest > 0 => left = rest,
                _ => return,
            }
        }
    }

    /// Reads the body ahead of decoding, keeping what arrives for [`ProviderStream::next`],
    /// until the body ends or fails, or `max_response_bytes` would be passed; then waits
    /// forever. The agent runs it while it stores the tool results the request carries: nothing
    /// of the response is decoded or seen before they are stored, but its bytes leave the
    /// HTTP/2 connection's buffers, where thousands of agents' unread replies of small frames
    /// would overrun the library's budget and close the connection under all of them.
    /// Cancel-safe: dropping it loses nothing.
    pub(crate) async fn read_ahead(&mut self) -> std::convert::Infallible {
        let ended = |item: &Option<reqwest::Result<Bytes>>| !matches!(item, Some(Ok(_)));
        while !self.ahead.back().is_some_and(ended) && self.received + self.ahead_bytes <= self.max_bytes {
            let item = self.body.next().await;
            if let Some(Ok(chunk)) = &item {
                self.ahead_bytes += chunk.len() as u64;
                self.last_bytes = tokio::time::Instant::now();
            }
            self.ahead.push_back(item);
        }
        std::future::pending().await
    }

    /// The body's next chunk, or `Err(())` once no byte has arrived for `idle_timeout`.
    async fn next_chunk(&mut self) -> std::result::Result<Option<reqwest::Result<Bytes>>, ()> {
        if let Some(item) = self.ahead.pop_front() {
            if let Some(Ok(chunk)) = &item {
                self.ahead_bytes -= chunk.len() as u64;
            }
            return Ok(item);
        }
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(item) = self.body.poll_next_unpin(cx) {
                return std::task::Poll::Ready(Ok(item));
            }
            while std::future::Future::poll(self.idle.as_mut(), cx).is_ready() {
                let due = self.last_bytes + self.idle_timeout;
                if due <= tokio::time::Instant::now() {
                    return std::task::Poll::Ready(Err(()));
                }
                self.idle.as_mut().reset(due);
            }
            std::task::Poll::Pending
        })
        .await
    }

    /// The next event, `Ok(None)` after `MessageComplete`.
    ///
    /// Events come out in wire order, and an error is returned only after every event that
    /// preceded it on the wire: a consumer must see the text that streamed before a mid-stream
    /// error, so that the agent can keep what the user saw.
    pub(crate) async fn next(&mut self) -> Result<Option<ProviderEvent>> {
        match self.decode_next().await {
            Ok(event) => Ok(event),
            Err(e) => Err(self.redactor.scrub(e)),
        }
    }

    /// [`ProviderStream::next`] before its error is scrubbed.
    async fn decode_next(&mut self) -> Result<Option<ProviderEvent>> {
        loop {
            if self.decoder.is_done() && !self.eof {
                self.drain_rest().await;
            }
            if let Some(ev) = self.pending.pop_front() {
                return Ok(Some(ev));
            }
            if self.decoder.is_done() {
                return Ok(None);
            }
            if self.eof {
                if self.eof_reported {
                    return Ok(None);
                }
                // Everything buffered was delivered; now the decoder says whether the body ended
                // properly (pushing what it still owes) or was truncated.
                self.eof_reported = true;
                self.decoder.on_eof(&mut self.pending)?;
                continue;
            }
            // Decode buffered SSE events one at a time, handing out what each produced before
            // decoding the next.
            if let Some(ev) = self.parser.next_event()? {
                self.decoder.on_event(ev.event, ev.data, ev.offset, &mut self.pending)?;
                continue;
            }
            match self.next_chunk().await {
                Err(_) => return Err(Error::IdleTimeout(self.idle_timeout)),
                Ok(Some(Ok(chunk))) => {
                    self.last_bytes = tokio::time::Instant::now();
                    // Every event before this chunk was handed out already; a server streaming
                    // without end is stopped here, before the message grows any further.
                    self.received = self.received.saturating_add(chunk.len() as u64);
                    if self.received > self.max_bytes {
                        return Err(Error::Protocol {
                            offset: self.max_bytes,
                            message: format!(
                                "the response passed {} bytes (max_response_bytes) without ending",
                                self.max_bytes
                            ),
                        });
                    }
                    self.parser.feed(&chunk);
                }
                // The headers came, so the provider was reached: a body that breaks off is a
                // truncated response (retryable), whatever the socket said.
                Ok(Some(Err(_))) => {
                    return Err(Error::Truncated {
                        expected: "the rest of the response body",
                    })
                }
                Ok(None) => {
                    self.eof = true;
                    if let Some(ev) = self.parser.finish()? {
                        // The last event had no blank line after it. That is fine when it is whole
                        // (some servers end that way), but if it does not decode, the body was cut
                        // inside it: a truncation (retryable), not a malformed stream.
                        let decoded = self.decoder.on_event(ev.event, ev.data, ev.offset, &mut self.pending);
                        if let Err(Error::Protocol { .. }) = decoded {
                            return Err(Error::Truncated {
                                expected: "the rest of the last event",
                            });
                        }
                        decoded?;
                    }
                }
            }
        }
    }
}
