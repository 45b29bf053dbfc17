//! Tools implemented in C: a declaration plus a closure `{context, call, drop}`.
//!
//! `call` runs on a blocking thread of the runtime (never on an async worker, so a slow tool does
//! not stall streaming), possibly on several threads at once when the model calls tools in
//! parallel. `drop` runs exactly once, when the last owner of the tool is freed, and never while
//! a call is running: every running call holds a reference to the tool.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use panto_core::{is_tool_name, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError, MAX_TOOL_NAME_LEN};
use serde_json::Value;

use crate::error::{panto_error, Failure};
use crate::guard::{free, handle, ErrOut, HandOut, Handle};
use crate::status::PANTO_OK;

/// The C function that runs a tool call: `context` is the pointer given to `panto_tool_new`,
/// `input_json` the call's arguments as a JSON object (borrowed for the call), `result` where to
/// write the outcome with `panto_tool_result_set_text` (valid only until `call` returns).
#[allow(non_camel_case_types)]
pub type panto_tool_call_fn =
    Option<unsafe extern "C" fn(context: *mut c_void, input_json: *const c_char, result: *mut panto_tool_result)>;

/// The C function that releases a tool's `context`; runs once, after the last call.
#[allow(non_camel_case_types)]
pub type panto_tool_drop_fn = Option<unsafe extern "C" fn(context: *mut c_void)>;

/// A tool the model may call, implemented by C callbacks.
///
/// Ownership: created by `panto_tool_new`, freed by `panto_tool_free`. `panto_agent_add_tool`
/// gives the agent its own reference, so the tool may be freed right after registering it; the
/// `drop` callback runs when the tool handle and every agent holding the tool are freed. Thread
/// safety: may be registered on several agents, from any thread.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_tool {
    pub(crate) tool: Arc<CTool>,
}

impl Handle for panto_tool {}

/// Where a tool call writes its outcome. Only valid during the `call` callback it was passed to.
#[allow(non_camel_case_types)]
#[derive(Debug, Default)]
pub struct panto_tool_result {
    // A mutex, because the callback may hand the pointer to a helper thread of its own before it
    // returns.
    outcome: Mutex<Option<(String, bool)>>,
}

/// The C side of a tool: declaration and callbacks.
#[derive(Debug)]
pub(crate) struct CTool {
    decl: ToolDecl,
    context: Context,
    call: CallFn,
    drop: panto_tool_drop_fn,
}

/// A present call callback.
type CallFn = unsafe extern "C" fn(*mut c_void, *const c_char, *mut panto_tool_result);

/// The caller's opaque `context` pointer.
#[derive(Debug, Clone, Copy)]
struct Context(*mut c_void);

// SAFETY: libpanto never dereferences `context`; it only passes it back to the caller's own
// callbacks, and the documented contract of `panto_tool_new` requires those to accept calls from
// any thread, concurrently.
unsafe impl Send for Context {}
// SAFETY: as above: sharing the pointer value between threads is what the contract allows.
unsafe impl Sync for Context {}

impl CTool {
    /// Runs one call synchronously on the current thread and returns what the callback wrote.
    fn invoke(&self, input_json: &str) -> ToolCallResult {
        let input = crate::cstr::to_cstring(input_json);
        let result = panto_tool_result::default();
        // SAFETY: `call` is the caller's function, invoked with the context it registered, a
        // NUL-terminated input that outlives the call, and a result that outlives the call; the
        // contract of `panto_tool_new` makes the callback safe to call from this thread.
        unsafe { (self.call)(self.context.0, input.as_ptr(), std::ptr::from_ref(&result).cast_mut()) };
        let outcome = result.outcome.into_inner().unwrap_or_else(|e| e.into_inner());
        match outcome {
            Some((text, false)) => ToolCallResult::text(text),
            Some((text, true)) => ToolCallResult::error(text),
            None => ToolCallResult::error(format!(
                "tool {} returned no result (its C callback never called panto_tool_result_set_text)",
                self.decl.name
            )),
        }
    }
}

impl Drop for CTool {
    fn drop(&mut self) {
        if let Some(drop_fn) = self.drop {
            // SAFETY: the last reference to the tool is going away, so no call is running or can
            // start; `drop` receives the context it was registered with, exactly once.
            unsafe { drop_fn(self.context.0) };
        }
    }
}

/// A tool as one agent registers it: the C tool, and the agent's count of calls in flight (the
/// agent waits for it to reach zero before a run ends, so no callback outlives its run).
#[derive(Debug)]
pub(crate) struct AgentTool {
    pub(crate) tool: Arc<CTool>,
    pub(crate) inflight: Arc<tokio::sync::watch::Sender<usize>>,
}

/// Counts one call in flight until dropped.
struct InflightGuard(Arc<tokio::sync::watch::Sender<usize>>);

impl InflightGuard {
    fn enter(counter: &Arc<tokio::sync::watch::Sender<usize>>) -> Self {
        counter.send_modify(|n| *n += 1);
        InflightGuard(counter.clone())
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn declaration(&self) -> ToolDecl {
        self.tool.decl.clone()
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let input = call.input.to_string();
        let tool = self.tool.clone();
        let guard = InflightGuard::enter(&self.inflight);
        // A C call cannot be interrupted: if the turn is cancelled, the blocking task runs on,
        // holding `guard` and its reference to the tool until the callback returns.
        let joined = tokio::task::spawn_blocking(move || {
            let _guard = guard;
            tool.invoke(&input)
        })
        .await;
        match joined {
            Ok(result) => Ok(result),
            Err(e) => Err(format!("tool {} failed inside libpanto: {e}", self.tool.decl.name).into()),
        }
    }
}

/// Creates a tool the model may call.
///
/// - `name`: 1 to 64 characters of `[A-Za-z0-9_-]`.
/// - `description`: what the tool does, for the model.
/// - `schema_json`: the JSON schema of the input object, e.g.
///   `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`.
/// - `context`: any pointer, passed back to `call` and `drop`; libpanto never dereferences it.
/// - `call` (required): runs one call; see `panto_tool_call_fn`. It must write the outcome with
///   `panto_tool_result_set_text` before returning (a call that writes nothing becomes an error
///   result). An outcome flagged as an error is shown to the model as a failed tool call; the
///   turn goes on.
/// - `drop` (may be NULL): releases `context`; runs exactly once, after the last call, when the
///   tool handle and every agent holding the tool have been freed, on the thread that frees the
///   last of them.
///
/// Thread safety of the callbacks: `call` runs on libpanto's runtime threads, possibly several
/// calls at once (the model may call tools in parallel); `context` must allow that. Callbacks
/// must not call libpanto functions that block on the runtime (they fail with
/// `PANTO_ERR_STATE`), nor free the agent that is running them.
///
/// Errors: `PANTO_ERR_NULL` (a NULL string, `call` or `out`), `PANTO_ERR_UTF8`,
/// `PANTO_ERR_INVALID_ARGUMENT` (a name outside `[A-Za-z0-9_-]{1,64}`, a schema that is not a
/// JSON object with `"type": "object"`, naming the field). A name already taken on an agent is `PANTO_ERR_TOOL` from `panto_agent_add_tool`.
///
/// Ownership: the strings are copied during the call. `*out` receives an owned tool (only on success; on failure it is left as it was), freed with `panto_tool_free`. On failure `drop` is not called: `context` stays the
/// caller's. Thread safety: callable from any thread.
///
/// # Safety
/// The strings must be NULL or NUL-terminated; `call` and `drop` must be NULL or functions with
/// the documented signatures, safe to call from any thread with `context`; `out` and `err` NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_tool_new(
    name: *const c_char,
    description: *const c_char,
    schema_json: *const c_char,
    context: *mut c_void,
    call: panto_tool_call_fn,
    drop: panto_tool_drop_fn,
    out: *mut *mut panto_tool,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes the strings NULL or NUL-terminated.
        let (name, description, schema) = unsafe {
            (
                crate::cstr::arg(name, "name")?,
                crate::cstr::arg(description, "description")?,
                crate::cstr::arg(schema_json, "schema_json")?,
            )
        };
        let call = call.ok_or_else(|| Failure::null("call"))?;
        if !is_tool_name(&name) {
            return Err(Failure::invalid(format!(
                "tool name {name:?} must be 1 to {MAX_TOOL_NAME_LEN} characters of A-Z, a-z, 0-9, _ and -"
            )));
        }
        let input_schema: Value = serde_json::from_str(&schema)
            .map_err(|e| Failure::invalid(format!("schema_json of tool {name:?} is not JSON: {e}")))?;
        check_input_schema(&name, &input_schema)?;
        let tool = CTool {
            decl: ToolDecl {
                name,
                description,
                input_schema,
            },
            context: Context(context),
            call,
            drop,
        };
        Ok(panto_tool { tool: Arc::new(tool) })
    })
}

/// A tool's input is a JSON object, so its schema must be a JSON object whose `type` is
/// `"object"`: a provider refuses any other (`{"type":"string"}` would fail every request of the
/// agent holding the tool, far from the call that made it). The error names the field.
fn check_input_schema(name: &str, schema: &Value) -> Result<(), Failure> {
    let Some(members) = schema.as_object() else {
        return Err(Failure::invalid(format!(
            "schema_json of tool {name:?} must be a JSON object (a JSON schema), got {}",
            json_kind(schema)
        )));
    };
    match members.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(Failure::invalid(format!(
            "schema_json of tool {name:?}: field `type` must be \"object\" (a tool's input is a JSON object), got {}",
            json_kind(other)
        ))),
        None => Err(Failure::invalid(format!(
            "schema_json of tool {name:?}: field `type` is missing; it must be \"object\" (a tool's input is a JSON object)"
        ))),
    }
}

/// A JSON value as an error shows it: short values whole, longer ones by their kind.
fn json_kind(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        match value {
            Value::Object(_) => "an object".to_owned(),
            Value::Array(_) => "an array".to_owned(),
            Value::String(_) => "a long string".to_owned(),
            _ => text.chars().take(40).collect(),
        }
    }
}

/// Writes the outcome of a tool call: `text` is what the model sees; `is_error` is 0 for
/// success, 1 for a failure (any other value is `PANTO_ERR_INVALID_ARGUMENT`). Calling it again
/// replaces the earlier outcome.
///
/// Ownership: `text` is copied. Thread safety: callable from any thread while the `call`
/// callback that received `result` is running, never after it returns.
///
/// # Safety
/// `result` must be NULL or the handle passed to a `call` callback that has not returned yet;
/// `text` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_tool_result_set_text(
    result: *mut panto_tool_result,
    text: *const c_char,
    is_error: i32,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: the contract makes `result` NULL or live for the duration of this call, and
        // `text` NULL or NUL-terminated.
        let (result, text) = unsafe { (handle(result.cast_const(), "result")?, crate::cstr::arg(text, "text")?) };
        let is_error = match is_error {
            0 => false,
            1 => true,
            other => {
                return Err(Failure::invalid(format!(
                    "argument `is_error` must be 0 (success) or 1 (error), got {other}"
                )))
            }
        };
        *result.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some((text, is_error));
        Ok(PANTO_OK)
    })
}

/// Frees the caller's tool handle. Agents the tool was added to keep it; `drop` runs when the
/// last holder is freed. `panto_tool_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per tool.
///
/// # Safety
/// `tool` must be NULL or a tool from `panto_tool_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_tool_free(tool: *mut panto_tool) {
    // SAFETY: the caller gives up a live tool handle (or NULL).
    unsafe { free(tool) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn echo(_context: *mut c_void, input: *const c_char, result: *mut panto_tool_result) {
        // SAFETY: libpanto passes a live result and a NUL-terminated input.
        unsafe { panto_tool_result_set_text(result, input, 0, std::ptr::null_mut()) };
    }

    unsafe extern "C" fn silent(_context: *mut c_void, _input: *const c_char, _result: *mut panto_tool_result) {}

    unsafe extern "C" fn count_drop(_context: *mut c_void) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }

    fn make(call: CallFn, name: &std::ffi::CStr) -> Result<*mut panto_tool, i32> {
        let mut tool = std::ptr::null_mut();
        // SAFETY: literals, valid callbacks, local out-pointer.
        let status = unsafe {
            panto_tool_new(
                name.as_ptr(),
                c"echoes".as_ptr(),
                c"{\"type\":\"object\"}".as_ptr(),
                std::ptr::null_mut(),
                Some(call),
                Some(count_drop),
                &mut tool,
                std::ptr::null_mut(),
            )
        };
        if status == PANTO_OK {
            Ok(tool)
        } else {
            Err(status)
        }
    }

    #[test]
    fn invoke_returns_what_the_callback_wrote_and_drop_runs_once() {
        let before = DROPS.load(Ordering::SeqCst);
        let tool = make(echo, c"echo").unwrap();
        // SAFETY: `tool` is live until freed below.
        let shared = unsafe { (*tool).tool.clone() };
        assert_eq!(shared.invoke("{\"a\":1}"), ToolCallResult::text("{\"a\":1}"));
        // SAFETY: freed once.
        unsafe { panto_tool_free(tool) };
        assert_eq!(DROPS.load(Ordering::SeqCst), before, "the clone still holds the tool");
        drop(shared);
        assert_eq!(DROPS.load(Ordering::SeqCst), before + 1);

        let silent_tool = make(silent, c"quiet").unwrap();
        // SAFETY: live until freed below.
        let result = unsafe { (*silent_tool).tool.invoke("{}") };
        assert!(result.is_error);
        // SAFETY: freed once.
        unsafe { panto_tool_free(silent_tool) };
    }

    #[test]
    fn bad_names_are_rejected_before_anything_is_kept() {
        assert_eq!(
            make(echo, c"has space").unwrap_err(),
            crate::status::PANTO_ERR_INVALID_ARGUMENT
        );
        assert!(is_tool_name("get_weather-2"));
        assert!(!is_tool_name(&"x".repeat(65)));
    }
}
