//! `panto_agent`: one conversation with one model, its tools and its session.
//!
//! The Rust `Agent` is lent to a run for the length of a turn (`Stream` borrows it mutably). Over
//! the ABI the agent handle keeps it in a slot: idle (here), running (moved into the run's task,
//! which puts it back before the run reports its end), or gone (freed, or lost to a panic).

use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex, MutexGuard};

use panto_core::pricing::PricingRegistry;
use panto_core::store::LoadedBranch;
use panto_core::wire::ProviderIdentity;
use panto_core::{Agent, Conversation, Role, Usage};
use serde_json::json;

use crate::config::panto_config;
use crate::error::{panto_error, Failure};
use crate::guard::{handle, take, ErrOut, HandOut, Handle};
use crate::run::RunShared;
use crate::runtime::{in_runtime, Rt};
use crate::session::panto_session;
use crate::status::{PANTO_ERR_BUSY, PANTO_OK};
use crate::tool::{panto_tool, AgentTool};

/// Where the Rust agent is.
#[derive(Debug)]
pub(crate) enum Slot {
    /// Here, ready for a call.
    Idle(Box<Agent>),
    /// Lent to this run's task.
    Running(Arc<RunShared>),
    /// Back from this run's task, but the run's end has not been read (nor the run freed): the
    /// agent stays busy so that a turn that ended early (a refused connection) cannot be
    /// followed by another before the caller has seen how it ended.
    Ended(Box<Agent>, Arc<RunShared>),
    /// Freed, or lost; the text says which.
    Gone(&'static str),
}

impl Slot {
    /// The idle agent: `PANTO_ERR_BUSY` while it is lent to a run, `PANTO_ERR_STATE` once gone.
    pub(crate) fn idle(&mut self) -> Result<&mut Box<Agent>, Failure> {
        match self {
            Slot::Idle(agent) => Ok(agent),
            Slot::Running(_) | Slot::Ended(..) => Err(busy()),
            Slot::Gone(why) => Err(Failure::state(format!("the agent is unusable: {why}"))),
        }
    }

    /// Lends the idle agent to `run`, leaving the slot `Running(run)`; fails as [`Slot::idle`]
    /// does, leaving the slot as it was.
    pub(crate) fn lend(&mut self, run: Arc<RunShared>) -> Result<Box<Agent>, Failure> {
        self.idle()?;
        match std::mem::replace(self, Slot::Running(run)) {
            Slot::Idle(agent) => Ok(agent),
            // Not reached: the slot was checked idle under the same borrow. Put it back anyway
            // rather than panic.
            other => {
                *self = other;
                Err(busy())
            }
        }
    }

    /// `run`'s end has been read (or the run freed): an agent it handed back becomes idle.
    /// Called with the slot locked, and `released` is set under the same lock, so the
    /// run's task and its reader agree on who makes the agent idle.
    pub(crate) fn release(&mut self, run: &Arc<RunShared>) {
        run.mark_released();
        if matches!(self, Slot::Ended(_, ended) if Arc::ptr_eq(ended, run)) {
            if let Slot::Ended(agent, _) = std::mem::replace(self, Slot::Gone("it was lost while released")) {
                *self = Slot::Idle(agent);
            }
        }
    }
}

/// Usage and cost since the agent was made (including what a resumed conversation reports).
#[derive(Debug)]
struct Ledger {
    usage: Usage,
    /// Micro-cents; `None` once any message came from a model without known rates.
    cost: Option<u64>,
    wire: ProviderIdentity,
    pricing: PricingRegistry,
}

impl Ledger {
    fn add(&mut self, usage: &Usage) {
        self.usage.accumulate(usage);
        let cost = self.pricing.get(&self.wire).and_then(|p| p.cost(usage));
        self.cost = match (self.cost, cost) {
            (Some(total), Some(more)) => total.checked_add(more),
            _ => None,
        };
    }
}

/// What the agent handle shares with its runs' tasks.
#[derive(Debug)]
pub(crate) struct AgentShared {
    pub(crate) slot: Mutex<Slot>,
    ledger: Mutex<Ledger>,
    /// Tool calls of this agent still running on blocking threads.
    pub(crate) inflight: Arc<tokio::sync::watch::Sender<usize>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock is caught at the boundary and leaves consistent data (every
    // critical section here is a plain move or counter update); keep serving it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AgentShared {
    pub(crate) fn record_usage(&self, usage: &Usage) {
        lock(&self.ledger).add(usage);
    }

    /// Runs `f` on the idle agent, holding the slot: `PANTO_ERR_BUSY` during a run.
    pub(crate) fn with_idle<R>(&self, f: impl FnOnce(&mut Agent) -> Result<R, Failure>) -> Result<R, Failure> {
        let mut slot = lock(&self.slot);
        f(slot.idle()?)
    }
}

fn busy() -> Failure {
    Failure::new(
        PANTO_ERR_BUSY,
        "the agent has a live run; read it to PANTO_END (or cancel it) first",
    )
}

/// An agent: a conversation with one model, the tools it may call, and the session that
/// persists it.
///
/// Ownership: created by `panto_agent_new`, freed by `panto_agent_free`. Thread safety: every
/// function may be called from any thread; calls are serialised internally. While a run is live
/// (from `panto_agent_run` until its `panto_run_next_event` returns `PANTO_END` or an error, or
/// the run is freed) the agent belongs to the run, and functions that need it fail with
/// `PANTO_ERR_BUSY`; `panto_agent_usage_json` and `panto_agent_session_id` always work.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_agent {
    pub(crate) rt: Arc<Rt>,
    pub(crate) shared: Arc<AgentShared>,
    session_id: CString,
    /// The MCP servers added, whose read-only annotations the config's policy reads.
    pub(crate) sources: panto_tools::policy::SourceRegistry,
}

impl Handle for panto_agent {}

fn resumed_usage(conversation: &Conversation, ledger: &mut Ledger) {
    for message in &conversation.messages {
        if message.role == Role::Assistant {
            if let Some(usage) = &message.usage {
                ledger.add(usage);
            }
        }
    }
}

/// Creates an agent on `session` with `config`. A session that holds messages is resumed: the
/// agent starts from its stored conversation (an interrupted tool call gets an "interrupted"
/// result so the provider accepts the history). A new session starts empty.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_STORE` (the session cannot be read), `PANTO_ERR_OTHER`.
///
/// Ownership: `config` and `session` are borrowed for the call (the agent copies them). `*out`
/// receives an owned agent (only on success; on failure it is left as it was). Thread safety: callable from any thread; blocks
/// while the session loads. Not callable from inside a tool callback.
///
/// # Safety
/// `config` and `session` must be NULL or live handles; `out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_new(
    config: *const panto_config,
    session: *const panto_session,
    out: *mut *mut panto_agent,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes `config` and `session` NULL or live.
        let (config, session) = unsafe { (handle(config, "config")?, handle(session, "session")?) };
        let branch = session.rt.block_on(
            "panto_agent_new",
            session.session.store.load_branch(session.session.id()),
        )??;
        make_agent(
            config,
            session,
            branch.map(Start::Resumed).unwrap_or(Start::Empty),
            "panto_agent_new",
        )
    })
}

/// What an agent starts from.
pub(crate) enum Start {
    /// A new, empty conversation.
    Empty,
    /// The session's stored branch.
    Resumed(LoadedBranch),
    /// A conversation the caller gave for a session that holds none, written into it now (or,
    /// without an assistant message, with the first turn).
    Given(Conversation),
}

/// The agent handle on `session` with `config`, starting from `start`. `function` names the
/// export for the error of a call from a runtime thread.
pub(crate) fn make_agent(
    config: &panto_config,
    session: &panto_session,
    start: Start,
    function: &'static str,
) -> Result<panto_agent, Failure> {
    let policy = config.policy.clone();
    let config = config.config.clone();
    let rt = session.rt.clone();
    let stored = session.session.clone();
    let mut ledger = Ledger {
        usage: Usage::default(),
        cost: Some(0),
        wire: config.provider.wire_identity(),
        pricing: PricingRegistry::new(),
    };
    match &start {
        Start::Empty => {}
        Start::Resumed(branch) => resumed_usage(&branch.conversation, &mut ledger),
        Start::Given(conversation) => resumed_usage(conversation, &mut ledger),
    }
    let session_id = crate::cstr::to_cstring(stored.id());
    let given = matches!(start, Start::Given(_));
    let sources = panto_tools::policy::SourceRegistry::new();
    let agent = {
        // The HTTP client is built inside the runtime, where its resolver expects to live.
        let _entered = rt.handle()?.enter();
        let mut agent = match start {
            Start::Resumed(branch) => Agent::with_branch(config, stored, branch)?,
            Start::Empty => Agent::new(config, stored, None)?,
            Start::Given(conversation) => Agent::new(config, stored, Some(conversation))?,
        };
        // The config's policy, in front of every tool the agent will have.
        if let Some(policy) = &policy {
            policy.install(&mut agent, &sources);
        }
        agent
    };
    let mut agent = Box::new(agent);
    if given {
        // Written now when it holds an assistant message (a new session is written from its
        // first one on, as a run's would be); otherwise with the first turn.
        rt.block_on(function, agent.flush())??;
    }
    let (inflight, _) = tokio::sync::watch::channel(0usize);
    Ok(panto_agent {
        rt,
        shared: Arc::new(AgentShared {
            slot: Mutex::new(Slot::Idle(agent)),
            ledger: Mutex::new(ledger),
            inflight: Arc::new(inflight),
        }),
        session_id,
        sources,
    })
}

/// Frees an agent. A live run is cancelled first and this call waits for it to end, including
/// any tool callback still running; after it returns no callback of this agent runs. Tools whose
/// handles were already freed get their `drop` callback here. `panto_agent_free(NULL)` does
/// nothing. Freeing the agent from inside one of its own tool callbacks does not wait: the agent
/// is freed when that run ends.
///
/// Thread safety: callable from any thread, once per agent; never while another thread is still
/// using the handle.
///
/// # Safety
/// `agent` must be NULL or an agent from `panto_agent_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_free(agent: *mut panto_agent) {
    crate::guard::guard_void(|| {
        // SAFETY: the caller gives up a live agent handle (or NULL).
        let Some(agent) = (unsafe { take(agent) }) else {
            return;
        };
        loop {
            let mut slot = lock(&agent.shared.slot);
            match std::mem::replace(&mut *slot, Slot::Gone("it was freed")) {
                Slot::Idle(inner) | Slot::Ended(inner, _) => {
                    drop(slot);
                    // Dropping the agent may close connections and session files; do it with
                    // the runtime entered, as when they were made.
                    let _entered = agent.rt.handle().ok().map(tokio::runtime::Handle::enter);
                    drop(inner);
                    return;
                }
                Slot::Running(run) => {
                    *slot = Slot::Running(run.clone());
                    if in_runtime() {
                        // Waiting here would deadlock on our own callback: the run's task frees
                        // the agent when it ends.
                        run.free_agent_on_return();
                        drop(slot);
                        run.cancel();
                        return;
                    }
                    drop(slot);
                    run.cancel();
                    run.wait_done();
                }
                Slot::Gone(_) => return,
            }
        }
    })
}

/// Adds a tool the model may call on this agent's next turns. The agent keeps its own reference
/// to the tool: the tool handle may be freed at once.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_TOOL` (the name is taken), `PANTO_ERR_BUSY`.
///
/// Thread safety: callable from any thread.
///
/// # Safety
/// `agent` and `tool` must be NULL or live handles; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_add_tool(
    agent: *mut panto_agent,
    tool: *const panto_tool,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: the contract makes `agent` and `tool` NULL or live.
        let (agent, tool) = unsafe { (handle(agent, "agent")?, handle(tool, "tool")?) };
        let registered = Arc::new(AgentTool {
            tool: tool.tool.clone(),
            inflight: agent.shared.inflight.clone(),
        });
        agent.shared.with_idle(|a| {
            a.register_tool(registered)?;
            Ok(PANTO_OK)
        })
    })
}

/// Replaces the agent's configuration (provider, model, policies) between turns; tools and
/// conversation are kept.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_BUSY`. Ownership: `config` is copied. Thread safety:
/// callable from any thread.
///
/// # Safety
/// `agent` and `config` must be NULL or live handles; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_set_config(
    agent: *mut panto_agent,
    config: *const panto_config,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: the contract makes `agent` and `config` NULL or live.
        let (agent, config) = unsafe { (handle(agent, "agent")?, handle(config, "config")?) };
        let config = config.config.clone();
        let wire = config.provider.wire_identity();
        agent.shared.with_idle(|a| {
            a.set_config(config);
            lock(&agent.shared.ledger).wire = wire;
            Ok(PANTO_OK)
        })
    })
}

/// The conversation as JSON: `{"messages": [{"role", "content": [blocks...], "usage"?,
/// "stop_reason"?, "metadata"?}...], "metadata"?}` (block shapes in docs/ffi.md).
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_BUSY`. Ownership: `*json_out` receives an owned string
/// (only on success; on failure it is left as it was), freed with `panto_string_free`. Thread safety: callable from any thread.
///
/// # Safety
/// `agent` must be NULL or a live agent; `json_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_conversation_json(
    agent: *const panto_agent,
    json_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `json_out` and `err` NULL or writable.
    unsafe { HandOut::required(json_out, "json_out", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent") }?;
        agent.shared.with_idle(|a| {
            serde_json::to_string(a.conversation())
                .map_err(|e| Failure::state(format!("the conversation cannot be written as JSON: {e}")))
        })
    })
}

/// The entry id of each message of the conversation, index for index, as a JSON array of strings
/// (`null` for a message not stored yet): the ids `panto_agent_rewind` and `panto_session_fork`
/// take. Ids are the store's, stable for the session's life and kept by a fork.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_BUSY`. Ownership: `*json_out` receives an owned string
/// (only on success; on failure it is left as it was), freed with `panto_string_free`. Thread safety: callable from any thread.
///
/// # Safety
/// `agent` must be NULL or a live agent; `json_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_message_ids_json(
    agent: *const panto_agent,
    json_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `json_out` and `err` NULL or writable.
    unsafe { HandOut::required(json_out, "json_out", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent") }?;
        agent.shared.with_idle(|a| {
            let count = a.conversation().messages.len();
            let ids: Vec<Option<&str>> = (0..count).map(|i| a.message_id(i)).collect();
            Ok(json!(ids).to_string())
        })
    })
}

/// Goes back to before the prompt stored as entry `entry_id`: the conversation becomes what it
/// was when that prompt was sent and the next run starts a new branch there; the abandoned
/// branch stays in the session's log.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_BUSY`, `PANTO_ERR_STATE` (`entry_id` is
/// not a prompt on the active branch, or the store keeps no branches), store errors. Ownership:
/// `entry_id` is copied. Thread safety: callable from any thread; blocks while the session is
/// written. Not callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `entry_id` NULL or NUL-terminated; `err` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_rewind(
    agent: *mut panto_agent,
    entry_id: *const c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live and `entry_id` NULL or NUL-terminated.
        let (agent, entry) = unsafe { (handle(agent, "agent")?, crate::cstr::arg(entry_id, "entry_id")?) };
        agent.shared.with_idle(|a| {
            agent.rt.block_on("panto_agent_rewind", a.rewind(&entry))??;
            Ok(PANTO_OK)
        })
    })
}

/// Shared body of the system-prompt functions.
///
/// # Safety
/// As for `panto_agent_add_system_message`.
unsafe fn system(
    agent: *const panto_agent,
    text: *const c_char,
    err: *mut *mut panto_error,
    function: &'static str,
    replace: bool,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: forwarded contract.
        let (agent, text) = unsafe { (handle(agent, "agent")?, crate::cstr::arg(text, "text")?) };
        agent.shared.with_idle(|a| {
            if replace {
                agent.rt.block_on(function, a.set_system_prompt(text))??;
            } else {
                agent.rt.block_on(function, a.add_system_message(text))??;
            }
            Ok(PANTO_OK)
        })
    })
}

/// Appends `text` to the system prompt, and persists the change.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_BUSY`, store errors. Ownership: `text`
/// is copied. Thread safety: callable from any thread; blocks while the session is written. Not
/// callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `text` NULL or NUL-terminated; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_add_system_message(
    agent: *mut panto_agent,
    text: *const c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { system(agent, text, err, "panto_agent_add_system_message", false) }
}

/// Replaces the whole system prompt with `text`, and persists the change.
///
/// Errors, ownership and thread safety: as `panto_agent_add_system_message`.
///
/// # Safety
/// `agent` must be NULL or a live agent; `text` NULL or NUL-terminated; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_set_system_prompt(
    agent: *mut panto_agent,
    text: *const c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: forwarded contract.
    unsafe { system(agent, text, err, "panto_agent_set_system_prompt", true) }
}

/// Summarises the older part of the conversation (a request to the current model) and persists
/// the result. `prompt` (may be NULL) replaces the configured summary instruction for this call;
/// `extra_instructions` (may be NULL) is appended to the request.
///
/// `*result_json` (if `result_json` is not NULL) receives an owned JSON object `{"summary",
/// "tokens_before", "tokens_after", "messages_summarized", "messages_kept", "usage"}` (`usage`:
/// the summary request's, or null), freed with `panto_string_free`.
///
/// Errors: `PANTO_ERR_STATE` (nothing to compact), `PANTO_ERR_PROVIDER`, `PANTO_ERR_BUSY`, store
/// errors; on error nothing changes. Ownership: the strings are copied. Thread safety: callable
/// from any thread; blocks for the request. Not callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `prompt` and `extra_instructions` NULL or
/// NUL-terminated; `result_json` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_compact(
    agent: *mut panto_agent,
    prompt: *const c_char,
    extra_instructions: *const c_char,
    result_json: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `result_json` and `err` NULL or writable.
    unsafe { HandOut::optional(result_json, "result_json", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent") }?;
        // SAFETY: the contract makes both strings NULL or NUL-terminated.
        let (prompt, extra) = unsafe {
            (
                crate::cstr::opt_arg(prompt, "prompt")?,
                crate::cstr::opt_arg(extra_instructions, "extra_instructions")?,
            )
        };
        let result = agent.shared.with_idle(|a| {
            Ok(agent
                .rt
                .block_on("panto_agent_compact", a.compact(prompt.as_deref(), extra.as_deref()))??)
        })?;
        let json = json!({
            "summary": result.summary,
            "tokens_before": result.tokens_before,
            "tokens_after": result.tokens_after,
            "messages_summarized": result.messages_summarized,
            "messages_kept": result.messages_kept,
            "usage": result.usage,
        });
        Ok(json.to_string())
    })
}

/// The agent's session id (NULL when `agent` is NULL).
///
/// Ownership: borrowed from `agent`; valid until `panto_agent_free(agent)`. Thread safety:
/// callable from any thread, also during a run.
///
/// # Safety
/// `agent` must be NULL or a live agent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_session_id(agent: *const panto_agent) -> *const c_char {
    crate::guard::guard_or(std::ptr::null(), || {
        // SAFETY: the contract makes `agent` NULL or live.
        unsafe { agent.as_ref() }.map_or(std::ptr::null(), |a| a.session_id.as_ptr())
    })
}

/// Token usage and cost so far, as JSON: `{"input_tokens", "output_tokens",
/// "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens", "reasoning_tokens",
/// "cost_micro_cents"}` summed over the resumed conversation and every message since
/// (`reasoning_tokens` are part of `output_tokens`). `cost_micro_cents` (millionths of a US cent) is null
/// when a message came from a model without built-in rates.
///
/// Ownership: `*json_out` receives an owned string (only on success; on failure it is left as it was), freed with
/// `panto_string_free`. Thread safety: callable from any thread, also during a run (it then
/// includes the messages completed so far).
///
/// # Safety
/// `agent` must be NULL or a live agent; `json_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_usage_json(
    agent: *const panto_agent,
    json_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `json_out` and `err` NULL or writable.
    unsafe { HandOut::required(json_out, "json_out", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent") }?;
        let ledger = lock(&agent.shared.ledger);
        let json = json!({
            "input_tokens": ledger.usage.input_tokens,
            "output_tokens": ledger.usage.output_tokens,
            "cache_read_tokens": ledger.usage.cache_read_tokens,
            "cache_write_tokens": ledger.usage.cache_write_tokens,
            "cache_write_1h_tokens": ledger.usage.cache_write_1h_tokens,
            "reasoning_tokens": ledger.usage.reasoning_tokens,
            "cost_micro_cents": ledger.cost,
        });
        Ok(json.to_string())
    })
}
