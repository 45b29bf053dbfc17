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
    /// How many [`pump`]s still read a server's standard error.
    open: std::sync::atomic::AtomicUsize,
    /// Woken when a pump reaches the end of its pipe.
    closed: tokio::sync::Notify,
}

impl StderrTail {
    /// Waits until every pipe being read has reached its end (a server that exited has had its
    /// last words read), for at most `limit`: a pipe a server's own child still holds open may
    /// never end.
    pub(crate) async fn settled(&self, limit: std::time::Duration) {
        use std::sync::atomic::Ordering;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // Registered before the count is read, so a pump that ends in between still wakes it.
            let closed = self.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            if self.open.load(Ordering::SeqCst) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, closed).await.is_err() {
                return;
            }
        }
    }

    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        bytes.extend_from_slice(chunk);
        if bytes.len() > TAIL_BYTES {
            let cut = bytes.len() - TAIL_BYTES;
            bytes.drain(..cut);
        }
    }

    /// The tail as text: whole lines only when it was cut, lossily decoded.
    pub(crate) fn text(&self) -> String {
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
    tail.open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
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
        tail.open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        tail.closed.notify_waiters();
    });
}

/// Opens (creating it and its directory) the log file a server's standard error is appended to.
/// Opens `path` for appending as panto's own log is opened: a missing directory is created
/// `0700`, the file `0600` (tightened if it was wider), never through a symbolic link planted in
/// its place, and only a regular file. A server's stderr can hold whatever it prints (tokens in
/// a traceback), so other users must not read it.
pub(crate) async fn open_log(path: &Path) -> std::io::Result<tokio::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .await?;
    let meta = file.metadata().await?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600)).await?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_log_is_private_and_never_opened_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let log = dir.path().join("mcp/server.log");
        open_log(&log).await.unwrap();
        assert_eq!(mode(&log), 0o600);
        assert_eq!(mode(log.parent().unwrap()), 0o700);

        // A log left world-readable is tightened.
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
        open_log(&log).await.unwrap();
        assert_eq!(mode(&log), 0o600);

        // A link planted in the log's place is not followed.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let planted = dir.path().join("mcp/planted.log");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(open_log(&planted).await.is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");

        // Nor is a FIFO opened (it would block the server's start).
        let fifo = dir.path().join("mcp/fifo.log");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(open_log(&fifo).await.is_err());
    }

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
