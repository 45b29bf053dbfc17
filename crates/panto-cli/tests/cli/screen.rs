//! A terminal for the tests: `panto` runs on a pseudo-terminal, everything it writes is fed to a
//! terminal emulator (vt100), and tests assert on the rendered screen, what a user would see,
//! and on what the terminal was asked to do besides drawing (set the window title, write the
//! clipboard, ring the bell). Asserting on bytes would miss what matters: an escape sequence that
//! redraws a line shows up as harmless bytes and a misleading screen.
//!
//! Blocking, like rexpect: a conversation runs on a blocking thread (see `support::blocking`) while
//! the mock server serves on the test's runtime.

use std::fs::File;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rexpect::process::PtyProcess;

use super::support::{panto_bin, Home};

/// How long a wait for the screen gives up after: generous, as the machine may be busy; a test
/// that passes never waits this long.
const PATIENCE: Duration = Duration::from_secs(30);

/// Lines kept above the visible screen, for [`Terminal::transcript`].
const SCROLLBACK: usize = 10_000;

/// What the program asked the terminal to do besides drawing text.
#[derive(Debug, Default, Clone)]
pub struct Requests {
    /// Window titles set (OSC 0 and 2).
    pub titles: Vec<String>,
    /// Icon names set (OSC 0 and 1).
    pub icon_names: Vec<String>,
    /// Clipboard writes (OSC 52), their base64 data.
    pub clipboard: Vec<String>,
    /// Bells rung (BEL).
    pub bells: usize,
    /// Terminal resizes asked for (`CSI 8 ; rows ; cols t`).
    pub resizes: Vec<(u16, u16)>,
}

impl vt100::Callbacks for Requests {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.bells += 1;
    }

    fn resize(&mut self, _: &mut vt100::Screen, request: (u16, u16)) {
        self.resizes.push(request);
    }

    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.icon_names.push(String::from_utf8_lossy(name).into_owned());
    }

    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.titles.push(String::from_utf8_lossy(title).into_owned());
    }

    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _ty: &[u8], data: &[u8]) {
        self.clipboard.push(String::from_utf8_lossy(data).into_owned());
    }
}

impl Requests {
    /// Asserts that nothing but text and colour reached the terminal: no title, no icon name,
    /// no clipboard write, no bell, no resize.
    pub fn assert_none(&self) {
        assert!(
            self.titles.is_empty()
                && self.icon_names.is_empty()
                && self.clipboard.is_empty()
                && self.bells == 0
                && self.resizes.is_empty(),
            "the terminal was driven: {self:?}"
        );
    }
}

/// What the reader thread shares with the test.
struct Shared {
    parser: vt100::Parser<Requests>,
    /// Every byte read, for failure messages.
    bytes: Vec<u8>,
    /// The program closed the terminal (it exited).
    closed: bool,
}

/// `panto` on a pseudo-terminal of a fixed size, rendered by a terminal emulator.
pub struct Terminal {
    process: PtyProcess,
    input: File,
    shared: Arc<Mutex<Shared>>,
}

impl Terminal {
    /// Starts `panto args` in `home` on an 80×40 terminal, with colour (as a user would have it).
    pub fn start(home: &Home, args: &[&str]) -> Terminal {
        Terminal::start_sized(home, args, 40, 80)
    }

    /// Starts `panto args` on a terminal of `rows` × `cols`.
    pub fn start_sized(home: &Home, args: &[&str], rows: u16, cols: u16) -> Terminal {
        Terminal::start_with_env(home, args, rows, cols, &[])
    }

    /// Starts `panto args` on a terminal of `rows` × `cols`, with `env` set last (so it may
    /// override `TERM`).
    pub fn start_with_env(home: &Home, args: &[&str], rows: u16, cols: u16, env: &[(&str, &str)]) -> Terminal {
        // The size is set on the terminal itself, so what panto reads back is what the emulator
        // renders (rexpect's terminal starts at 0×0). `stty` runs on the same terminal first.
        let mut cmd = home.command_of("sh");
        cmd.arg("-c")
            .arg("stty rows \"$1\" cols \"$2\" && shift 2 && exec \"$@\"")
            .arg("sh")
            .arg(rows.to_string())
            .arg(cols.to_string())
            .arg(panto_bin())
            .args(args)
            .env("TERM", "xterm-256color");
        for (name, value) in env {
            cmd.env(name, value);
        }
        Terminal::start_command(cmd, rows, cols)
    }

    /// Starts `cmd` (which runs `panto` on the terminal it is given, after setting its size to
    /// `rows` × `cols` with `stty`) on a terminal of that size.
    pub fn start_command(cmd: std::process::Command, rows: u16, cols: u16) -> Terminal {
        let mut process = PtyProcess::new(cmd).expect("panto starts on a pty");
        process.set_kill_timeout(Some(2_000));
        let mut output = process.get_file_handle().expect("the pty");
        let input = process.get_file_handle().expect("the pty");
        let parser = vt100::Parser::new_with_callbacks(
            NonZeroU16::new(rows).expect("rows"),
            NonZeroU16::new(cols).expect("cols"),
            SCROLLBACK,
            Requests::default(),
        );
        let shared = Arc::new(Mutex::new(Shared {
            parser,
            bytes: Vec::new(),
            closed: false,
        }));
        let feed = shared.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                // A read error (EIO) is how a pty says the other side closed.
                let n = output.read(&mut buf).unwrap_or(0);
                let mut s = feed.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    s.closed = true;
                    return;
                }
                s.parser.process(&buf[..n]);
                s.bytes.extend_from_slice(&buf[..n]);
            }
        });
        Terminal { process, input, shared }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the screen shows now (the visible rows; wrapped rows joined as the terminal wrapped
    /// them).
    pub fn contents(&self) -> String {
        self.lock().parser.screen().contents()
    }

    /// The visible cells drawn in a colour or a style (bold, dim, italic, underline, reverse),
    /// as `(row, column, text)`.
    pub fn styled_cells(&self) -> Vec<(u16, u16, String)> {
        let s = self.lock();
        let screen = s.parser.screen();
        let (rows, cols) = screen.size();
        let mut styled = Vec::new();
        for row in 0..rows.get() {
            for col in 0..cols.get() {
                let Some(cell) = screen.cell(row, col) else { continue };
                if cell.fgcolor() != vt100::Color::Default
                    || cell.bgcolor() != vt100::Color::Default
                    || cell.bold()
                    || cell.dim()
                    || cell.italic()
                    || cell.underline()
                    || cell.inverse()
                {
                    styled.push((row, col, cell.contents().to_owned()));
                }
            }
        }
        styled
    }

    /// What the program asked of the terminal besides drawing, so far.
    pub fn requests(&self) -> Requests {
        self.lock().parser.callbacks().clone()
    }

    /// Waits until `needle` has been shown (it may have scrolled up since); returns the
    /// transcript. Panics with the screen (and the raw bytes) when it never is.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("{needle:?} on screen"), |shown| shown.contains(needle))
    }

    /// Waits until `ready` holds for the transcript; returns it.
    pub fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (shown, closed) = {
                let mut s = self.lock();
                let closed = s.closed;
                (transcript(s.parser.screen_mut()), closed)
            };
            if ready(&shown) {
                return shown;
            }
            if closed || Instant::now() > deadline {
                let bytes = String::from_utf8_lossy(&self.lock().bytes).into_owned();
                panic!(
                    "waited for {what}{}; shown:\n{shown}\n--- bytes: {bytes:?}",
                    if closed { ", but panto closed the terminal" } else { "" }
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the REPL waits for input: the cursor right after a `> ` prompt with nothing
    /// typed, on the last row drawn. Returns the visible screen.
    pub fn wait_for_prompt(&self) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (at_prompt, screen, closed) = {
                let s = self.lock();
                let screen = s.parser.screen();
                let (row, col) = screen.cursor_position();
                let (_, cols) = screen.size();
                let rows: Vec<String> = screen.rows(0, cols.get()).collect();
                let line = rows.get(usize::from(row)).map_or("", |r| r.trim_end());
                let below_blank = rows.iter().skip(usize::from(row) + 1).all(|r| r.trim().is_empty());
                (line == ">" && col == 2 && below_blank, screen.contents(), s.closed)
            };
            if at_prompt {
                return screen;
            }
            if closed || Instant::now() > deadline {
                panic!("waited for the prompt; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `text` (no line end).
    pub fn send(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).expect("typing at the pty");
        self.input.flush().expect("typing at the pty");
    }

    /// Types `line` and Enter.
    pub fn send_line(&mut self, line: &str) {
        self.send(&format!("{line}\r"));
    }

    /// Waits for the program to close the terminal and exit; returns what it left.
    pub fn wait_exit(self) -> Exited {
        let shown = self.wait_until("panto to exit", |_| false_unless_closed(&self.shared));
        let code = match self.process.wait() {
            Ok(rexpect::process::WaitStatus::Exited(_, code)) => Some(code),
            _ => None,
        };
        Exited {
            code,
            shown,
            requests: self.requests(),
        }
    }
}

/// A program that exited, and what it left on the terminal.
#[derive(Debug)]
pub struct Exited {
    /// The exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// Everything shown (`Terminal::wait_for`'s transcript).
    pub shown: String,
    /// What it asked of the terminal besides drawing.
    pub requests: Requests,
}

fn false_unless_closed(shared: &Arc<Mutex<Shared>>) -> bool {
    shared.lock().unwrap_or_else(|e| e.into_inner()).closed
}

/// The scrollback and the visible rows of `screen`, wrapped rows joined. Pages through the
/// scrollback (vt100 shows it a screenful at a time) and leaves the view at the bottom.
fn transcript(screen: &mut vt100::Screen) -> String {
    let (height, cols) = screen.size();
    let (height, cols) = (usize::from(height.get()), cols.get());
    screen.set_scrollback(SCROLLBACK);
    let above = screen.scrollback();
    let mut out = String::new();
    // The absolute index (0 = the oldest row kept) of the next row wanted.
    let mut next = 0;
    while next < above + height {
        screen.set_scrollback(above.saturating_sub(next));
        let first = above - screen.scrollback();
        let rows: Vec<String> = screen.rows(0, cols).collect();
        for (i, row) in rows.iter().enumerate() {
            if first + i < next {
                continue;
            }
            let wrapped = u16::try_from(i).is_ok_and(|i| screen.row_wrapped(i));
            if wrapped {
                out.push_str(row);
            } else {
                out.push_str(row.trim_end());
                out.push('\n');
            }
        }
        next = first + height;
    }
    screen.set_scrollback(0);
    out
}
