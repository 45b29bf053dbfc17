//! The live tail of `bash`'s output: the last line the command printed, shown beside the
//! spinner while it runs (`⠋ running bash… 12s │ compiling foo`).
//!
//! [`LiveTail`] is the bash tool's progress hook (`panto_tools::BashProgress`); the spinner reads
//! [`current`] at each tick. The bytes are the command's, so untrusted: the line shown is decoded
//! leniently and neutralised like every tool byte, and the footer cuts it to the width. Only the
//! unfinished line and the last finished one are kept, each bounded, whatever the command prints.

use std::sync::Mutex;

use panto_tools::BashProgress;

use crate::safe;

/// The most bytes of one line kept (its end: a progress line grows at its end).
const LINE_BYTES: usize = 1024;

/// The lines kept.
#[derive(Debug)]
struct Tail {
    /// The line being printed: bytes since the last line end (LF or CR).
    partial: Vec<u8>,
    /// The last finished line that was not blank.
    last: Vec<u8>,
}

static TAIL: Mutex<Tail> = Mutex::new(Tail {
    partial: Vec::new(),
    last: Vec::new(),
});

fn tail() -> std::sync::MutexGuard<'static, Tail> {
    TAIL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps the last [`LINE_BYTES`] of `line`.
fn bound(line: &mut Vec<u8>) {
    if line.len() > LINE_BYTES {
        line.drain(..line.len() - LINE_BYTES);
    }
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        // A CR ends a line too: progress bars redraw themselves with it.
        for piece in chunk.split_inclusive(|&b| b == b'\n' || b == b'\r') {
            let ended = matches!(piece.last(), Some(b'\n' | b'\r'));
            let body = if ended { &piece[..piece.len() - 1] } else { piece };
            self.partial.extend_from_slice(body);
            bound(&mut self.partial);
            if ended {
                let line = std::mem::take(&mut self.partial);
                if !line.iter().all(u8::is_ascii_whitespace) {
                    self.last = line;
                }
            }
        }
    }

    /// The line to show: the unfinished one if it has anything, else the last finished one.
    fn shown(&self) -> Option<String> {
        let bytes = if self.partial.iter().all(u8::is_ascii_whitespace) {
            &self.last
        } else {
            &self.partial
        };
        // Tabs would move the cursor past what the footer measured.
        let text = String::from_utf8_lossy(bytes).replace('\t', " ");
        let text = safe::neutralise(text.trim()).into_owned();
        (!text.is_empty()).then_some(text)
    }
}

/// The bash tool's progress hook in the REPL: records the output's last line.
#[derive(Debug, Default)]
pub struct LiveTail;

impl BashProgress for LiveTail {
    fn output(&self, chunk: &[u8]) {
        tail().push(chunk);
    }
}

/// The line to show beside the spinner, neutralised, if bash printed one.
pub fn current() -> Option<String> {
    tail().shown()
}

/// Forgets the output (no bash runs any more).
pub fn clear() {
    let mut t = tail();
    t.partial.clear();
    t.last.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown_after(chunks: &[&[u8]]) -> Option<String> {
        let mut t = Tail {
            partial: Vec::new(),
            last: Vec::new(),
        };
        for c in chunks {
            t.push(c);
        }
        t.shown()
    }

    #[test]
    fn the_last_line_that_is_not_blank_is_shown_neutralised() {
        assert_eq!(shown_after(&[b"one\ntw", b"o\n\n"]).as_deref(), Some("two"));
        assert_eq!(shown_after(&[b"one\nhalf"]).as_deref(), Some("half"));
        assert_eq!(shown_after(&[b"10%\r20%\r"]).as_deref(), Some("20%"));
        assert_eq!(shown_after(&[b"\x1b[2Jred\x07\tx\n"]).as_deref(), Some("^[[2Jred^G x"));
        assert_eq!(shown_after(&[b"\n \n"]), None);
    }

    #[test]
    fn a_line_without_end_is_bounded() {
        let long = vec![b'x'; 100_000];
        let shown = shown_after(&[&long, b"end"]).unwrap();
        assert_eq!(shown.len(), LINE_BYTES);
        assert!(shown.ends_with("xend"));
    }
}
