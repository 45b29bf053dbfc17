//! `/rewind`, `/fork` and `/tree`: the session tree from the REPL. The rewind itself is
//! [`crate::rewind`], shared with print mode's `--rewind`.

use super::Repl;
use crate::rewind::{self, preview, Tone};

impl Repl<'_> {
    /// `/rewind [N] [--files]`: goes back to before the Nth last prompt, or, without N, to one
    /// picked from the earlier prompts (newest first, numbered by how far back they are). With
    /// `--files`, the files the built-in tools changed since are put back too.
    pub(super) fn rewind(&mut self, args: &str) {
        let (number, files) = rewind_args(args);
        if let Err(e) = self.rt.block_on(self.agent.flush()) {
            self.error(&format!("cannot save the session before rewinding: {e}"));
            return;
        }
        let targets = rewind::targets(&self.agent);
        if targets.is_empty() {
            self.note("no earlier prompt to rewind to");
            return;
        }
        let n = if number.is_empty() {
            let rows: Vec<String> = targets.iter().map(|t| preview(&t.text)).collect();
            match crate::picker::choose(&rows, "rewind to before which prompt?") {
                Some(i) => i + 1,
                None => {
                    self.dim(
                        "no prompt picked: nothing changed (/rewind N goes back to before prompt N, 1 being your last)",
                    );
                    return;
                }
            }
        } else {
            match number.parse::<usize>().ok().filter(|n| (1..=targets.len()).contains(n)) {
                Some(n) => n,
                None => {
                    self.error(&format!(
                        "/rewind takes a number from 1 to {} (how many prompts back) and --files, not {args:?}",
                        targets.len()
                    ));
                    return;
                }
            }
        };
        let target = targets[n - 1].clone();
        let rewound = match self
            .rt
            .block_on(rewind::rewind(&mut self.agent, &self.toolbox, &target, files))
        {
            Ok(rewound) => rewound,
            Err(e) => {
                self.error(&e);
                return;
            }
        };
        self.note(&format!(
            "{}, and your next prompt starts a new branch (the rewound prompt is in the input, to edit and send or clear with Ctrl-U)",
            rewind::summary(&target, rewound.remaining)
        ));
        self.typed = target.text.clone();
        match rewound.files {
            None => {}
            Some(report) if report.is_empty() => self.note("no file was changed by panto's tools since that prompt"),
            Some(report) => {
                for file in &report {
                    match rewind::describe(file) {
                        (Tone::Note, line) => self.note(&line),
                        (Tone::Dim, line) => self.dim(&line),
                        (Tone::Error, line) => self.error(&line),
                    }
                }
            }
        }
    }

    /// `/fork`: continues in a new session holding the conversation so far.
    pub(super) fn fork(&mut self) {
        if let Err(e) = self.rt.block_on(self.agent.flush()) {
            self.error(&format!("cannot save the session before forking: {e}"));
            return;
        }
        let from = self.agent.session_id().to_owned();
        // The end of the active branch is its tip, not the last message the model sees: after
        // a compaction that is the kept tail, and the summary comes after it.
        let tip = match self.rt.block_on(self.agent.session().tree()) {
            Ok(tree) => tree.tip,
            Err(e) => {
                self.error(&format!("cannot read the session's tree: {e}"));
                return;
            }
        };
        let Some(at) = tip else {
            self.note("nothing to fork yet: the session holds no answered prompt");
            return;
        };
        match self.rt.block_on(self.agent.fork(&at)) {
            Ok(id) => {
                let [from, id] = self.short_ids([from.as_str(), id.as_str()]);
                self.note(&format!(
                    "forked session {from} into {id}; you are now in the fork (resume the original with /resume {from})"
                ))
            }
            Err(e) => self.error(&format!("cannot fork: {e}")),
        }
    }

    /// `/tree`: every prompt and answer of every branch, indented by depth, the active path
    /// marked with `*`.
    pub(super) fn tree(&mut self) {
        let tree = match self.rt.block_on(self.agent.session().tree()) {
            Ok(tree) => tree,
            Err(e) => {
                self.error(&format!("cannot read the session's tree: {e}"));
                return;
            }
        };
        for line in crate::sessions::tree_lines(&tree) {
            self.note(&line);
        }
    }
}

/// The number and whether `--files` was given, from `/rewind`'s arguments in any order.
fn rewind_args(args: &str) -> (String, bool) {
    let mut files = false;
    let mut rest = Vec::new();
    for word in args.split_whitespace() {
        if word == "--files" {
            files = true;
        } else {
            rest.push(word);
        }
    }
    (rest.join(" "), files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewind_takes_files_before_or_after_the_number() {
        assert_eq!(rewind_args("2 --files"), ("2".to_owned(), true));
        assert_eq!(rewind_args("--files 2"), ("2".to_owned(), true));
        assert_eq!(rewind_args("--files"), (String::new(), true));
        assert_eq!(rewind_args(" 3 "), ("3".to_owned(), false));
    }
}
