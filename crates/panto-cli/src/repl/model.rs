//! `/model`: shows the model, or switches to another (a wire name is checked before a paid
//! request can fail on it).

use super::{model_check, Repl};

impl Repl<'_> {
    pub(super) fn model(&mut self, args: &str) {
        if args.is_empty() {
            self.note(&format!("model: {}", self.selection.describe()));
            return;
        }
        let selection = self.settings.named_selection(args, &self.selection.provider);
        match self.settings.agent_config(&selection) {
            Ok(config) => {
                // A wire name is checked before a paid request can fail on it.
                if selection.alias.is_none() {
                    let check = model_check::check(&self.pricing, &config.provider, &selection.provider.name);
                    match self.rt.block_on(check) {
                        model_check::Verdict::Known => {}
                        model_check::Verdict::Unknown(refusal) => {
                            self.error(&format!("{refusal} (the model is unchanged)"));
                            return;
                        }
                        model_check::Verdict::Unchecked(note) => self.dim(&note),
                    }
                }
                self.agent.set_config(config);
                self.note(&format!("switched to {}", selection.describe()));
                if selection.alias.is_none() && !self.settings.models.is_empty() {
                    self.dim(&format!(
                        "({args} is not a configured alias; it is sent as a model name to {})",
                        selection.provider.name
                    ));
                }
                self.selection = selection;
            }
            Err(e) => self.error(&e.message),
        }
    }
}
