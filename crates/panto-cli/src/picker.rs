//! Pickers: a numbered list to choose from on the terminal; the `-r` picker of recent sessions
//! to resume uses it, and so does `/rewind` for the earlier prompts.

use std::io::{IsTerminal, Write};

use panto_core::SessionInfo;

use crate::exit::Failure;
use crate::sessions::{table, RECENT};

/// The `-r` picker: a numbered list of recent sessions on stderr, the choice read from stdin.
pub fn pick(infos: &[SessionInfo]) -> Result<String, Failure> {
    if infos.is_empty() {
        return Err(Failure::usage("no sessions to resume"));
    }
    if !crate::terminal::stdin_is_tty() {
        return Err(Failure::usage(
            "-r without an id needs a terminal to pick on; pass the session id (see `panto sessions`)",
        ));
    }
    let shown = &infos[..infos.len().min(RECENT)];
    let rows = table(shown);
    match choose(&rows, "resume which session?") {
        Some(n) => Ok(shown[n].id.clone()),
        None => Err(Failure::usage("no session picked")),
    }
}

/// A numbered list of `rows` on stderr and the choice read from the terminal: the index of the
/// row picked, or `None` when the user gives up (an empty line, end of input). `question` is
/// asked after the list, with the range of numbers. The rows are neutralised for the terminal.
pub fn choose(rows: &[String], question: &str) -> Option<usize> {
    if rows.is_empty() {
        return None;
    }
    let stderr = std::io::stderr();
    let terminal = stderr.is_terminal();
    let mut err = stderr.lock();
    for (n, row) in rows.iter().enumerate() {
        let _ = writeln!(err, "{:>3}. {}", n + 1, crate::safe::for_stream(row, terminal));
    }
    loop {
        let _ = write!(err, "{question} [1-{}, empty to give up]: ", rows.len());
        let _ = err.flush();
        let line = crate::terminal::read_line(None)?;
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        match line.parse::<usize>() {
            Ok(n) if (1..=rows.len()).contains(&n) => return Some(n - 1),
            _ => {
                let _ = writeln!(err, "please type a number from 1 to {}", rows.len());
            }
        }
    }
}
