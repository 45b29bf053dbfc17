//! `/approve` and Shift-Tab: the approval mode, changed while the agent lives. The mode is the
//! policy's one handle ([`panto_tools::ApprovalModeHandle`]), which the approval hook and the MCP
//! gating read at each decision, so the next tool call obeys the new mode. The sandbox stays as
//! it was started.

use super::helper::PromptKey;
use super::Repl;
use crate::tools::Approval;

/// The mode Shift-Tab goes to from `mode`: ask, auto, read-only, and round again.
pub(super) fn next(mode: Approval) -> Approval {
    let at = Approval::ALL.iter().position(|m| *m == mode).unwrap_or(0);
    Approval::ALL[(at + 1) % Approval::ALL.len()]
}

/// What a mode does to the calls no rule decides, as said when it is chosen.
fn effect(mode: Approval) -> &'static str {
    match mode {
        Approval::Ask => "calls that change things ask first",
        Approval::Auto => "every call runs without asking",
        Approval::ReadOnly => "calls that change things are refused",
    }
}

impl Repl<'_> {
    /// The approval mode now.
    pub(super) fn approval(&self) -> Approval {
        self.toolbox.policy().approval()
    }

    /// `/approve [MODE]`: without a mode, the mode and the choices; with one, changes to it.
    pub(super) fn approve(&mut self, args: &str) {
        if args.is_empty() {
            let choices: Vec<&str> = Approval::ALL.iter().map(|m| m.as_str()).collect();
            self.note(&format!(
                "approval {}: {} ({}; Shift-Tab cycles)",
                self.approval(),
                effect(self.approval()),
                choices.join("|")
            ));
            return;
        }
        match args.parse::<Approval>() {
            Ok(mode) => self.set_approval(mode),
            Err(e) => self.error(&e),
        }
    }

    /// What a key that returned the line does at the prompt: Ctrl-O shows the last tool result
    /// in full, Shift-Tab goes to the next approval mode.
    pub(super) fn prompt_key(&mut self, key: PromptKey) {
        match key {
            PromptKey::Expand => crate::render::expand::show_last(Some(&self.screen)),
            PromptKey::Cycle => self.set_approval(next(self.approval())),
        }
    }

    /// Changes the mode, saying so in one line.
    fn set_approval(&mut self, mode: Approval) {
        if mode == self.approval() {
            self.note(&format!("approval is already {mode}: {}", effect(mode)));
            return;
        }
        self.toolbox.policy().approval_mode().set(mode);
        self.note(&format!("approval {mode}: {}", effect(mode)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_tab_cycles_every_mode() {
        assert_eq!(next(Approval::Ask), Approval::Auto);
        assert_eq!(next(Approval::Auto), Approval::ReadOnly);
        assert_eq!(next(Approval::ReadOnly), Approval::Ask);
    }
}
