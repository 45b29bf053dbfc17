//! HTTP/2 over cleartext (h2c, "prior knowledge"): a client that opens a connection with the
//! HTTP/2 preface gets the same scripted replies over HTTP/2 streams, many at once on one
//! connection, which is what a fleet of agents sharing one client does against a provider that
//! offers HTTP/2.
//!
//! HTTP/1.1 stays the hand-written server of `server.rs` (it scripts every byte, torn chunks
//! included); a connection is handed here only when its first 24 bytes are the preface, which no
//! HTTP/1 request starts with. The framing of HTTP/2 is hyper's: a reply's pieces are sent as
//! DATA frames with its delays between them, a scripted close resets the stream, a stall keeps
//! it open without data and a hang never answers.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::Response;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::http::{Request, MAX_BODY};
use crate::reply::{Cut, Framing, Reply};
use crate::server::{answer, record_served, unix_seconds, Shared};

/// What an HTTP/2 connection starts with (RFC 9113, section 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Streams one connection may carry at once: enough for every agent of a fleet bench on one
/// connection (hyper's default, 200, would queue the rest behind them).
const MAX_STREAMS: u32 = 1 << 20;

/// The connection's receive window: room for thousands of request bodies at once. With the
/// default (1 MiB) the bodies of a fleet's requests share a window that they exhaust, the client
/// then sends each the sliver of window freed, and the HTTP/2 library counts that flood of small
/// DATA frames as abuse and closes the connection (`ENHANCE_YOUR_CALM`) under every stream.
const CONNECTION_WINDOW: u32 = 64 << 20;

/// Whether the client opened `stream` with the HTTP/2 preface. Only peeks, so an HTTP/1
/// request is still there for the HTTP/1 server to read.
pub(crate) async fn starts_with_preface(stream: &TcpStream) -> bool {
    let mut buf = [0u8; PREFACE.len()];
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(n) => n,
            Err(_) => return false,
        };
        if n == 0 || buf[..n] != PREFACE[..n] {
            return false;
        }
        if n == PREFACE.len() {
            return true;
        }
        // Part of the preface so far: peek again once more may have arrived (peeking returns
        // at once while any byte is waiting, so wait a little rather than spin).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Serves one h2c connection until the client closes it.
pub(crate) async fn serve(stream: &mut TcpStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |request| respond(request, Arc::clone(&shared)));
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .max_concurrent_streams(MAX_STREAMS)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// A response body fed by the task that plays the reply's script.
struct ScriptedBody(mpsc::Receiver<io::Result<Bytes>>);

impl Body for ScriptedBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        self.0
            .poll_recv(cx)
            .map(|piece| piece.map(|piece| piece.map(Frame::data)))
    }
}

/// Reads a request's body whole (refusing one over the HTTP/1 server's limit too).
async fn read_body(mut body: Incoming) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        if let Ok(data) = frame.map_err(io::Error::other)?.into_data() {
            bytes.extend_from_slice(&data);
            if bytes.len() > MAX_BODY {
                return Err(io::Error::other(format!("request body over {MAX_BODY} bytes")));
            }
        }
    }
    Ok(bytes)
}

/// Answers one stream as the HTTP/1 server would answer the same request.
async fn respond(request: hyper::Request<Incoming>, shared: Arc<Shared>) -> io::Result<Response<ScriptedBody>> {
    let (parts, body) = request.into_parts();
    let request = Request {
        method: parts.method.to_string(),
        target: parts
            .uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), ToString::to_string),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: read_body(body).await?,
    };
    let started = Instant::now();
    let read_at = unix_seconds();
    let (reply, key) = answer(&request, &shared);
    if reply.hang {
        std::future::pending::<()>().await;
    }
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        // Connection-specific headers are not allowed in HTTP/2 (RFC 9113, section 8.2.2).
        if !["content-length", "transfer-encoding", "connection", "keep-alive"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
        {
            response = response.header(name, value);
        }
    }
    if reply.framing == Framing::Length && reply.cut == Cut::None {
        response = response.header("content-length", reply.wire_body().len());
    }
    // One piece in flight: the time recorded for the reply is when its last piece left.
    let (pieces, body) = mpsc::channel(1);
    tokio::spawn(play(reply, pieces, shared, key, started, read_at));
    response.body(ScriptedBody(body)).map_err(io::Error::other)
}

/// Sends a reply's pieces with its delays, then its scripted ending.
async fn play(
    reply: Reply,
    pieces: mpsc::Sender<io::Result<Bytes>>,
    shared: Arc<Shared>,
    key: Option<String>,
    started: Instant,
    read_at: f64,
) {
    let body = reply.wire_body();
    let limit = match reply.cut {
        Cut::Stall(n) | Cut::Close(n) => n.min(body.len()),
        Cut::None | Cut::End(_) => body.len(),
    };
    for (index, piece) in reply.chunking.pieces(&body[..limit]).into_iter().enumerate() {
        let delay = reply.delay_before(index);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if pieces.send(Ok(Bytes::copy_from_slice(piece))).await.is_err() {
            return;
        }
    }
    match reply.cut {
        Cut::Stall(_) => pieces.closed().await,
        Cut::Close(_) => {
            let _ = pieces.send(Err(io::Error::other("mock: scripted close"))).await;
        }
        Cut::None | Cut::End(_) => {}
    }
    if let Some(key) = key {
        record_served(&shared, key, started, read_at);
    }
}
