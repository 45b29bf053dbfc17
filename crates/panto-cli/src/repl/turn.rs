//! One REPL turn: stream the agent's events to the screen until the turn ends, fails, or Ctrl-C
//! cancels it.

use panto_core::pricing::PricingRegistry;
use panto_core::{Agent, Error, Event, QueueMode, Usage, UserMessage};

use super::keys::{TurnKeys, TypeAhead};
use crate::cost::{cost, uncached_cost};
use crate::render::{AsksFirst, Declined, Screen, TurnView};

/// What a turn cost, and what was typed while it ran.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// Tokens over every request of the turn.
    pub usage: Usage,
    /// Its cost, when pricing is known.
    pub cost: Option<u64>,
    /// What it would have cost with no prompt cache, when pricing is known.
    pub uncached_cost: Option<u64>,
    /// Keys typed ahead during the turn.
    pub typed: TypeAhead,
    /// Whether the turn got far enough for a status line (it ended, or used tokens).
    pub reached_model: bool,
    /// How long it took.
    pub elapsed: std::time::Duration,
}

/// Runs one turn with `text`. Errors are shown, not returned: the REPL goes on either way.
pub async fn run(
    agent: &mut Agent,
    message: UserMessage,
    screen: Screen,
    pricing: &PricingRegistry,
    selection: &crate::config::Selection,
    (asks, declined): (AsksFirst, Declined),
    typeahead: QueueMode,
) -> TurnOutcome {
    let wire = &selection.wire();
    let provider = &selection.provider;
    let started = std::time::Instant::now();
    let mut view = TurnView::new(screen)
        .with_questions(asks)
        .with_declined(declined)
        .with_max_attempts(agent.config().retry.max_attempts);
    view.waiting("waiting for the model…");
    let mut stream = agent.run(message);
    // The terminal is in cooked mode while a turn runs, so Ctrl-C arrives as SIGINT. Cancelling
    // through the token lets the agent salvage and persist what already streamed.
    let watcher = crate::interrupt::cancel_on_interrupt(stream.cancel_token());
    // Keys typed during the turn are never echoed into the answer: Enter sends a finished line
    // to the turn (a steer or a follow-up, per `typeahead`); Esc cancels.
    let control = stream.control();
    let keys = (screen.deco_on_stdout && crate::terminal::stdin_is_tty())
        .then(|| TurnKeys::start(stream.cancel_token(), Some((control.clone(), typeahead)), screen.deco))
        .flatten();
    let mut ended = false;
    // A follow-up starts a turn of its own on the stream, with its own usage: the usage of the
    // turns that completed, plus the one still open when the stream stopped.
    let mut completed = Usage::default();
    let mut open = true;
    loop {
        match stream.next().await {
            Ok(Some(event)) => {
                match &event {
                    Event::TurnComplete { usage, .. } => {
                        ended = true;
                        completed.accumulate(usage);
                        open = false;
                    }
                    Event::FollowUpStart { .. } => open = true,
                    _ => {}
                }
                if let (Event::Steer { text } | Event::FollowUpStart { text }, Some(keys)) = (&event, &keys) {
                    keys.taken(text);
                }
                view.event(&event);
            }
            Ok(None) => break,
            Err(Error::Cancelled) => {
                view.cancelled();
                break;
            }
            Err(e) => {
                match provider.key_hint(&e) {
                    Some(hint) => view.failed(&format!("{e}; {hint}")),
                    None => view.failed(&e.to_string()),
                }
                break;
            }
        }
    }
    watcher.abort();
    let mut typed = keys.map(TurnKeys::finish).unwrap_or_default();
    let mut usage = completed;
    if open {
        usage.accumulate(&stream.usage());
    }
    drop(stream);
    // What the turn did not take (it was cancelled or failed first) is sent next, before what
    // was typed after it.
    typed.sent.clear();
    let untaken = control.take_pending().into_iter().map(|(_, m)| m.text);
    typed.lines.splice(0..0, untaken);
    view.finish();
    TurnOutcome {
        usage,
        cost: cost(pricing, wire, &usage),
        uncached_cost: uncached_cost(pricing, wire, &usage),
        typed,
        reached_model: ended || usage != Usage::default(),
        elapsed: started.elapsed(),
    }
}
