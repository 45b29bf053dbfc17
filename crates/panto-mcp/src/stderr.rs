//! A stdio server's standard error: appended to the log file the embedder chose, and its last
//! few kilobytes kept in memory for the warnings and errors that name the server. Never the
//! terminal: a library does not print.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// How much of the end of standard error is kept for messages.
const TAIL_BYTES: usize = 2048;

/// The end of what a server wrote to its standard error (across restarts).
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    bytes: Mutex<Vec<u8>>,
}

impl StderrTail {
    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        bytes.extend_from_slice(chunk);
        if bytes.len() > TAIL_BYTES {
            let cut = bytes.len() - TAIL_BYTES;
            bytes.drain(..cut);
        }
    }

    /// The tail as text: whole lines only when it was cut, lossily decoded.
    pub fn text(&self) -> String {
        let bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&bytes);
        let text = if bytes.len() >= TAIL_BYTES {
            text.split_once('\n').map(|(_, rest)| rest).unwrap_or(&text)
        } else {
            &text
        };
        text.trim_end().to_owned()
    }
}

/// Copies `stderr` into `log` (when set) and `tail` until the server closes it. A log file that
/// fails a write is given up on; the tail is still kept.
pub(crate) fn pump(
    mut stderr: impl AsyncRead + Unpin + Send + 'static,
    log: Option<tokio::fs::File>,
    tail: Arc<StderrTail>,
) {
    tokio::spawn(async move {
        let mut file = log;
        let mut buf = vec![0u8; 8192];
        loop {
            let n = match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            tail.push(&buf[..n]);
            if let Some(f) = file.as_mut() {
                if f.write_all(&buf[..n]).await.is_err() {
                    file = None;
                }
            }
        }
        if let Some(mut f) = file {
            let _ = f.flush().await;
        }
    });
}

/// Opens (creating it and its directory) the log file a server's standard error is appended to.
pub(crate) async fn open_log(path: &Path) -> std::io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    tokio::fs::OpenOptions::new().create(true).append(true).open(path).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_whole_last_lines() {
        let tail = StderrTail::default();
        for i in 0..1000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert!(text.ends_with("line 999"), "{text}");
        assert!(text.starts_with("line "), "{text}");
        assert!(text.len() <= TAIL_BYTES);
    }
}
