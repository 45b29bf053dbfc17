//! Rewinding a session to before an earlier prompt, optionally with the files the built-in tools
//! changed since: the one implementation behind the REPL's `/rewind N [--files]` and print mode's
//! `--rewind N [--rewind-files]`.

use panto_core::Agent;
use panto_tools::files::{FileOutcome, RestoredFile};

use crate::tools::Toolbox;

/// How many characters of a prompt a rewind line shows.
pub const PREVIEW: usize = 60;

/// The first line of `text`, at most [`PREVIEW`] characters.
pub fn preview(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(PREVIEW) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

/// "rewound to before “PROMPT”; N messages remain": the line both ways of rewinding print first.
pub fn summary(target: &Target, remaining: usize) -> String {
    let remain = if remaining == 1 {
        "1 message remains".to_owned()
    } else {
        format!("{remaining} messages remain")
    };
    format!("rewound to before “{}”; {remain}", preview(&target.text))
}

/// One prompt a rewind can go back to.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its entry id.
    pub entry: String,
    /// Its text as typed (without the text attached to it).
    pub text: String,
}

/// The stored prompts of the agent's active branch a rewind can go back to, newest first:
/// number `n` (1-based) of a rewind is `targets[n - 1]`. A prompt the agent holds unstored has
/// no id yet: the REPL saves first ([`Agent::flush`]); print mode, fresh from a resume, has
/// nothing unstored that is a prompt, and saves nothing before the number is known to be good.
pub fn targets(agent: &Agent) -> Vec<Target> {
    agent
        .prompts()
        .into_iter()
        .rev()
        .map(|(id, i)| Target {
            entry: id.to_owned(),
            text: agent.conversation().messages[i].prompt_text().to_owned(),
        })
        .collect()
}

/// The target of a rewind `n` prompts back, or an error saying which numbers there are.
pub fn nth(targets: &[Target], n: usize) -> Result<&Target, String> {
    match targets.len() {
        0 => Err("the session holds no earlier prompt on its active branch to rewind to".to_owned()),
        count if (1..=count).contains(&n) => Ok(&targets[n - 1]),
        count => Err(format!(
            "a rewind takes a number from 1 to {count} (how many prompts back), not {n}"
        )),
    }
}

/// What a rewind did.
#[derive(Debug, Clone)]
pub struct Rewound {
    /// How many messages the conversation holds after it.
    pub remaining: usize,
    /// With files: what happened to each file changed since, in the order they were first
    /// changed.
    pub files: Option<Vec<RestoredFile>>,
}

/// Rewinds `agent` to before `target` ([`Agent::rewind`]); with `files`, puts back the files
/// the built-in tools changed since ([`Toolbox::rewind_with_files`]).
///
/// Errors: the agent's or the store's, as a sentence; then nothing was rewound (with `files`,
/// the files may already be put back: they go first and the branch switch last, so the same
/// rewind again completes it).
pub async fn rewind(agent: &mut Agent, toolbox: &Toolbox, target: &Target, files: bool) -> Result<Rewound, String> {
    let failed = |e: panto_core::Error| format!("cannot rewind: {e}");
    let files = if files {
        Some(toolbox.rewind_with_files(agent, &target.entry).await.map_err(failed)?)
    } else {
        agent.rewind(&target.entry).await.map_err(failed)?;
        None
    };
    Ok(Rewound {
        remaining: agent.conversation().messages.len(),
        files,
    })
}

/// How a file's outcome is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Done as asked.
    Note,
    /// Nothing needed doing.
    Dim,
    /// Left alone: the user must look.
    Error,
}

/// One line saying what a rewind with files did to `file`.
pub fn describe(file: &RestoredFile) -> (Tone, String) {
    let path = &file.path;
    match &file.outcome {
        FileOutcome::Restored => (Tone::Note, format!("restored {path}")),
        FileOutcome::Removed => (Tone::Note, format!("removed {path} (it did not exist then)")),
        FileOutcome::Unchanged => (Tone::Dim, format!("{path} already holds what it held then")),
        FileOutcome::ChangedOutside => (
            Tone::Error,
            format!("left {path} alone: it changed outside panto since panto last wrote it (not overwritten)"),
        ),
        FileOutcome::Failed { error } => (Tone::Error, format!("could not restore {path}: {error}")),
        other => (Tone::Dim, format!("{path}: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_what_remains_in_words() {
        let target = Target {
            entry: "id".to_owned(),
            text: "fix the notes\nand more".to_owned(),
        };
        assert_eq!(
            summary(&target, 1),
            "rewound to before “fix the notes”; 1 message remains"
        );
        assert_eq!(
            summary(&target, 0),
            "rewound to before “fix the notes”; 0 messages remain"
        );
        assert_eq!(
            summary(&target, 7),
            "rewound to before “fix the notes”; 7 messages remain"
        );
    }

    #[test]
    fn a_rewind_number_is_checked_against_the_prompts() {
        let targets: Vec<Target> = ["newest", "oldest"]
            .iter()
            .map(|t| Target {
                entry: format!("id-{t}"),
                text: (*t).to_owned(),
            })
            .collect();
        assert_eq!(nth(&targets, 1).unwrap().text, "newest");
        assert_eq!(nth(&targets, 2).unwrap().text, "oldest");
        assert!(nth(&targets, 3).unwrap_err().contains("from 1 to 2"));
        assert!(nth(&targets, 0).unwrap_err().contains("not 0"));
        assert!(nth(&[], 1).unwrap_err().contains("no earlier prompt"));
    }

    #[test]
    fn previews_keep_the_first_line_and_cut_long_ones() {
        assert_eq!(preview("one\ntwo"), "one");
        let long = "x".repeat(100);
        assert_eq!(preview(&long).chars().count(), PREVIEW + 1);
    }
}
