//! `panto_run_steer` and `panto_run_follow_up`: messages sent to a running turn from any thread.
//!
//! The run's task makes the core stream (and with it the [`RunControl`]) only once it starts on
//! the runtime; a message sent before that waits here and is handed over, in order, the moment
//! the stream exists, so no message sent to a live run is lost to that race.

use std::ffi::c_char;
use std::sync::Mutex;

use panto_core::{QueueMode, RunControl, UserMessage};

use crate::agent::lock;
use crate::error::{panto_error, Failure};
use crate::guard::{handle, ErrOut};
use crate::run::panto_run;
use crate::status::PANTO_OK;

/// The run control of one run, before and after its stream exists.
#[derive(Debug, Default)]
pub(crate) struct ControlSlot {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    control: Option<RunControl>,
    early: Vec<(QueueMode, UserMessage)>,
    /// The run ended: later sends fail.
    ended: bool,
}

impl ControlSlot {
    /// The stream exists: hands it what was sent before.
    pub(crate) fn attach(&self, control: RunControl) {
        let mut inner = lock(&self.inner);
        for (mode, message) in inner.early.drain(..) {
            control.send(mode, message);
        }
        inner.control = Some(control);
    }

    /// The run is over (its end reported): later sends fail.
    pub(crate) fn end(&self) {
        lock(&self.inner).ended = true;
    }

    fn send(&self, mode: QueueMode, text: String) -> Result<(), Failure> {
        let mut inner = lock(&self.inner);
        let accepted = !inner.ended
            && match &inner.control {
                Some(control) => control.send(mode, UserMessage::text(text)),
                None => {
                    inner.early.push((mode, UserMessage::text(text)));
                    true
                }
            };
        if accepted {
            Ok(())
        } else {
            Err(Failure::state(
                "the run is over: its last turn has ended, so a message sent now would never be taken",
            ))
        }
    }
}

/// Steers the running turn: `text` joins the conversation at the next step boundary, as text
/// after the step's tool results (in the same user message), and the model sees it with the next
/// request; `PANTO_EVENT_STEER` reports when it joined. Sent while tools run, it waits for their
/// results. If the model answers without tools first, the text becomes a follow-up turn instead
/// (see `panto_run_follow_up`). Several steers join in the order they were sent.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_STATE` (the run's last turn has ended,
/// failed or was cancelled: nothing would take the text).
///
/// Ownership: `text` is copied. Thread safety: callable from any thread at any time, including
/// while another thread waits in `panto_run_next_event`, and from a tool callback.
///
/// # Safety
/// `run` must be NULL or a live run; `text` NULL or NUL-terminated; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_run_steer(run: *mut panto_run, text: *const c_char, err: *mut *mut panto_error) -> i32 {
    // SAFETY: the contract makes `run`, `text` and `err` valid as each function requires.
    unsafe { send(run, text, err, QueueMode::Steer) }
}

/// Queues `text` as a follow-up: when the current turn completes, a new turn with `text` as the
/// user's message starts on the same run, announced by `PANTO_EVENT_FOLLOW_UP_START` and ended
/// by its own `PANTO_EVENT_TURN_COMPLETE`. `panto_run_next_event` returns `PANTO_END` only after
/// the last queued turn. Follow-ups run in the order they were queued.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_STATE` (the run's last turn has ended,
/// failed or was cancelled).
///
/// Ownership: `text` is copied. Thread safety: as `panto_run_steer`.
///
/// # Safety
/// `run` must be NULL or a live run; `text` NULL or NUL-terminated; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_run_follow_up(
    run: *mut panto_run,
    text: *const c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `run`, `text` and `err` valid as each function requires.
    unsafe { send(run, text, err, QueueMode::FollowUp) }
}

/// # Safety
/// As the exports above.
unsafe fn send(run: *const panto_run, text: *const c_char, err: *mut *mut panto_error, mode: QueueMode) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    let err = unsafe { ErrOut::new(err) };
    err.guard(|| {
        // SAFETY: the contract makes `run` NULL or live.
        let run = unsafe { handle(run, "run") }?;
        // SAFETY: the contract makes `text` NULL or NUL-terminated.
        let text = unsafe { crate::cstr::arg(text, "text") }?;
        run.control().send(mode, text)?;
        Ok(PANTO_OK)
    })
}
