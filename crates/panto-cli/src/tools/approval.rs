//! The approval gate: the terminal prompt of panto-tools' policy chain. The chain (deny rules,
//! command hooks, allow rules, the approval mode) decides whether a call of `write`, `edit`,
//! `bash` or an MCP tool not annotated read-only needs a question; in `ask` mode it asks this
//! gate ([`panto_tools::policy::Prompt`]).
//!
//! Tool calls of one assistant message run concurrently, so two calls may want approval at the
//! same time; the gate asks one question at a time, and re-checks "always" after waiting its turn
//! so a second call of a tool the user just allowed for good is not asked about again.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use panto_core::CancellationToken;
use panto_tools::Approval;

/// The most declined results kept for the screen to take.
const KEPT_DECLINED: usize = 64;

/// A user's answer to an approval question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Yes,
    /// Do not run it.
    No,
    /// Do not run it, and tell the model this (what to do instead): the text is the call's
    /// result.
    NoBecause(String),
    /// Run it and every later call of this tool.
    Always,
    /// The user wants to say why not: the asker asks for the text, then answers
    /// [`Answer::NoBecause`]. Never returned by an [`Asker`].
    Feedback,
}

/// Asks the user a question. Blocking: the gate calls it on a blocking thread. Returns `None` when
/// `cancel` fired or input ended before an answer.
pub trait Asker: Send + Sync + fmt::Debug {
    /// Shows `question` and waits for an answer.
    fn ask(&self, question: &str, cancel: &CancellationToken) -> Option<Answer>;
}

/// The terminal prompt in front of tools that change things. It holds no approval mode: the
/// policy's handle is the one ([`panto_tools::ApprovalModeHandle`]), read at each decision, and
/// the gate is asked only in `ask` mode.
#[derive(Debug)]
pub struct Gate {
    /// The tools (by offered name) allowed for good with "always".
    always: Mutex<HashSet<String>>,
    /// Held while a question is on screen, so questions never interleave.
    asking: tokio::sync::Mutex<()>,
    asker: Option<Arc<dyn Asker>>,
    /// The results of calls the user declined (or cancelled at the question), until the screen
    /// takes each ([`Gate::take_declined`]) to show it as declined rather than failed.
    declined: Mutex<Vec<String>>,
}

impl Gate {
    /// A gate asking `asker`. Without an asker every question is refused (there is nobody to
    /// ask).
    pub fn new(asker: Option<Arc<dyn Asker>>) -> Self {
        Gate {
            always: Mutex::new(HashSet::new()),
            asking: tokio::sync::Mutex::new(()),
            asker,
            declined: Mutex::new(Vec::new()),
        }
    }

    /// Whether the tool offered as `tool` was allowed for good with "always".
    pub fn always_allowed(&self, tool: &str) -> bool {
        self.always.lock().unwrap_or_else(|e| e.into_inner()).contains(tool)
    }

    /// Whether a call of the tool offered as `tool`, when the policy leaves it to approval in
    /// approval `mode`, will be asked about (so the question, not the tool line, is where the
    /// call is shown in full).
    pub fn asks(&self, mode: Approval, tool: &str) -> bool {
        mode == Approval::Ask && self.asker.is_some() && !self.always_allowed(tool)
    }

    /// Whether `result` is the result of a call the user declined at a question of this gate (so
    /// it is shown as declined, not as a failure). Each declined result is taken once.
    pub fn take_declined(&self, result: &str) -> bool {
        let mut declined = self.declined.lock().unwrap_or_else(|e| e.into_inner());
        match declined.iter().position(|d| d == result) {
            Some(at) => {
                declined.remove(at);
                true
            }
            None => false,
        }
    }

    /// Asks whether the tool offered as `tool` may run the call `what` describes (the command,
    /// the path, an MCP call's arguments). `Err` holds the text of the error result the model
    /// gets.
    pub async fn ask(&self, tool: &str, what: &str, cancel: &CancellationToken) -> Result<(), String> {
        let answer = self.question(tool, what, cancel).await;
        if let Err(Refusal::Declined(result)) = &answer {
            let mut declined = self.declined.lock().unwrap_or_else(|e| e.into_inner());
            // Results never drawn (a turn that ended first) are not kept for ever.
            if declined.len() >= KEPT_DECLINED {
                declined.remove(0);
            }
            declined.push(result.clone());
        }
        answer.map_err(Refusal::into_result)
    }

    async fn question(&self, tool: &str, what: &str, cancel: &CancellationToken) -> Result<(), Refusal> {
        if self.always_allowed(tool) {
            return Ok(());
        }
        let Some(asker) = self.asker.clone() else {
            return Err(Refusal::Refused(format!(
                "the {tool} tool needs approval, and there is no terminal to ask on"
            )));
        };
        let _turn = tokio::select! {
            guard = self.asking.lock() => guard,
            _ = cancel.cancelled() => return Err(declined(tool, "the turn was cancelled")),
        };
        if self.always_allowed(tool) {
            return Ok(());
        }
        let question = format!("allow {tool}: {what}");
        let token = cancel.clone();
        let answer = tokio::task::spawn_blocking(move || asker.ask(&question, &token))
            .await
            .unwrap_or(None);
        match answer {
            Some(Answer::Yes) => Ok(()),
            Some(Answer::Always) => {
                self.always
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tool.to_owned());
                Ok(())
            }
            Some(Answer::No | Answer::Feedback) => Err(declined(tool, "the user declined this call")),
            Some(Answer::NoBecause(why)) => Err(Refusal::Declined(format!(
                "the {tool} call did not run: the user declined it and said: {why}"
            ))),
            None if cancel.is_cancelled() => Err(declined(tool, "the turn was cancelled")),
            None => Err(declined(tool, "no answer (input ended)")),
        }
    }
}

/// In `ask` mode the policy chain asks the gate about calls no rule decided.
#[async_trait::async_trait]
impl panto_tools::policy::Prompt for Gate {
    async fn approve(&self, tool: &str, what: &str, cancel: &CancellationToken) -> Result<(), String> {
        self.ask(tool, what, cancel).await
    }
}

/// Why a call did not run.
enum Refusal {
    /// The user said no at the question (or cancelled the turn while it waited).
    Declined(String),
    /// Nobody could be asked.
    Refused(String),
}

impl Refusal {
    /// The text of the error result the model gets.
    fn into_result(self) -> String {
        match self {
            Refusal::Declined(text) | Refusal::Refused(text) => text,
        }
    }
}

fn declined(tool: &str, why: &str) -> Refusal {
    Refusal::Declined(format!("the {tool} call did not run: {why}"))
}

/// The answer a key gives at the question: `y`, `n`, `a` or `f` (either case).
pub fn answer_key(key: char) -> Option<Answer> {
    match key.to_ascii_lowercase() {
        'y' => Some(Answer::Yes),
        'n' => Some(Answer::No),
        'a' => Some(Answer::Always),
        'f' => Some(Answer::Feedback),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[derive(Debug)]
    struct Scripted {
        answer: Option<Answer>,
        asked: AtomicUsize,
    }

    impl Asker for Scripted {
        fn ask(&self, _question: &str, _cancel: &CancellationToken) -> Option<Answer> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.answer.clone()
        }
    }

    fn gate(answer: Option<Answer>) -> (Gate, Arc<Scripted>) {
        let asker = Arc::new(Scripted {
            answer,
            asked: AtomicUsize::new(0),
        });
        (Gate::new(Some(asker.clone())), asker)
    }

    #[tokio::test]
    async fn always_is_remembered_per_tool() {
        let (g, asker) = gate(Some(Answer::Always));
        let cancel = CancellationToken::new();
        g.ask("bash", "ls", &cancel).await.unwrap();
        g.ask("bash", "pwd", &cancel).await.unwrap();
        assert_eq!(asker.asked.load(Ordering::SeqCst), 1);
        g.ask("write", "f", &cancel).await.unwrap();
        assert_eq!(asker.asked.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn no_is_an_error_result_for_the_model() {
        let (g, _) = gate(Some(Answer::No));
        let e = g.ask("edit", "f", &CancellationToken::new()).await.unwrap_err();
        assert!(e.contains("declined"), "{e}");
    }

    #[tokio::test]
    async fn a_declined_result_is_known_as_declined_once() {
        let (g, _) = gate(Some(Answer::No));
        let e = g.ask("bash", "ls", &CancellationToken::new()).await.unwrap_err();
        // A failure with other text is not taken for it.
        assert!(!g.take_declined("the bash call failed"));
        assert!(g.take_declined(&e));
        assert!(!g.take_declined(&e));
        // Nobody to ask is a refusal, not the user's no.
        let g = Gate::new(None);
        let e = g.ask("bash", "ls", &CancellationToken::new()).await.unwrap_err();
        assert!(!g.take_declined(&e));
    }

    #[tokio::test]
    async fn feedback_is_the_result_the_model_gets() {
        let (g, _) = gate(Some(Answer::NoBecause("run the tests first".into())));
        let e = g
            .ask("bash", "rm -rf target", &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(
            e,
            "the bash call did not run: the user declined it and said: run the tests first"
        );
    }

    #[test]
    fn one_key_answers() {
        assert_eq!(answer_key('Y'), Some(Answer::Yes));
        assert_eq!(answer_key('a'), Some(Answer::Always));
        assert_eq!(answer_key('n'), Some(Answer::No));
        assert_eq!(answer_key('f'), Some(Answer::Feedback));
        assert_eq!(answer_key('x'), None);
        assert_eq!(answer_key('\r'), None);
    }
}
