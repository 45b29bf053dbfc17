//! Just enough HTTP/1.1, by hand, so that the server controls every byte it writes.
//!
//! Requests: a request line, headers, and a `Content-Length` body. Chunked request bodies are
//! refused with 411, since no client panto uses sends them. Responses: a status line, headers and
//! either a `Content-Length` body or a chunked one, with `Connection: close` unless the server
//! keeps connections alive ([`MockServer::set_keep_alive`](crate::MockServer::set_keep_alive)).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::reply::Framing;

/// The largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body accepted (images in a conversation make bodies big).
pub(crate) const MAX_BODY: usize = 256 * 1024 * 1024;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    /// The request target as sent, query included.
    pub target: String,
    /// Header names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The target without its query string.
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed the connection (or it failed) before a whole request arrived.
    Closed,
    /// The request is malformed; answer with this status and message.
    Bad(u16, String),
}

/// Reads one request from `stream`.
pub(crate) async fn read_request(stream: &mut TcpStream) -> Result<Request, ReadError> {
    let mut buf = Vec::with_capacity(8 * 1024);
    let head_end = loop {
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            break at;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Bad(
                431,
                format!("request head is larger than {MAX_HEAD} bytes"),
            ));
        }
        if read_more(stream, &mut buf).await? == 0 {
            return Err(ReadError::Closed);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400, format!("malformed request line {request_line:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad(505, format!("unsupported HTTP version {version:?}")));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad(400, format!("malformed header line {line:?}")));
        };
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(ReadError::Bad(400, format!("malformed header name {name:?}")));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |n: &'static str| headers.iter().filter(move |(k, _)| k == n).map(|(_, v)| v.as_str());
    if header("transfer-encoding").next().is_some() {
        return Err(ReadError::Bad(
            411,
            "the mock does not accept chunked request bodies; send Content-Length".to_owned(),
        ));
    }
    let mut lengths = header("content-length");
    let length = match (lengths.next(), lengths.next()) {
        (None, _) => 0,
        (Some(v), None) => v
            .parse::<usize>()
            .map_err(|_| ReadError::Bad(400, format!("invalid Content-Length {v:?}")))?,
        (Some(_), Some(_)) => return Err(ReadError::Bad(400, "more than one Content-Length header".to_owned())),
    };
    if length > MAX_BODY {
        return Err(ReadError::Bad(
            413,
            format!("request body of {length} bytes is over {MAX_BODY}"),
        ));
    }
    if header("expect").any(|v| v.eq_ignore_ascii_case("100-continue")) {
        stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .map_err(|_| ReadError::Closed)?;
    }
    let mut body = buf.split_off(head_end + 4);
    while body.len() < length {
        if read_more(stream, &mut body).await? == 0 {
            return Err(ReadError::Closed);
        }
    }
    body.truncate(length);
    Ok(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers,
        body,
    })
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<usize, ReadError> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk).await.map_err(|_| ReadError::Closed)?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The status line and headers of a response, ending with the blank line.
pub(crate) fn response_head(
    status: u16,
    headers: &[(String, String)],
    framing: Framing,
    body_len: usize,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        if !["content-length", "transfer-encoding", "connection"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
        {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    match framing {
        Framing::Chunked => head.push_str("transfer-encoding: chunked\r\n"),
        Framing::Length => head.push_str(&format!("content-length: {body_len}\r\n")),
    }
    head.push_str(if keep_alive {
        "connection: keep-alive\r\n\r\n"
    } else {
        "connection: close\r\n\r\n"
    });
    head.into_bytes()
}

/// One HTTP chunk holding `data` (which must not be empty: that would end the body).
pub(crate) fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The end of a chunked body.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        529 => "Site Overloaded",
        _ => "Status",
    }
}
