//! `/cost` and the context's size as `/cost`, the status line and `/compact` show it.

use super::Repl;
use crate::cost::{cache_line, summary_line, thousands};

impl Repl<'_> {
    /// The context's size in tokens as `/cost`, the status line and `/compact` show it: the
    /// estimate `/compact` gave while its conversation is unchanged (the last request's usage
    /// still counts the messages it summarised away), else the last request's input and output.
    pub(super) fn context_tokens(&self) -> Option<u64> {
        let conversation = self.agent.conversation();
        if let Some(c) = &self.compacted {
            if c.session_id == self.agent.session_id() && c.messages == conversation.messages.len() {
                return Some(c.tokens);
            }
        }
        conversation
            .last_usage()
            .map(|(_, u)| u.total_input_tokens() + u.output_tokens)
    }

    pub(super) fn cost(&self) {
        self.note(&format!(
            "this run, {} turn{}: {}",
            self.totals.turns,
            if self.totals.turns == 1 { "" } else { "s" },
            summary_line(&self.totals.usage, self.totals.cost)
        ));
        if let Some(line) = cache_line(&self.totals.usage, self.totals.cost, self.totals.uncached_cost) {
            self.note(&line);
        }
        let window = self.agent.config().compaction.context_window;
        if let Some(used) = self.context_tokens() {
            self.note(&format!(
                "context: about {} of {} tokens ({:.0}%)",
                thousands(used),
                thousands(window),
                used as f64 * 100.0 / window.max(1) as f64
            ));
        }
    }
}
