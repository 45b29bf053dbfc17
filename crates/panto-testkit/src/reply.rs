//! What the mock server answers to one request, and how it writes the bytes.

use std::time::Duration;

use crate::Error;

/// How the body of a [`Reply`] is split into socket writes.
///
/// For SSE replies each write is one HTTP chunk, sent with TCP_NODELAY, so a client sees the body
/// arrive in exactly these pieces (as far as its own reads allow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Chunking {
    /// The whole body in one write.
    #[default]
    Whole,
    /// One write per byte: every multi-byte character, line ending and event is split.
    EveryByte,
    /// Writes of this many bytes (the last one may be shorter). `Fixed(0)` behaves like `Whole`.
    Fixed(usize),
    /// Two writes: bytes before this offset, then the rest. An offset of 0 or past the end gives
    /// one write.
    SplitAt(usize),
}

impl Chunking {
    /// Splits `body` into the pieces to write. Never yields an empty piece, because an empty HTTP
    /// chunk would end a chunked body early.
    pub(crate) fn pieces(self, body: &[u8]) -> Vec<&[u8]> {
        if body.is_empty() {
            return Vec::new();
        }
        match self {
            Chunking::Whole | Chunking::Fixed(0) => vec![body],
            Chunking::EveryByte => body.chunks(1).collect(),
            Chunking::Fixed(n) => body.chunks(n).collect(),
            Chunking::SplitAt(at) if at == 0 || at >= body.len() => vec![body],
            Chunking::SplitAt(at) => {
                let (a, b) = body.split_at(at);
                vec![a, b]
            }
        }
    }
}

/// How the response body is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Transfer-Encoding: chunked`, one HTTP chunk per write (SSE).
    Chunked,
    /// `Content-Length` (JSON and raw bodies).
    Length,
}

/// Where the server stops sending the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The whole body, then a proper end.
    None,
    /// This many body bytes, then nothing more while the connection stays open.
    Stall(usize),
    /// This many body bytes, then the connection closes without a proper end of body.
    Close(usize),
    /// This many body bytes, then a proper end of body.
    End(usize),
}

/// One scripted response. Build it with a constructor ([`Reply::sse`], [`Reply::json`],
/// [`Reply::raw`], [`Reply::fixture`], [`Reply::hang`]) and adjust it with the builder methods.
///
/// Every response carries `Connection: close`; the server closes the connection after it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) framing: Framing,
    pub(crate) chunking: Chunking,
    pub(crate) crlf: bool,
    pub(crate) delay: Duration,
    pub(crate) first_delay: Option<Duration>,
    pub(crate) cut: Cut,
    pub(crate) hang: bool,
}

impl Reply {
    fn new(status: u16, content_type: Option<&str>, body: Vec<u8>, framing: Framing) -> Self {
        let headers = content_type
            .map(|ct| vec![("content-type".to_owned(), ct.to_owned())])
            .unwrap_or_default();
        Reply {
            status,
            headers,
            body,
            framing,
            chunking: Chunking::Whole,
            crlf: false,
            delay: Duration::ZERO,
            first_delay: None,
            cut: Cut::None,
            hang: false,
        }
    }

    /// A `200` server-sent-event stream: `content-type: text/event-stream`,
    /// `cache-control: no-cache` and chunked transfer encoding. The body is sent as given.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Reply::new(200, Some("text/event-stream"), body.into(), Framing::Chunked).header("cache-control", "no-cache")
    }

    /// A JSON body (compact) with this status, `content-type: application/json` and
    /// `Content-Length`.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Reply::new(
            status,
            Some("application/json"),
            body.to_string().into_bytes(),
            Framing::Length,
        )
    }

    /// A body sent exactly as given with `Content-Length` framing and no `content-type` (add one
    /// with [`Reply::header`]). For error bodies whose exact bytes matter, and for non-JSON junk.
    pub fn raw(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Reply::new(status, None, body.into(), Framing::Length)
    }

    /// A reply that never answers: the server reads the request and then sends nothing, not even
    /// a status line, until the client gives up or the server is dropped. For tests of a timeout
    /// before the response headers.
    pub fn hang() -> Self {
        let mut reply = Reply::raw(200, Vec::new());
        reply.hang = true;
        reply
    }

    /// A recorded fixture from [`fixtures_dir`](crate::fixtures_dir), e.g.
    /// `"anthropic/text-basic.sse"`, with its bytes unmodified.
    ///
    /// A `.sse` file becomes a `200` SSE stream. A `.json` file becomes a JSON error response
    /// whose status and headers come from the `<name>.meta.json` or `<name>.headers.txt` beside it
    /// when there is one, else from an `error-NNN` in the file name, else `200`. Framing headers
    /// recorded there (`content-length`, `connection`, `transfer-encoding`) are not copied.
    ///
    /// # Panics
    ///
    /// When the fixture cannot be read. This constructor is for tests, where the panic is the
    /// test failure and names the file; use [`Reply::try_fixture`] to handle the error instead.
    pub fn fixture(path: &str) -> Self {
        match Reply::try_fixture(path) {
            Ok(reply) => reply,
            Err(e) => panic!("panto-testkit: {e}"),
        }
    }

    /// [`Reply::fixture`], returning an error (naming the file and what failed) instead of
    /// panicking when the fixture cannot be read.
    pub fn try_fixture(path: &str) -> Result<Self, Error> {
        crate::fixture::load_reply(&crate::fixtures_dir(), path)
    }

    /// Replaces the status code.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Sets a response header, replacing a header of the same name (compared case-insensitively).
    /// `content-length`, `transfer-encoding` and `connection` are computed by the server; values
    /// set here for them are ignored.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// How the body is split into writes.
    pub fn chunking(mut self, chunking: Chunking) -> Self {
        self.chunking = chunking;
        self
    }

    /// Converts every `\n` line ending of the body that is not already part of `\r\n` into
    /// `\r\n`, as some servers frame SSE. Chunking and cut offsets count the converted bytes.
    pub fn crlf(mut self) -> Self {
        self.crlf = true;
        self
    }

    /// Waits this long before each body write (so also between the headers and the first body
    /// write, even with [`Chunking::Whole`]).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Waits this long before the first body write instead of [`Reply::delay`]: a model's time
    /// to first token, with the headers sent at once as a provider sends them, then the body's
    /// pieces [`Reply::delay`] apart.
    pub fn first_delay(mut self, delay: Duration) -> Self {
        self.first_delay = Some(delay);
        self
    }

    /// How long to wait before the body write numbered `index` (from 0).
    pub(crate) fn delay_before(&self, index: usize) -> Duration {
        match (index, self.first_delay) {
            (0, Some(first)) => first,
            _ => self.delay,
        }
    }

    /// Sends the headers and the first `n` body bytes, then sends nothing more while keeping the
    /// connection open, until the client closes it or the server is dropped. For idle-timeout
    /// tests. Replaces an earlier `close_after` or `end_after`.
    pub fn stall_after(mut self, n: usize) -> Self {
        self.cut = Cut::Stall(n);
        self
    }

    /// Sends the headers and the first `n` body bytes, then closes the connection without
    /// finishing the body (no final chunk, or fewer bytes than `Content-Length`): the client sees
    /// an aborted transfer. Replaces an earlier `stall_after` or `end_after`.
    pub fn close_after(mut self, n: usize) -> Self {
        self.cut = Cut::Close(n);
        self
    }

    /// Sends only the first `n` body bytes but ends the body properly (final chunk, or a
    /// `Content-Length` of `n`): the client sees a complete response whose stream just stops, as
    /// when a server ends a stream before its terminal event. Replaces an earlier `stall_after`
    /// or `close_after`.
    pub fn end_after(mut self, n: usize) -> Self {
        self.cut = Cut::End(n);
        self
    }

    /// The status code.
    pub fn status_code(&self) -> u16 {
        self.status
    }

    /// The headers set so far (not counting the framing headers the server adds).
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The body bytes the server will send: after [`Reply::crlf`] and [`Reply::end_after`], before
    /// any `stall_after`/`close_after` cut.
    pub fn wire_body(&self) -> Vec<u8> {
        let mut body = if self.crlf {
            to_crlf(&self.body)
        } else {
            self.body.clone()
        };
        if let Cut::End(n) = self.cut {
            body.truncate(n);
        }
        body
    }

    /// This reply with the usage of its Anthropic stream (in `message_start` and `message_delta`)
    /// replaced by `usage`, as the prompt cache billed the request; output tokens are kept. A
    /// reply that is not a whole SSE stream (an error, a scripted cut) is left as it is, since
    /// its bytes are the point of the test.
    pub(crate) fn with_anthropic_usage(mut self, usage: &crate::cache::CacheUsage) -> Self {
        if self.status != 200 || self.cut != Cut::None || self.crlf {
            return self;
        }
        let Ok(text) = std::str::from_utf8(&self.body) else {
            return self;
        };
        let mut out = String::with_capacity(text.len() + 256);
        for event in text.split_inclusive("\n\n") {
            out.push_str(&crate::cache::rewrite_usage(event, usage).unwrap_or_else(|| event.to_owned()));
        }
        self.body = out.into_bytes();
        self
    }

    /// Checks that the reply can be written as a valid HTTP response: a three-digit status and
    /// header names and values without control characters.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !(100..=999).contains(&self.status) {
            return Err(format!("reply status {} is not a three-digit HTTP status", self.status));
        }
        for (name, value) in &self.headers {
            let name_ok = !name.is_empty() && name.bytes().all(is_token_byte);
            if !name_ok {
                return Err(format!("reply header name {name:?} is not a valid HTTP header name"));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(format!("reply header {name} has a value containing CR, LF or NUL"));
            }
        }
        Ok(())
    }
}

/// Whether `b` may appear in an HTTP header name (RFC 9110 `tchar`).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `\n` to `\r\n`, leaving existing `\r\n` alone.
fn to_crlf(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 16);
    let mut prev = 0u8;
    for &b in body {
        if b == b'\n' && prev != b'\r' {
            out.push(b'\r');
        }
        out.push(b);
        prev = b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_body_without_empty_writes() {
        let body = b"abcdefg";
        let cases = [
            (Chunking::Whole, 1),
            (Chunking::EveryByte, 7),
            (Chunking::Fixed(3), 3),
            (Chunking::Fixed(0), 1),
            (Chunking::SplitAt(2), 2),
            (Chunking::SplitAt(0), 1),
            (Chunking::SplitAt(7), 1),
        ];
        for (chunking, count) in cases {
            let pieces = chunking.pieces(body);
            assert_eq!(pieces.len(), count, "{chunking:?}");
            assert!(pieces.iter().all(|p| !p.is_empty()), "{chunking:?}");
            assert_eq!(pieces.concat(), body, "{chunking:?}");
        }
        assert!(Chunking::EveryByte.pieces(b"").is_empty());
    }

    #[test]
    fn crlf_converts_only_bare_line_feeds() {
        assert_eq!(to_crlf(b"a\nb\r\nc\n\n"), b"a\r\nb\r\nc\r\n\r\n");
    }

    #[test]
    fn end_after_truncates_the_wire_body() {
        let reply = Reply::sse("a\nb\n").crlf().end_after(3);
        assert_eq!(reply.wire_body(), b"a\r\n");
    }

    #[test]
    fn check_rejects_header_injection_and_bad_status() {
        assert!(Reply::sse("").header("x-a", "1\r\nx-b: 2").check().is_err());
        assert!(Reply::sse("").header("bad name", "1").check().is_err());
        assert!(Reply::sse("").status(42).check().is_err());
        assert!(Reply::sse("").header("x-ok", "fine").check().is_ok());
    }
}
