//! `/compact`: summarises the conversation, and the note saying what that did.

use super::{Compacted, Repl};
use crate::cost::{summary_line, thousands};

impl Repl<'_> {
    pub(super) fn compact(&mut self, args: &str) {
        let instructions = (!args.is_empty()).then_some(args);
        // The size before as `/cost` showed it, so the two agree.
        let shown_before = self.context_tokens();
        self.dim("compacting the conversation…");
        let result = self.rt.block_on(async {
            let (interrupted, watcher) = crate::interrupt::interrupt_token();
            // Dropping the compaction future cancels it cleanly: the conversation is replaced
            // only once the summary is stored.
            let r = tokio::select! {
                r = self.agent.compact(None, instructions) => Some(r),
                _ = interrupted.cancelled() => None,
            };
            watcher.abort();
            r
        });
        match result {
            Some(Ok(r)) => {
                let before = shown_before.unwrap_or(r.tokens_before);
                self.compacted = Some(Compacted {
                    session_id: self.agent.session_id().to_owned(),
                    messages: self.agent.conversation().messages.len(),
                    tokens: r.tokens_after,
                });
                self.note(&compaction_line(&r, before));
                // The summary request is paid for like a turn's; `/cost` counts it.
                if let Some(usage) = r.usage {
                    let cost = crate::cost::cost(&self.pricing, &self.selection.wire(), &usage);
                    let uncached = crate::cost::uncached_cost(&self.pricing, &self.selection.wire(), &usage);
                    self.totals.add_request(&usage, cost, uncached);
                    self.dim(&format!("summary request: {}", summary_line(&usage, cost)));
                }
            }
            Some(Err(e)) => self.error(&format!("compaction failed: {e}")),
            None => self.note("compaction cancelled; the conversation is unchanged"),
        }
    }
}

/// The note after `/compact`: what it did and the context's size before and after, in the
/// measure `/cost` uses. A summary no smaller than what it replaced is said in words, never as a
/// rise.
fn compaction_line(r: &panto_core::CompactionResult, before: u64) -> String {
    let done = format!(
        "compacted: {} messages summarised, {} kept",
        r.messages_summarized, r.messages_kept
    );
    if r.tokens_after < before {
        format!(
            "{done}; about {} → {} tokens",
            thousands(before),
            thousands(r.tokens_after)
        )
    } else {
        format!(
            "{done}; about {} tokens (the summary is no smaller than what it replaced)",
            thousands(r.tokens_after)
        )
    }
}
