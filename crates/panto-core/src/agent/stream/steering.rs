//! The stream's side of run control and turn-end hooks: steers joined at a step boundary,
//! follow-up turns started on the same stream, `on_turn_end` hooks. The queue itself and its
//! rules are in agent/steer.rs.

use super::super::steer::steer_blocks;
use super::{Phase, StreamState, Turn};
use crate::conversation::{Message, Usage};
use crate::error::Result;
use crate::event::Event;

impl Turn<'_> {
    /// Appends every steer waiting at this step boundary to `results` (the step's tool-result
    /// message) as text after the results, and queues one [`Event::Steer`] for each.
    /// A typed turn takes no steers: it may end with this very step, and a steer the model
    /// never saw must not sit in the conversation as if it had (it stays in the run control).
    pub(super) fn join_steers(&mut self, results: &mut Message) -> Result<()> {
        if self.output.is_some() {
            return Ok(());
        }
        for steer in self.control.take_steers() {
            let mut images = Vec::with_capacity(steer.images.len());
            for (index, image) in steer.images.iter().enumerate() {
                images.push(self.agent.process_image(index, image)?);
            }
            let text = steer.text.clone();
            results.content.extend(steer_blocks(steer.text, steer.attached, images));
            self.queue.push_back(Event::Steer { text });
        }
        Ok(())
    }

    /// What follows an event of [`Turn::next`]: hooks after a completed turn, the next
    /// follow-up turn once the last turn is over, and the end of the run control once the
    /// stream ends (so later sends are refused rather than lost).
    pub(super) async fn after_event(&mut self, result: Result<Option<Event>>) -> Result<Option<Event>> {
        match &result {
            Ok(Some(Event::TurnComplete { .. })) => {
                self.agent.hooks.on_turn_end(&self.agent.conversation.messages).await;
            }
            Ok(None) => {
                if let Some(event) = self.start_follow_up() {
                    return Ok(Some(event));
                }
            }
            Ok(Some(_)) => {}
            Err(_) => self.control.close(),
        }
        result
    }

    /// Starts the next queued turn after one that completed normally, or closes the run control
    /// when none waits. A typed turn takes no follow-ups: its stream ends with its result.
    fn start_follow_up(&mut self) -> Option<Event> {
        if self.state != StreamState::Complete || self.output.is_some() {
            self.control.close();
            return None;
        }
        let message = self.control.next_turn_or_close()?;
        let text = message.text.clone();
        self.phase = Phase::Start(message);
        self.state = StreamState::Starting;
        self.usage = Usage::default();
        self.steps = 0;
        self.attempt = 1;
        self.overflow_compacted = false;
        self.compacted_at_step = None;
        Some(Event::FollowUpStart { text })
    }
}
