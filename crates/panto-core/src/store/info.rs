//! What a listing shows of a session, and the one definition of recency.

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::seam::ForkOrigin;
use crate::conversation::Message;
use crate::identity::ProviderIdentity;

/// How many characters of the last human prompt [`SessionInfo::last_user_message`] keeps.
pub const LAST_USER_MESSAGE_CHARS: usize = 200;

/// What a listing shows of one session.
///
/// `#[non_exhaustive]`: a store outside panto-core builds one with [`SessionInfo::new`] and sets
/// the fields it knows, so that a field added here does not break it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session id (a UUIDv7 in the built-in stores).
    pub id: String,
    /// When the session was created.
    pub created: DateTime<Utc>,
    /// When the session was last written.
    pub modified: DateTime<Utc>,
    /// When a person last prompted in it ([`Message::is_human_prompt`]).
    pub last_prompt_at: Option<DateTime<Utc>>,
    /// How many messages the log holds (system, user, assistant, tool results, summaries).
    pub message_count: usize,
    /// The start of the last human prompt, at most [`LAST_USER_MESSAGE_CHARS`] characters.
    pub last_user_message: Option<String>,
    /// The provider identity of the last non-system message, for resume pre-selection.
    pub wire: Option<ProviderIdentity>,
    /// Set when the session was forked from another.
    pub forked_from: Option<ForkOrigin>,
    /// The working directory of the process that created the session (with its first append, or
    /// the fork), as the store recorded it; `None` when it did not (a session from a store that
    /// records none, a directory whose path is not UTF-8). Front ends list a directory's own
    /// sessions first and continue the latest session of the directory they run in.
    pub cwd: Option<PathBuf>,
}

impl SessionInfo {
    /// The info of a brand-new, empty session.
    pub fn new(id: impl Into<String>, created: DateTime<Utc>) -> Self {
        SessionInfo {
            id: id.into(),
            created,
            modified: created,
            last_prompt_at: None,
            message_count: 0,
            last_user_message: None,
            wire: None,
            forked_from: None,
            cwd: None,
        }
    }

    /// The time sessions are ordered by: the last human prompt, else creation.
    ///
    /// This is the one definition of recency: every store's `list` order and `latest` use it, so
    /// opening a session, repairing it, or appending a synthetic closer never moves it up.
    pub fn recency(&self) -> DateTime<Utc> {
        self.last_prompt_at.unwrap_or(self.created)
    }

    /// Folds one appended message into the info, as every store must.
    pub fn record(&mut self, message: &Message, wire: Option<&ProviderIdentity>, at: DateTime<Utc>) {
        self.message_count += 1;
        self.modified = at;
        if message.is_human_prompt() {
            self.last_prompt_at = Some(at);
            self.last_user_message = Some(truncate_chars(message.prompt_text(), LAST_USER_MESSAGE_CHARS));
        }
        // Every message of a turn comes from the same identity; keep the one held rather than
        // copying its strings again for each.
        if let Some(wire) = wire.filter(|&wire| self.wire.as_ref() != Some(wire)) {
            self.wire = Some(wire.clone());
        }
    }
}

/// Sorts infos newest first by [`SessionInfo::recency`], ties broken by id (newest UUIDv7 first).
pub fn sort_by_recency(infos: &mut [SessionInfo]) {
    infos.sort_by(|a, b| b.recency().cmp(&a.recency()).then_with(|| b.id.cmp(&a.id)));
}

pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_owned(),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_is_previewed_by_what_was_typed_not_what_was_attached() {
        use crate::{ContentBlock, Message, Role};
        let prompt = Message::new(
            Role::User,
            vec![
                ContentBlock::text("look at @notes.md"),
                ContentBlock::text("<file path=\"notes.md\">\nNOTE\n</file>"),
            ],
        );
        let mut info = SessionInfo::new("s", Utc::now());
        info.record(&prompt, None, Utc::now());
        assert_eq!(info.last_user_message.as_deref(), Some("look at @notes.md"));
        let entry = crate::store::EntryRef {
            id: "e".into(),
            parent: None,
        };
        assert_eq!(crate::store::TreeEntry::of(entry, &prompt).preview, "look at @notes.md");
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hi", 5), "hi");
    }
}
