//! The session the REPL works in: `/sessions`, `/resume` and `/new` (switching), and the
//! resume hint on the way out.

use super::{Repl, Totals};
use crate::config::Selection;
use crate::sessions::{by_directory, of_dir, others_line, short_ids, table, Line, StoredIds, RECENT};
use crate::setup::{self, SessionChoice};

impl Repl<'_> {
    /// On the way out: how to come back to this session (`panto -r ID`), with the shortest id
    /// prefix (8 characters at least) that no other stored session shares.
    pub(super) fn resume_hint(&self) {
        if !self.saving || self.agent.conversation().messages.is_empty() {
            return;
        }
        let short = self.short_id(self.agent.session_id());
        self.dim(&format!("resume this session with: panto -r {short}"));
    }

    /// Session `id` as panto prints it: the shortest prefix, 8 characters at least, that no other
    /// stored session shares now (UUIDv7 ids made within a minute share their first 8).
    pub(super) fn short_id(&self, id: &str) -> String {
        let [short] = self.short_ids([id]);
        short
    }

    /// [`Repl::short_id`] of each of `ids`. Only the stored ids sharing an id's first 8
    /// characters can lengthen its prefix, so those are all the store is asked for (a file
    /// store reads its directory, not every session: the start banner prints one).
    pub(super) fn short_ids<const N: usize>(&self, ids: [&str; N]) -> [String; N] {
        ids.map(|id| {
            let start: String = id.chars().take(8).collect();
            let others = self
                .rt
                .block_on(self.store.store.ids_with_prefix(&start))
                .unwrap_or_default();
            crate::sessions::unique_prefix(id, others.iter().map(String::as_str))
        })
    }

    /// `/sessions`: this directory's recent sessions, the current one marked, and a line
    /// saying how many other directories' sessions were left out; with `all`, the recent
    /// sessions of every directory under their directory.
    pub(super) fn sessions(&mut self, all: bool) {
        let infos = match self.rt.block_on(self.store.store.list()) {
            Ok(infos) if infos.is_empty() => return self.note("no sessions yet"),
            Ok(infos) => infos,
            Err(e) => return self.error(&format!("cannot list sessions: {e}")),
        };
        let stored = StoredIds::of(&infos);
        let current = self.agent.session_id().to_owned();
        let mark = |info: &panto_core::SessionInfo| if info.id == current { "*" } else { " " };
        // A row a line: the last prompt's preview is cut to the terminal.
        let columns = self.screen.columns();
        if all {
            let shown = &infos[..infos.len().min(RECENT)];
            for line in by_directory(shown, &stored, &self.cwd) {
                match line {
                    Line::Directory(dir) => self.dim(&crate::render::wrap::cut(&dir, columns)),
                    Line::Session(index, row) => self.note(&crate::render::wrap::cut(
                        &format!("{} {row}", mark(&shown[index])),
                        columns,
                    )),
                }
            }
            self.recent_ids.set(short_ids(shown, &stored));
            return;
        }
        let (here, elsewhere) = of_dir(infos, &self.cwd);
        let shown = &here[..here.len().min(RECENT)];
        if shown.is_empty() {
            self.note(&format!("no sessions started in {}", self.cwd.display()));
        }
        for (info, row) in shown.iter().zip(table(shown, &stored)) {
            self.note(&crate::render::wrap::cut(&format!("{} {row}", mark(info)), columns));
        }
        if let Some(line) = others_line(elsewhere) {
            self.dim(&line);
        }
        self.recent_ids.set(short_ids(shown, &stored));
    }

    /// Switches to another session: resumed (with its model pre-selected) or new (keeping
    /// `keep`).
    pub(super) fn switch(&mut self, choice: SessionChoice, keep: Option<Selection>) {
        let model = match keep {
            Some(selection) => setup::ModelChoice::Keep(Box::new(selection)),
            None => setup::ModelChoice::Choose(None),
        };
        let found = match self.rt.block_on(setup::find(&self.store, &choice)) {
            Ok(found) => found,
            Err(e) => return self.error(&e.message),
        };
        if found.existing() && found.session_id() == self.agent.session_id() {
            // The session this agent works in: it stays (a second agent could not write the
            // session while this one lives), with its system prompt brought up to date.
            match self
                .rt
                .block_on(setup::refresh(&self.settings, &mut self.agent, &self.toolbox))
            {
                Ok(notes) => self.banner(true, &notes),
                Err(e) => self.error(&e.message),
            }
            return;
        }
        let opened = self.rt.block_on(setup::open_found(
            &self.settings,
            found,
            model,
            &self.toolbox,
            &self.mcp,
        ));
        match opened {
            Ok(ready) => {
                self.agent = ready.agent;
                self.selection = ready.selection;
                self.totals = Totals::new();
                // `!` output was kept for the next prompt of the conversation it was run in.
                let dropped = std::mem::take(&mut self.shell_context).len();
                self.banner(ready.resumed, &ready.notes);
                if dropped > 0 {
                    let what = if dropped == 1 {
                        "one ! command".to_owned()
                    } else {
                        format!("{dropped} ! commands")
                    };
                    self.dim(&format!(
                        "the output of {what}, kept for the next prompt, was dropped with the last session"
                    ));
                }
            }
            Err(e) => self.error(&e.message),
        }
    }
}
