//! `panto_run`: one turn (and the follow-up turns queued on it), driven by a task on the runtime
//! and read as a queue of events.
//!
//! The task owns the Rust agent for the turn (the Rust `Stream` borrows it mutably), forwards
//! each event over a channel, waits for every tool callback it started, puts the agent back in
//! its handle's slot, and only then reports the end. So when `panto_run_next_event` returns
//! `PANTO_END` (or the turn's error), the agent is idle again and no callback is running.

use std::ffi::c_char;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use panto_core::{Agent, CancellationToken, Event, UserMessage};

use crate::agent::{lock, panto_agent, AgentShared, Slot};
use crate::control::ControlSlot;
use crate::error::{panto_error, Failure};
use crate::event::panto_event;
use crate::guard::{free, handle, ErrOut, HandOut, Handle, Made};
use crate::runtime::{in_runtime, Rt};
use crate::status::{PANTO_END, PANTO_OK, PANTO_TIMEOUT};

/// What the run's task sends.
#[derive(Debug)]
enum Item {
    Event(panto_event),
    /// The turn ended normally.
    Done,
    /// The turn failed (or was cancelled).
    Failed(Failure),
}

/// What a run shares between its handle, its task and its agent's handle.
#[derive(Debug, Default)]
pub(crate) struct RunShared {
    cancel: CancellationToken,
    done: Mutex<bool>,
    done_signal: Condvar,
    free_agent_on_return: AtomicBool,
    /// The run's end has been read, or the run freed (set under the agent's slot lock).
    released: AtomicBool,
    /// Steers and follow-ups sent to the run (control.rs).
    control: ControlSlot,
}

impl RunShared {
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Asks the task to free the agent instead of returning it to its (freed) handle.
    pub(crate) fn free_agent_on_return(&self) {
        self.free_agent_on_return.store(true, Ordering::SeqCst);
    }

    /// Blocks until the task has given the agent back (or freed it).
    pub(crate) fn wait_done(&self) {
        let mut done = lock(&self.done);
        while !*done {
            done = self.done_signal.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(crate) fn mark_released(&self) {
        self.released.store(true, Ordering::SeqCst);
    }

    fn mark_done(&self) {
        *lock(&self.done) = true;
        self.done_signal.notify_all();
    }
}

/// Gives the agent back to its handle when the task ends, however it ends: normally, by a panic,
/// or dropped by a runtime that shuts down.
struct ReturnGuard {
    shared: Arc<AgentShared>,
    run: Arc<RunShared>,
    agent: Option<Box<Agent>>,
    poisoned: bool,
}

impl Drop for ReturnGuard {
    fn drop(&mut self) {
        let agent = self.agent.take();
        let mut slot = lock(&self.shared.slot);
        let to_drop = if self.run.free_agent_on_return.load(Ordering::SeqCst) {
            *slot = Slot::Gone("it was freed");
            agent
        } else if self.poisoned {
            *slot = Slot::Gone("it was lost to an internal panic during a run");
            agent
        } else {
            match agent {
                Some(agent) if self.run.released.load(Ordering::SeqCst) => {
                    *slot = Slot::Idle(agent);
                    None
                }
                // Busy until the end is read (Slot::release).
                Some(agent) => {
                    *slot = Slot::Ended(agent, self.run.clone());
                    None
                }
                None => {
                    *slot = Slot::Gone("it was lost during a run");
                    None
                }
            }
        };
        drop(slot);
        drop(to_drop);
        self.run.mark_done();
    }
}

/// The task of one run.
async fn run_task(
    shared: Arc<AgentShared>,
    run: Arc<RunShared>,
    agent: Box<Agent>,
    prompt: Option<String>,
    events: Sender<Item>,
) {
    let mut guard = ReturnGuard {
        shared: shared.clone(),
        run: run.clone(),
        agent: Some(agent),
        poisoned: false,
    };
    let Some(agent) = guard.agent.as_deref_mut() else {
        return;
    };
    let caught = AssertUnwindSafe(drive(agent, &shared, &run, prompt, &events))
        .catch_unwind()
        .await;
    let outcome = caught.unwrap_or_else(|payload| {
        guard.poisoned = true;
        Err(Failure::panic(&*payload))
    });
    // The agent goes back before the end is reported, so the caller can start the next turn as
    // soon as it reads the end (not before: it stays busy until then, see Slot::Ended).
    drop(guard);
    run.control.end();
    let last = match outcome {
        Ok(()) => Item::Done,
        Err(failure) => Item::Failed(failure),
    };
    // The handle may be gone already (freed mid-turn); nobody is left to tell.
    let _ = events.send(last);
}

/// Streams one turn into `events` (with `prompt` as the user's message, or `None` to retry the
/// conversation as it stands), then waits for tool callbacks still running.
async fn drive(
    agent: &mut Agent,
    shared: &AgentShared,
    run: &RunShared,
    prompt: Option<String>,
    events: &Sender<Item>,
) -> Result<(), Failure> {
    let outcome = {
        let mut stream = match prompt {
            Some(text) => agent.run(UserMessage::text(text)),
            None => agent.retry()?,
        };
        run.control.attach(stream.control());
        let turn = stream.cancel_token();
        let requested = run.cancel.clone();
        let link = tokio::spawn(async move {
            requested.cancelled().await;
            turn.cancel();
        });
        let outcome = loop {
            match stream.next().await {
                Ok(Some(event)) => {
                    if let Event::MessageComplete { usage: Some(usage), .. } = &event {
                        shared.record_usage(usage);
                    }
                    if let Some(event) = panto_event::from_core(&event) {
                        // A freed handle stops reading; the turn still ends cleanly.
                        let _ = events.send(Item::Event(event));
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(Failure::from(e)),
            }
        };
        link.abort();
        outcome
    };
    // A cancelled turn leaves C tool calls running on blocking threads (they cannot be
    // interrupted); the run is not over until they return.
    let mut inflight = shared.inflight.subscribe();
    let _ = inflight.wait_for(|n| *n == 0).await;
    outcome
}

/// A live turn.
///
/// Ownership: created by `panto_agent_run`, freed by `panto_run_free`. Thread safety:
/// `panto_run_next_event` may be called from any thread, one call at a time (concurrent calls
/// wait for each other); `panto_run_cancel` from any thread at any time, also while another
/// thread waits in `panto_run_next_event`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_run {
    /// Keeps the runtime alive while the run exists.
    _rt: Arc<Rt>,
    run: Arc<RunShared>,
    /// The agent's slot, released when the end is read or the run freed.
    agent: Arc<AgentShared>,
    events: Mutex<Receiver<Item>>,
    finished: AtomicBool,
}

impl Handle for panto_run {}

impl panto_run {
    pub(crate) fn control(&self) -> &ControlSlot {
        &self.run.control
    }

    /// The end has been read: the turn is over for the caller, and the agent is theirs again.
    fn finish(&self) {
        self.finished.store(true, Ordering::SeqCst);
        lock(&self.agent.slot).release(&self.run);
    }
}

/// Freeing a run ends its turn first: the turn is cancelled and, outside the runtime, waited for
/// (tool callbacks included), so the agent is idle once the run is gone. Inside the runtime (a
/// tool callback frees the run) waiting would deadlock; the turn then ends on its own.
impl Drop for panto_run {
    fn drop(&mut self) {
        self.run.cancel();
        if !in_runtime() {
            self.run.wait_done();
        }
        lock(&self.agent.slot).release(&self.run);
    }
}

/// Starts a turn: sends `text` as the user's message and streams the model's answer, running
/// tools as the model calls them, until the model ends its turn. Read the events with
/// `panto_run_next_event`.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_BUSY` (the agent already has a run
/// whose end has not been read with `panto_run_next_event`, nor the run freed, even when that
/// run has already failed). Provider and store failures are reported by `panto_run_next_event`.
/// A turn that fails keeps `text` in the conversation (and the session): retry it with
/// `panto_agent_retry`, which does not send it again.
///
/// Ownership: `text` is copied. `*run` receives an owned run (only on success; on failure it is left as it was), freed with
/// `panto_run_free`. The run may outlive its agent: freeing the agent first cancels the run,
/// which then reports `PANTO_ERR_CANCELLED`. Thread safety: callable from any thread.
///
/// # Safety
/// `agent` must be NULL or a live agent; `text` NULL or NUL-terminated; `run` and `err` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_run(
    agent: *mut panto_agent,
    text: *const c_char,
    run: *mut *mut panto_run,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `run` and `err` NULL or writable.
    unsafe { HandOut::required(run, "run", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent") }?;
        // SAFETY: the contract makes `text` NULL or NUL-terminated.
        let text = unsafe { crate::cstr::arg(text, "text") }?;
        start(agent, Some(text))
    })
}

/// Lends the idle agent to a new run's task: a turn with `prompt`, or a retry.
fn start(agent: &panto_agent, prompt: Option<String>) -> Result<panto_run, Failure> {
    let runtime = agent.rt.handle()?.clone();
    let shared = Arc::new(RunShared::default());
    let inner = {
        let mut slot = lock(&agent.shared.slot);
        if prompt.is_none() && !slot.idle()?.conversation().awaits_answer() {
            return Err(Failure::from(panto_core::Error::NothingToRetry));
        }
        slot.lend(shared.clone())?
    };
    let (sender, receiver) = std::sync::mpsc::channel();
    runtime.spawn(run_task(agent.shared.clone(), shared.clone(), inner, prompt, sender));
    Ok(panto_run {
        _rt: agent.rt.clone(),
        run: shared,
        agent: agent.shared.clone(),
        events: Mutex::new(receiver),
        finished: AtomicBool::new(false),
    })
}

/// Retries the last turn when it failed, without sending its user message again: a failed turn
/// (a provider error, the step limit, a cancel) leaves its user message, and any tool results,
/// in the conversation and in the session, so `panto_agent_run` with the same text would put the
/// prompt in the conversation twice. The new run asks the model again from where the
/// conversation stands and is read like any other run.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_BUSY` (a live run, or its end not read yet),
/// `PANTO_ERR_STATE` ("nothing to retry": the conversation ends with the model's answer, even a
/// partial one kept from a cut stream, or is empty; send a new message with `panto_agent_run`).
///
/// Ownership: `*run` receives an owned run (only on success; on failure it is left as it was), freed with `panto_run_free`.
/// Thread safety: callable from any thread.
///
/// # Safety
/// `agent` must be NULL or a live agent; `run` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_retry(
    agent: *mut panto_agent,
    run: *mut *mut panto_run,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `run` and `err` NULL or writable.
    unsafe { HandOut::required(run, "run", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent") }?;
        start(agent, None)
    })
}

/// Waits up to `timeout_ms` milliseconds for the turn's next event (0: do not wait; negative:
/// wait as long as it takes).
///
/// Returns `PANTO_OK` with `*event` set to an owned event (free it with `panto_event_free`),
/// `PANTO_TIMEOUT` when nothing came in time (call again), `PANTO_END` when the run is over
/// (after the last turn's `PANTO_EVENT_TURN_COMPLETE`: each turn, follow-ups included, ends
/// with its own, and a follow-up turn starts with `PANTO_EVENT_FOLLOW_UP_START`; and on every
/// call after an error), `PANTO_ERR_NULL` (a
/// NULL `run` or `event`), or the turn's error: `PANTO_ERR_PROVIDER` (the provider failed after
/// retries), `PANTO_ERR_STORE` (the session could not be written), `PANTO_ERR_SESSION_IN_USE`,
/// `PANTO_ERR_CONFIG` (a header or key that is not a valid HTTP header), `PANTO_ERR_INVALID_ARGUMENT`
/// (an image a tool returned cannot be decoded), `PANTO_ERR_STATE` (the step limit, or "nothing
/// to retry"), `PANTO_ERR_CANCELLED` after `panto_run_cancel` or when the agent was freed,
/// `PANTO_ERR_PANIC`, `PANTO_ERR_OTHER`. Once this returns `PANTO_END` or an error,
/// the agent is idle again and none of its tool callbacks is running.
///
/// Ownership: `*event` receives an event only when `PANTO_OK` is returned; otherwise it is left as it was. Thread safety: callable from any
/// thread; concurrent calls on one run are serialised.
///
/// # Safety
/// `run` must be NULL or a live run; `event` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_run_next_event(
    run: *mut panto_run,
    timeout_ms: i64,
    event: *mut *mut panto_event,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `event` and `err` NULL or writable.
    unsafe { HandOut::required(event, "event", err) }.guard_status(|| {
        // SAFETY: the contract makes `run` NULL or live.
        let run = unsafe { handle(run, "run") }?;
        if run.finished.load(Ordering::SeqCst) {
            return Ok(Made::Status(PANTO_END));
        }
        let received = {
            let events = lock(&run.events);
            match u64::try_from(timeout_ms) {
                Err(_) => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Ok(0) => events.try_recv().map_err(|e| match e {
                    TryRecvError::Empty => RecvTimeoutError::Timeout,
                    TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                }),
                Ok(ms) => events.recv_timeout(Duration::from_millis(ms)),
            }
        };
        match received {
            Ok(Item::Event(e)) => Ok(Made::Value(e)),
            Ok(Item::Done) => {
                run.finish();
                Ok(Made::Status(PANTO_END))
            }
            Ok(Item::Failed(failure)) => {
                run.finish();
                Err(failure)
            }
            Err(RecvTimeoutError::Timeout) => Ok(Made::Status(PANTO_TIMEOUT)),
            Err(RecvTimeoutError::Disconnected) => {
                run.finish();
                Err(Failure::state(
                    "the run ended without reporting how (its runtime shut down)",
                ))
            }
        }
    })
}

/// Cancels the turn: the HTTP request is aborted, running tools are told to stop (a C callback
/// already running finishes first), what the model had streamed is kept and persisted, and
/// `panto_run_next_event` then returns `PANTO_ERR_CANCELLED`. Cancelling a finished run does
/// nothing. Separate from `panto_run_free`: the run handle stays valid.
///
/// Returns `PANTO_OK`, or `PANTO_ERR_NULL` when `run` is NULL. Thread safety: callable from any
/// thread at any time, including while another thread waits in `panto_run_next_event`, and from
/// a tool callback.
///
/// # Safety
/// `run` must be NULL or a live run.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_run_cancel(run: *mut panto_run) -> i32 {
    // SAFETY: no error out-parameter.
    let err = unsafe { ErrOut::new(std::ptr::null_mut()) };
    err.guard(|| {
        // SAFETY: the contract makes `run` NULL or live.
        let run = unsafe { handle(run, "run") }?;
        run.run.cancel();
        Ok(PANTO_OK)
    })
}

/// Frees a run. A turn still going is cancelled, and this call waits until it has ended (tool
/// callbacks included), so the agent is idle when it returns. Events not read are dropped.
/// `panto_run_free(NULL)` does nothing. From inside a tool callback it cancels without waiting.
///
/// Thread safety: callable from any thread, once per run; never while another thread is inside
/// `panto_run_next_event` on it.
///
/// # Safety
/// `run` must be NULL or a run from `panto_agent_run` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_run_free(run: *mut panto_run) {
    // SAFETY: the caller gives up a run handle not yet freed (or NULL).
    unsafe { free(run) }
}
