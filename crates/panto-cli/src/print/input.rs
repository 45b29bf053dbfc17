//! `--input-format stream-json`: steer and follow-up messages read from stdin while print mode
//! runs.
//!
//! A thread reads stdin line by line (a plain thread, not the runtime's blocking pool, so a
//! read that never returns cannot hold up the exit). Each line is one JSON object,
//! `{"type":"steer","text":"…"}` or `{"type":"follow_up","text":"…"}`; an empty line is skipped.
//! A message goes straight to the running stream's [`RunControl`] when there is one that takes
//! it; otherwise (between turns, or the stream just closed) it waits in [`Input`] to start the
//! next turn, so none is lost. A line that is not such an object is reported at once (a
//! stream-json `input_error` line and a line on stderr naming the line number and what was
//! wrong) and the run goes on without it. End of input means no more messages.

use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::{Arc, Mutex, MutexGuard};

use panto_core::{QueueMode, RunControl, UserMessage};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// One message read from stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    /// How it joins.
    pub mode: QueueMode,
    /// Its text.
    pub text: String,
}

/// A line of stdin that was not a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub error: String,
}

impl BadLine {
    /// The one-line report: `stdin line N: …`.
    pub fn message(&self) -> String {
        format!("stdin line {}: {}", self.line, self.error)
    }

    /// The stream-json `input_error` line.
    pub fn to_json(&self) -> Value {
        json!({"type": "input_error", "line": self.line, "error": self.error})
    }
}

/// Reads one line of the input format. `Ok(None)` for an empty line.
pub fn parse_line(line_no: usize, line: &str) -> Result<Option<Queued>, BadLine> {
    let bad = |error: String| BadLine { line: line_no, error };
    if line.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(bad(format!(
            "expected a JSON object like {{\"type\":\"steer\",\"text\":\"…\"}}, got {}",
            kind(&value)
        )));
    };
    let mode = match object.get("type") {
        Some(Value::String(t)) if t == "steer" => QueueMode::Steer,
        Some(Value::String(t)) if t == "follow_up" => QueueMode::FollowUp,
        Some(Value::String(t)) => {
            return Err(bad(format!(
                "unknown type {t:?}: panto reads \"steer\" and \"follow_up\" lines"
            )))
        }
        Some(other) => return Err(bad(format!("\"type\" must be a string, got {}", kind(other)))),
        None => return Err(bad("no \"type\" (\"steer\" or \"follow_up\")".to_owned())),
    };
    let text = match object.get("text") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
        Some(Value::String(_)) => return Err(bad("\"text\" is empty".to_owned())),
        Some(other) => return Err(bad(format!("\"text\" must be a string, got {}", kind(other)))),
        None => return Err(bad("no \"text\"".to_owned())),
    };
    Ok(Some(Queued { mode, text }))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[derive(Debug, Default)]
struct State {
    /// The running stream's handle, while a turn runs.
    control: Option<RunControl>,
    /// Messages no stream took, oldest first.
    waiting: VecDeque<Queued>,
    /// Whether stdin has ended.
    ended: bool,
    /// Lines that were not messages.
    bad: Vec<BadLine>,
}

/// The messages read from stdin, shared with the reading thread.
#[derive(Debug, Clone, Default)]
pub struct Input {
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
}

impl Input {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Only queue operations run under the lock; a poisoned one still holds consistent state.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts reading stdin. `report` is called on the reading thread for each bad line, as it
    /// is read.
    pub fn start(report: impl Fn(&BadLine) + Send + 'static) -> Input {
        let input = Input::default();
        let reader = input.clone();
        let spawned = std::thread::Builder::new()
            .name("panto-stdin".to_owned())
            .spawn(move || reader.read_from(std::io::stdin().lock(), report));
        if spawned.is_err() {
            // No thread, no input: the same as an empty stdin.
            input.lock().ended = true;
        }
        input
    }

    /// Reads `lines` to their end (the reading thread's work).
    fn read_from(&self, source: impl BufRead, report: impl Fn(&BadLine)) {
        for (n, line) in source.lines().enumerate() {
            let parsed = match line {
                Ok(line) => parse_line(n + 1, &line),
                Err(e) => Err(BadLine {
                    line: n + 1,
                    error: format!("cannot be read: {e}"),
                }),
            };
            match parsed {
                Ok(Some(message)) => self.deliver(message),
                Ok(None) => {}
                Err(bad) => {
                    report(&bad);
                    self.lock().bad.push(bad);
                }
            }
        }
        self.lock().ended = true;
        self.arrived.notify_one();
    }

    /// Hands `message` to the running stream, or keeps it for the next turn.
    fn deliver(&self, message: Queued) {
        let mut state = self.lock();
        let taken = state
            .control
            .as_ref()
            .is_some_and(|control| control.send(message.mode, UserMessage::text(message.text.clone())));
        if !taken {
            state.waiting.push_back(message);
        }
        drop(state);
        self.arrived.notify_one();
    }

    /// A turn starts: messages go to `control` from now on, beginning with those that arrived
    /// before it (each as what it was sent as: a steer joins this turn).
    pub fn attach(&self, control: RunControl) {
        let mut state = self.lock();
        for message in std::mem::take(&mut state.waiting) {
            // A fresh stream takes everything; kept for the next turn if not.
            if !control.send(message.mode, UserMessage::text(message.text.clone())) {
                state.waiting.push_back(message);
            }
        }
        state.control = Some(control);
    }

    /// The turn's stream ended: what it did not take waits for the next turn, ahead of what
    /// arrived since.
    pub fn detach(&self) {
        let mut state = self.lock();
        let Some(control) = state.control.take() else {
            return;
        };
        for (mode, message) in control.take_pending().into_iter().rev() {
            state.waiting.push_front(Queued {
                mode,
                text: message.text,
            });
        }
    }

    /// The message that starts the next turn: the oldest waiting one, else the next line to
    /// arrive; `None` once stdin has ended with nothing waiting.
    pub async fn next_turn(&self) -> Option<Queued> {
        loop {
            {
                let mut state = self.lock();
                if let Some(message) = state.waiting.pop_front() {
                    return Some(message);
                }
                if state.ended {
                    return None;
                }
            }
            self.arrived.notified().await;
        }
    }

    /// Messages still waiting (the run ended before it took them).
    pub fn untaken(&self) -> Vec<Queued> {
        self.lock().waiting.drain(..).collect()
    }

    /// The first bad line, if any.
    pub fn first_bad_line(&self) -> Option<BadLine> {
        self.lock().bad.first().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_or_refused_naming_what_was_wrong() {
        assert_eq!(
            parse_line(1, r#"{"type":"steer","text":"look left"}"#).unwrap(),
            Some(Queued {
                mode: QueueMode::Steer,
                text: "look left".to_owned()
            })
        );
        assert_eq!(
            parse_line(2, r#"{"text":"later","type":"follow_up","extra":1}"#)
                .unwrap()
                .map(|q| q.mode),
            Some(QueueMode::FollowUp)
        );
        assert_eq!(parse_line(3, "   ").unwrap(), None);
        for (line, expected) in [
            ("{not json", "not JSON"),
            ("[1]", "got an array"),
            (r#"{"type":"stear","text":"x"}"#, "unknown type \"stear\""),
            (r#"{"type":3,"text":"x"}"#, "\"type\" must be a string, got a number"),
            (r#"{"text":"x"}"#, "no \"type\""),
            (r#"{"type":"steer"}"#, "no \"text\""),
            (r#"{"type":"steer","text":" "}"#, "\"text\" is empty"),
            (r#"{"type":"steer","text":null}"#, "got null"),
        ] {
            let bad = parse_line(7, line).unwrap_err();
            assert_eq!(bad.line, 7);
            assert!(bad.error.contains(expected), "{line}: {}", bad.error);
            assert!(bad.message().starts_with("stdin line 7: "), "{}", bad.message());
        }
    }

    #[tokio::test]
    async fn messages_go_to_the_running_turn_or_wait_for_the_next() {
        let input = Input::default();
        let control = RunControl::default();
        input.attach(control.clone());
        let lines = "{\"type\":\"steer\",\"text\":\"a\"}\n\nbad\n{\"type\":\"follow_up\",\"text\":\"b\"}\n";
        input.read_from(std::io::Cursor::new(lines), |_| {});
        assert_eq!(control.pending().len(), 2, "both went to the running turn");
        input.detach();
        // What the turn did not take starts the next turns, in order; then stdin has ended.
        assert_eq!(input.next_turn().await.map(|q| q.text), Some("a".to_owned()));
        assert_eq!(input.next_turn().await.map(|q| q.text), Some("b".to_owned()));
        assert_eq!(input.next_turn().await, None);
        assert_eq!(input.first_bad_line().map(|b| b.line), Some(3));
    }
}
