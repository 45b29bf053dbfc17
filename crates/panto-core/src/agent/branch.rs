//! Message ids, rewind and fork: the agent's side of the session tree.

use super::Agent;
use crate::conversation::Role;
use crate::error::{Error, Result};
use crate::store::seam::LoadedBranch;

impl Agent {
    /// An agent for `session` adopting its loaded active `branch` (what [`Session::load_branch`]
    /// returned), with the messages' entry ids: what [`Agent::resume`] does after loading. See
    /// [`Agent::new`] for the repair of an interrupted turn.
    ///
    /// Errors: [`Error::HttpClient`].
    ///
    /// [`Session::load_branch`]: crate::Session::load_branch
    pub fn with_branch(config: crate::Config, session: crate::Session, branch: LoadedBranch) -> Result<Self> {
        let mut agent = Agent::new(config, session, Some(branch.conversation.clone()))?;
        agent.adopt_ids(&branch);
        Ok(agent)
    }

    /// The entry id of message `index` of [`Agent::conversation`]: the id the store gave it when
    /// it was appended (or loaded), stable for the session's life and kept by a fork. `None` for
    /// a message not stored yet (call [`Agent::flush`] first) or out of range.
    pub fn message_id(&self, index: usize) -> Option<&str> {
        self.message_ids.get(index).and_then(|id| id.as_deref())
    }

    /// The entry ids of the conversation's messages, index for index (see [`Agent::message_id`];
    /// shorter than the conversation when its end is not stored yet).
    pub fn message_ids(&self) -> &[Option<String>] {
        &self.message_ids
    }

    /// Goes back to before the human prompt stored as entry `to`: the conversation becomes what
    /// it was when that prompt was sent, and the next prompt starts a new branch from there. The
    /// abandoned branch stays in the log (the store records the switch as an appended entry).
    /// Works mid-session and after [`Agent::resume`]; whatever the agent holds unstored is
    /// flushed first, so nothing is lost.
    ///
    /// Errors: [`Error::UnknownEntry`] when `to` is not a human prompt on the active branch, the
    /// store's errors ([`Error::Unsupported`] for a store without branches).
    pub async fn rewind(&mut self, to: &str) -> Result<()> {
        self.flush().await?;
        let branch = self.session.load_branch().await?;
        let index = branch
            .entries
            .iter()
            .position(|e| e.id == to)
            .ok_or_else(|| Error::UnknownEntry {
                session: self.session.id().to_owned(),
                message: format!("no message {to:?} on the active branch"),
            })?;
        if !branch.conversation.messages[index].is_human_prompt() {
            return Err(Error::UnknownEntry {
                session: self.session.id().to_owned(),
                message: format!("message {to:?} is not a prompt: a rewind goes back to a prompt"),
            });
        }
        let tip = branch.entries[index].parent.clone();
        self.hold_session().await?;
        self.session.switch_branch(tip.as_deref()).await?;
        self.reload().await
    }

    /// Continues in a new session whose history is this one's path up to and including entry
    /// `at` (its messages keep their ids; the new session records where it came from). The
    /// original session is left as it was, and the agent writes to the fork from now on. Returns
    /// the new session's id. Works mid-session and after [`Agent::resume`]; whatever the agent
    /// holds unstored is flushed to the original first.
    ///
    /// Errors: [`Error::UnknownEntry`] when the session holds no message `at`, the store's errors
    /// ([`Error::Unsupported`] for a store without forks).
    pub async fn fork(&mut self, at: &str) -> Result<String> {
        self.flush().await?;
        let fork = self.session.fork(at).await?;
        self.session = fork;
        // The original is no longer this agent's to write: let it go (the fork is taken by
        // the agent's next write).
        self.writer = None;
        self.reload().await?;
        Ok(self.session.id().to_owned())
    }

    /// The prompts of the active branch a rewind can go back to: `(entry id, message index)`,
    /// oldest first. Messages not stored yet have no id and are not listed.
    pub fn prompts(&self) -> Vec<(&str, usize)> {
        self.conversation
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User && m.is_human_prompt())
            .filter_map(|(i, _)| self.message_id(i).map(|id| (id, i)))
            .collect()
    }

    /// Adopts the stored active branch as the conversation, its ids with it.
    async fn reload(&mut self) -> Result<()> {
        let branch = self.session.load_branch().await?;
        let (conversation, persisted) = super::repair(branch.conversation.clone());
        self.conversation = conversation;
        self.persisted = persisted;
        self.stored = true;
        self.adopt_ids(&branch);
        Ok(())
    }

    /// Takes the ids of a loaded branch whose conversation the agent adopted.
    pub(super) fn adopt_ids(&mut self, branch: &LoadedBranch) {
        // A closer the agent inserted in the middle (in memory only) shifts the rest: ids are
        // matched only up to the first such change.
        let mut ids = Vec::with_capacity(self.conversation.messages.len());
        for (message, (stored, entry)) in self
            .conversation
            .messages
            .iter()
            .zip(branch.conversation.messages.iter().zip(&branch.entries))
        {
            if message != stored {
                break;
            }
            ids.push(Some(entry.id.clone()));
        }
        self.message_ids = ids;
    }
}
