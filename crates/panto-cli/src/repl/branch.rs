//! `/rewind`, `/fork` and `/tree`: the session tree from the REPL.

use super::Repl;

/// How many characters of a prompt a `/rewind` or `/tree` line shows.
const PREVIEW: usize = 60;

/// The first line of `text`, at most [`PREVIEW`] characters.
fn preview(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(PREVIEW) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

impl Repl<'_> {
    /// `/rewind`: lists the earlier prompts, newest first, numbered by how far back they are;
    /// `/rewind N` goes back to before the Nth last prompt.
    pub(super) fn rewind(&mut self, args: &str) {
        if let Err(e) = self.rt.block_on(self.agent.flush()) {
            self.error(&format!("cannot save the session before rewinding: {e}"));
            return;
        }
        let prompts: Vec<(String, String)> = self
            .agent
            .prompts()
            .into_iter()
            .rev()
            .map(|(id, i)| (id.to_owned(), self.agent.conversation().messages[i].text()))
            .collect();
        if prompts.is_empty() {
            self.note("no earlier prompt to rewind to");
            return;
        }
        if args.is_empty() {
            for (n, (_, text)) in prompts.iter().enumerate() {
                self.note(&format!("{:>3}. {}", n + 1, preview(text)));
            }
            self.dim("/rewind N goes back to before prompt N (1 is your last prompt); the later messages stay in the session's tree (/tree)");
            return;
        }
        let n = match args.parse::<usize>() {
            Ok(n) if (1..=prompts.len()).contains(&n) => n,
            _ => {
                self.error(&format!(
                    "/rewind takes a number from 1 to {} (how many prompts back), not {args:?}",
                    prompts.len()
                ));
                return;
            }
        };
        let (id, text) = &prompts[n - 1];
        match self.rt.block_on(self.agent.rewind(id)) {
            Ok(()) => {
                self.note(&format!(
                    "rewound to before “{}”; {} messages remain, and your next prompt starts a new branch",
                    preview(text),
                    self.agent.conversation().messages.len()
                ));
            }
            Err(e) => self.error(&format!("cannot rewind: {e}")),
        }
    }

    /// `/fork`: continues in a new session holding the conversation so far.
    pub(super) fn fork(&mut self) {
        if let Err(e) = self.rt.block_on(self.agent.flush()) {
            self.error(&format!("cannot save the session before forking: {e}"));
            return;
        }
        let from = self.agent.session_id().to_owned();
        let Some(at) = self.agent.message_ids().iter().rev().flatten().next().cloned() else {
            self.note("nothing to fork yet: the session holds no answered prompt");
            return;
        };
        match self.rt.block_on(self.agent.fork(&at)) {
            Ok(id) => self.note(&format!(
                "forked session {from} into {id}; you are now in the fork (resume the original with /resume {})",
                &from[..8.min(from.len())]
            )),
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
