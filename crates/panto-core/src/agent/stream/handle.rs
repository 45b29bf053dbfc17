//! The stream an embedder holds: [`Stream::next`], and the same events as a `futures::Stream`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio_util::sync::{CancellationToken, ReusableBoxFuture};

use super::super::steer::RunControl;
use super::super::typed::OutputSlot;
use super::super::{Agent, UserMessage};
use super::{StreamState, Turn};
use crate::conversation::Usage;
use crate::error::Result;
use crate::event::Event;
use crate::tool::Tool;

/// A step started by `poll_next`: it owns the turn while it runs and hands it back with the
/// event. Its allocation is reused from one step to the next, so a turn pulled through
/// `futures::Stream` allocates it once, not once per event.
type Step<'a> = ReusableBoxFuture<'a, (Box<Turn<'a>>, Result<Option<Event>>)>;

/// The events of one turn, pulled with [`Stream::next`] or, as a
/// [`futures::Stream`](futures_util::Stream) of `Result<Event>`, with the `StreamExt` combinators.
///
/// Borrows the agent mutably for the whole turn. Dropping it mid-turn cancels the turn cleanly:
/// the HTTP request is aborted, running tools are told to stop, what the user already saw of the
/// assistant message is kept (text and complete thinking; unfinished tool calls are dropped), and
/// every dispatched tool call gets a result, so the conversation stays valid. Those last messages
/// are persisted by the agent's next write; [`Stream::cancel`] persists them at once.
///
/// That cleanup is why the borrow lasts until the stream is dropped: a stream held in a variable
/// is dropped at the end of its block (or by `drop(stream)`), and the agent is free again after
/// that. A stream consumed by value (`collect`, `try_for_each`, a `for_each` on
/// `agent.run(..)` itself) is dropped when the combinator ends, so the agent is free on the next
/// line:
///
/// ```
/// # use panto_testkit::{script, MockServer, Reply};
/// use futures_util::TryStreamExt;
/// use panto_core::{Agent, ApiStyle, Config, Event, NullStore, ProviderConfig, Session};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> panto_core::Result<()> {
/// # let server = MockServer::start().await;
/// # server.push(Reply::sse(script::anthropic_text("Hello!")));
/// # let config = Config::new(
/// #     ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
/// #         .with_base_url(server.anthropic_base_url())
/// #         .with_api_key("key"),
/// # );
/// let mut agent = Agent::new(config, Session::create(NullStore::shared()), None)?;
/// let events: Vec<Event> = agent.run("Say hello".into()).try_collect().await?;
/// assert!(matches!(events.last(), Some(Event::TurnComplete { .. })));
/// assert_eq!(agent.conversation().messages.len(), 2);
/// # Ok(())
/// # }
/// ```
///
/// Polled as a `futures::Stream`, each step's future is boxed (it must live between polls);
/// [`Stream::next`] runs the step in place and boxes nothing.
pub struct Stream<'a> {
    /// The turn, between steps. `None` while `step` runs (it owns the turn then) or after
    /// [`Stream::cancel`].
    turn: Option<Box<Turn<'a>>>,
    /// The future of the steps `poll_next` starts (allocated by the first of them).
    step: Option<Step<'a>>,
    /// Whether `step` holds a step that has not finished (and so holds the turn).
    stepping: bool,
    /// The turn's state and usage as of the last event, kept here so that they can be read while
    /// `step` holds the turn.
    state: StreamState,
    usage: Usage,
    cancel: CancellationToken,
    control: RunControl,
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("state", &self.state)
            .field("usage", &self.usage)
            .field("turn", &self.turn)
            .finish_non_exhaustive()
    }
}

impl<'a> Stream<'a> {
    fn of(turn: Turn<'a>) -> Self {
        Stream {
            state: turn.state,
            usage: turn.usage,
            cancel: turn.cancel.clone(),
            control: turn.control.clone(),
            turn: Some(Box::new(turn)),
            step: None,
            stepping: false,
        }
    }

    pub(in crate::agent) fn new(agent: &'a mut Agent, message: UserMessage) -> Self {
        Stream::of(Turn::new(agent, message))
    }

    /// A turn that continues the conversation as it stands, adding no user message
    /// ([`Agent::retry`]).
    pub(in crate::agent) fn resumed(agent: &'a mut Agent) -> Self {
        Stream::of(Turn::resumed(agent))
    }

    /// A typed turn: `tool` is offered besides the agent's tools (and recorded with them), the
    /// model must call a tool, and the turn ends once `slot` holds the result.
    pub(in crate::agent) fn with_output(
        agent: &'a mut Agent,
        message: UserMessage,
        tool: Arc<dyn Tool>,
        slot: Arc<OutputSlot>,
    ) -> Result<Self> {
        Ok(Stream::of(Turn::with_output(agent, message, tool, slot)?))
    }

    /// Where the turn is.
    pub fn state(&self) -> StreamState {
        self.state
    }

    /// Usage summed over the turn's requests so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// A token that cancels this turn from anywhere (another task or thread): the pending or next
    /// [`Stream::next`] then finishes the turn as [`Stream::cancel`] does and returns
    /// [`Error::Cancelled`](crate::Error::Cancelled).
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// A handle that steers this turn or queues follow-up turns from anywhere (another task or
    /// thread), beside [`Stream::cancel_token`]; see [`RunControl`].
    pub fn control(&self) -> RunControl {
        self.control.clone()
    }

    /// The next event. `Ok(Some(_))` is progress, including each turn's [`Event::TurnComplete`]
    /// (a follow-up sent through [`Stream::control`] starts another turn on this stream, opened by
    /// [`Event::FollowUpStart`]); `Ok(None)` means the last turn is over; `Err` means it failed
    /// (the conversation is still valid and everything completed before the failure is
    /// persisted).
    pub async fn next(&mut self) -> Result<Option<Event>> {
        if !self.stepping {
            if let Some(turn) = self.turn.as_mut() {
                let result = turn.next().await;
                self.state = turn.state;
                self.usage = turn.usage;
                return result;
            }
        }
        // A step `poll_next` started is finished first: it holds the turn.
        std::future::poll_fn(|cx| self.poll_step(cx)).await
    }

    /// Cancels the turn and persists what it leaves: the salvaged part of a streaming message, and
    /// results (real or "interrupted") for every dispatched tool call.
    pub async fn cancel(mut self) -> Result<()> {
        self.cancel.cancel();
        if let Some(step) = self.step.as_mut().filter(|_| self.stepping) {
            // Cancelled, the step ends at once, ending the turn as a cancel does.
            let (turn, _) = std::future::poll_fn(|cx| step.poll(cx)).await;
            self.stepping = false;
            self.turn = Some(turn);
        }
        match self.turn.take() {
            Some(turn) => turn.cancel().await,
            None => Ok(()),
        }
    }

    /// Drives the step `poll_next` started, starting one if none runs. `Ok(None)` once the
    /// stream has no turn left.
    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Event>>> {
        if !self.stepping {
            let Some(mut turn) = self.turn.take() else {
                return Poll::Ready(Ok(None));
            };
            let step = async move {
                let result = turn.next().await;
                (turn, result)
            };
            match &mut self.step {
                Some(reused) => reused.set(step),
                None => self.step = Some(ReusableBoxFuture::new(step)),
            }
            self.stepping = true;
        }
        let Some(step) = self.step.as_mut() else {
            return Poll::Ready(Ok(None));
        };
        let (turn, result) = std::task::ready!(step.poll(cx));
        self.stepping = false;
        self.state = turn.state;
        self.usage = turn.usage;
        self.turn = Some(turn);
        Poll::Ready(result)
    }
}

/// The events as `Result<Event>`s; the stream ends where [`Stream::next`] returns `Ok(None)`,
/// and after an error (which is the turn's end) it ends too.
impl futures_util::Stream for Stream<'_> {
    type Item = Result<Event>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Event>>> {
        self.get_mut().poll_step(cx).map(Result::transpose)
    }
}
