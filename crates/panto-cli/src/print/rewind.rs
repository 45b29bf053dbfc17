//! `--rewind N [--rewind-files]` in print mode: the REPL's `/rewind N [--files]`
//! ([`crate::rewind`]) before the prompt runs, reported on stderr and, in stream-json, as a
//! `rewind` line.

use panto_core::Agent;
use serde_json::{json, Value};

use super::RewindRequest;
use crate::exit::Failure;
use crate::rewind::{self, Tone};
use crate::tools::Toolbox;

/// Rewinds `agent` as `request` says. Returns the stream-json `rewind` line. Notes go to
/// stderr: what was rewound and, with files, one line per file (a file left alone as an error
/// line, but the run goes on).
///
/// Errors: a number past the prompts there are is a usage error (exit 2) and writes nothing
/// (not even the closers of an interrupted turn, which the rewind itself would save first); a
/// store failure is exit 1.
pub async fn apply(agent: &mut Agent, toolbox: &Toolbox, request: RewindRequest) -> Result<Value, Failure> {
    let targets = rewind::targets(agent);
    let target = rewind::nth(&targets, request.prompts_back)
        .map_err(|e| Failure::usage(format!("--rewind {}: {e}", request.prompts_back)))?
        .clone();
    let rewound = rewind::rewind(agent, toolbox, &target, request.files)
        .await
        .map_err(Failure::runtime)?;
    crate::safe::eprint_line(&rewind::summary(&target, rewound.remaining));
    for file in rewound.files.iter().flatten() {
        match rewind::describe(file) {
            (Tone::Error, line) => crate::safe::eprint_line(&format!("warning: {line}")),
            (_, line) => crate::safe::eprint_line(&line),
        }
    }
    Ok(json!({
        "type": "rewind",
        "prompts_back": request.prompts_back,
        "to_entry": target.entry,
        "prompt": target.text,
        "messages": rewound.remaining,
        "files": rewound.files,
    }))
}
