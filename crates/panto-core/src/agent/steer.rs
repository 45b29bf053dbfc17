//! Run control: messages sent to a running turn from anywhere, either to steer it (joined to the
//! conversation at the next step boundary) or to follow it (each starts a new turn on the same
//! stream once the current one ends).
//!
//! The rules that keep the conversation valid live here, beside the queue:
//! - A steer joins at a step boundary only: after the tool results of a step, as text blocks in
//!   the same user message (so roles still alternate and every call keeps its result). A steer
//!   that arrives while tools run therefore waits for their results.
//! - When the model answered without tools the turn is over, and a steer still waiting becomes a
//!   follow-up: it starts the next turn, ahead of follow-ups queued after it.
//! - A message that has text is a human prompt ([`Message::is_human_prompt`]), so a steer counts
//!   for listing, recency and the rewind picker as a typed prompt does.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use super::UserMessage;
use crate::conversation::ContentBlock;

/// How a message sent to a running turn joins the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueueMode {
    /// At the next step boundary, after the tool results (a follow-up if the model already
    /// answered without tools).
    Steer,
    /// As a new turn once the current one ends.
    FollowUp,
}

#[derive(Debug, Default)]
struct Queues {
    steer: VecDeque<UserMessage>,
    follow_up: VecDeque<UserMessage>,
    /// Set once the stream is gone: messages sent afterwards are refused, not silently lost.
    closed: bool,
}

/// A handle to a running turn, beside its [`CancellationToken`](crate::CancellationToken):
/// cloneable, `Send + Sync`, usable from any thread or task while the [`Stream`](crate::Stream)
/// is pulled elsewhere.
///
/// Messages are taken in the order they were sent. Whatever the stream did not take before it
/// ended (a cancel, an error, a dropped stream) stays here: [`RunControl::take_pending`] gives it
/// back, so the embedder can show or resend it rather than lose it. A typed turn
/// ([`Agent::run_typed`](crate::Agent::run_typed)) takes neither: its stream ends with its result.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    queues: Arc<Mutex<Queues>>,
}

impl RunControl {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        // The lock is held only for queue operations that cannot panic half-way, so a poisoned
        // lock still holds consistent queues.
        self.queues.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `message` to steer the turn: it joins the conversation after the current step's
    /// tool results, before the next request. Returns `false` (and keeps nothing) when the
    /// stream has ended.
    pub fn steer(&self, message: impl Into<UserMessage>) -> bool {
        self.send(QueueMode::Steer, message.into())
    }

    /// Queues `message` to start a new turn, on the same stream, when the current one ends.
    /// Returns `false` (and keeps nothing) when the stream has ended.
    pub fn follow_up(&self, message: impl Into<UserMessage>) -> bool {
        self.send(QueueMode::FollowUp, message.into())
    }

    /// Sends `message` in `mode`; see [`RunControl::steer`] and [`RunControl::follow_up`].
    pub fn send(&self, mode: QueueMode, message: UserMessage) -> bool {
        let mut queues = self.lock();
        if queues.closed {
            return false;
        }
        match mode {
            QueueMode::Steer => queues.steer.push_back(message),
            QueueMode::FollowUp => queues.follow_up.push_back(message),
        }
        true
    }

    /// How many messages wait, steers first then follow-ups, with their mode: what a front end
    /// shows as queued until the stream takes them.
    pub fn pending(&self) -> Vec<(QueueMode, UserMessage)> {
        let queues = self.lock();
        queues
            .steer
            .iter()
            .map(|m| (QueueMode::Steer, m.clone()))
            .chain(queues.follow_up.iter().map(|m| (QueueMode::FollowUp, m.clone())))
            .collect()
    }

    /// Removes and returns every message not taken yet, steers first.
    pub fn take_pending(&self) -> Vec<(QueueMode, UserMessage)> {
        let mut queues = self.lock();
        let steer = std::mem::take(&mut queues.steer);
        let follow_up = std::mem::take(&mut queues.follow_up);
        steer
            .into_iter()
            .map(|m| (QueueMode::Steer, m))
            .chain(follow_up.into_iter().map(|m| (QueueMode::FollowUp, m)))
            .collect()
    }

    /// The steers waiting at a step boundary, all of them, in order.
    pub(crate) fn take_steers(&self) -> Vec<UserMessage> {
        self.lock().steer.drain(..).collect()
    }

    /// The message that starts the next turn once one ended: a steer that came too late for the
    /// turn first (the model answered without tools), else the first follow-up. With none
    /// waiting the handle closes in the same step, so no message can slip in between and be
    /// left untaken.
    pub(crate) fn next_turn_or_close(&self) -> Option<UserMessage> {
        let mut queues = self.lock();
        let next = queues.steer.pop_front().or_else(|| queues.follow_up.pop_front());
        if next.is_none() {
            queues.closed = true;
        }
        next
    }

    /// The stream is gone: later sends are refused.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
    }
}

/// The blocks a steer adds after the tool results: its text (when not empty), the text attached
/// to it, then its images (already processed by the caller).
pub(crate) fn steer_blocks(text: String, attached: Vec<String>, images: Vec<ContentBlock>) -> Vec<ContentBlock> {
    let mut blocks = Vec::with_capacity(1 + attached.len() + images.len());
    if !text.is_empty() {
        blocks.push(ContentBlock::Text { text });
    }
    blocks.extend(attached.into_iter().map(|text| ContentBlock::Text { text }));
    blocks.extend(images);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_steer_starts_the_next_turn_before_follow_ups() {
        let control = RunControl::default();
        assert!(control.follow_up("later"));
        assert!(control.steer("now"));
        assert_eq!(control.pending().len(), 2);
        assert_eq!(control.next_turn_or_close().unwrap().text, "now");
        assert_eq!(control.next_turn_or_close().unwrap().text, "later");
        assert!(control.next_turn_or_close().is_none());
        assert!(!control.steer("too late"), "the handle closed with the last turn");
    }

    #[test]
    fn a_closed_handle_refuses_and_keeps_what_was_not_taken() {
        let control = RunControl::default();
        control.steer("kept");
        control.close();
        assert!(!control.follow_up("refused"));
        let pending = control.take_pending();
        assert_eq!(pending, vec![(QueueMode::Steer, UserMessage::text("kept"))]);
    }
}
