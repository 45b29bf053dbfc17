//! `/image`: images attached to the next prompt.

use std::path::PathBuf;

use super::Repl;
use crate::attach::{self, Attachment};

impl Repl<'_> {
    /// `/image FILE...`: attaches images to the next prompt; without a file, lists them.
    pub(super) fn image(&mut self, args: &str) {
        if args.is_empty() {
            if self.pending_images.is_empty() {
                self.note("no images attached; /image FILE attaches one to your next prompt");
            } else {
                let names: Vec<String> = self.pending_images.iter().map(Attachment::describe).collect();
                self.note(&format!("attached to your next prompt: {}", names.join(", ")));
            }
            return;
        }
        let Some(words) = attach::shell_words(args) else {
            self.error("/image: a quote is left open; quote a file name with spaces as 'my file.png'");
            return;
        };
        for word in words {
            let path = match (word.strip_prefix("~/"), &self.home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(&word),
            };
            match attach::read(&path) {
                Ok(image) => {
                    self.note(&format!("attached {}: it goes with your next prompt", image.describe()));
                    self.pending_images.push(image);
                }
                Err(e) => self.error(&e),
            }
        }
    }
}
