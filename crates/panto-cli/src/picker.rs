//! The `-r` picker: a numbered list of recent sessions to resume.

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
    let stderr = std::io::stderr();
    let terminal = stderr.is_terminal();
    let mut err = stderr.lock();
    for (n, row) in table(shown).iter().enumerate() {
        let _ = writeln!(err, "{:>3}. {}", n + 1, crate::safe::for_stream(row, terminal));
    }
    loop {
        let _ = write!(err, "resume which session? [1-{}, empty to give up]: ", shown.len());
        let _ = err.flush();
        let Some(line) = crate::terminal::read_line(None) else {
            return Err(Failure::usage("no session picked"));
        };
        let line = line.trim();
        if line.is_empty() {
            return Err(Failure::usage("no session picked"));
        }
        match line.parse::<usize>() {
            Ok(n) if (1..=shown.len()).contains(&n) => return Ok(shown[n - 1].id.clone()),
            _ => {
                let _ = writeln!(err, "please type a number from 1 to {}", shown.len());
            }
        }
    }
}
