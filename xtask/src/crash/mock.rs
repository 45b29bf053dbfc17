//! The `panto-mock` process the trials run against, and a minimal HTTP client for its control
//! endpoints (`/__mock/push`, `/__mock/requests`, `/__mock/reset`).
//!
//! The client is a few lines over `TcpStream` because the mock answers every request on its own
//! connection with `connection: close` and a `content-length`, and xtask needs nothing more.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::mock::MockProcess;

/// A running `panto-mock`. It serves until its stdin closes, so it dies with the harness even
/// when the harness is killed; dropping this closes stdin and, unless it has already exited,
/// kills it at once (no grace period) and reaps it.
pub struct Mock {
    process: MockProcess,
}

impl Mock {
    /// Starts `binary` and reads the `PORT=<n>` handshake line.
    pub fn start(binary: &Path) -> Result<Mock> {
        let process = MockProcess::start(binary, &[])?.with_stop_grace(Duration::ZERO);
        Ok(Mock { process })
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.process.port()
    }

    /// Forgets queued replies and recorded requests.
    pub fn reset(&self) -> Result<()> {
        self.call("POST", "/__mock/reset", Some(&Value::Null)).map(drop)
    }

    /// Queues replies (a JSON array in the `panto_testkit::spec` format).
    pub fn push(&self, replies: &Value) -> Result<()> {
        self.call("POST", "/__mock/push", Some(replies)).map(drop)
    }

    /// Every provider request recorded since the last reset, as the mock reports them.
    pub fn requests(&self) -> Result<Vec<Value>> {
        match self.call("GET", "/__mock/requests", None)? {
            Value::Array(items) => Ok(items),
            other => bail!("GET /__mock/requests answered {other}, not an array"),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let port = self.port();
        let what = || format!("{method} {path} on panto-mock (port {port})");
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream = TcpStream::connect(("127.0.0.1", port)).with_context(what)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .with_context(what)?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).with_context(what)?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).with_context(what)?;
        let (status, body) = parse_response(&response).map_err(|e| anyhow!("{}: {e}", what()))?;
        let value: Value =
            serde_json::from_slice(body).map_err(|e| anyhow!("{}: the answer is not JSON: {e}", what()))?;
        if !(200..300).contains(&status) {
            bail!("{} answered {status}: {value}", what());
        }
        Ok(value)
    }
}

/// The status and body of an HTTP/1.1 response framed by `content-length` (or by the end of
/// the connection).
fn parse_response(bytes: &[u8]) -> Result<(u16, &[u8]), String> {
    let head_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the response has no end of headers")?;
    let head = std::str::from_utf8(&bytes[..head_end]).map_err(|_| "the response head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    let body = &bytes[head_end + 4..];
    let length = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())
            .flatten()
    });
    match length {
        Some(n) if n <= body.len() => Ok((status, &body[..n])),
        Some(n) => Err(format!("the body has {} of its {n} bytes", body.len())),
        None => Ok((status, body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_split_by_content_length() {
        let r = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 2\r\n\r\n[]junk";
        assert_eq!(parse_response(r).unwrap(), (200, &b"[]"[..]));
        let r = b"HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n{}";
        assert_eq!(parse_response(r).unwrap(), (404, &b"{}"[..]));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}")
            .unwrap_err()
            .contains("2 of its 9"));
        assert!(parse_response(b"garbage").is_err());
    }
}
