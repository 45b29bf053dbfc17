//! panto's coding tools (`read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`) added to an
//! agent in one call, configured by JSON (panto-tools' `Options`).

use std::ffi::c_char;

use crate::agent::panto_agent;
use crate::error::{panto_error, Failure};
use crate::guard::{handle, ErrOut};
use crate::status::{PANTO_ERR_CONFIG, PANTO_ERR_TOOL, PANTO_OK};

/// Adds panto's built-in coding tools to the agent, configured by `options_json` (NULL or `{}`
/// for the defaults: every tool, working in the process's working directory, approval `auto`, no
/// sandbox). The fields, all optional: `cwd`, `tools` (e.g. `["read", "grep"]`), `approval`
/// (`"auto"` or `"read-only"`; `"ask"` refuses every call, as there is nobody to ask), `allow` and
/// `deny` (`TOOL` / `TOOL(GLOB)` rules), `bash_timeout_secs`, `max_output_bytes`, `read_roots`,
/// `sandbox` (`"off"`, `"read-only"`, `"workspace-write"`), `sandbox_network`, `writable_roots`,
/// `scrub_env` (variables kept from bash's environment besides the well-known key variables),
/// `web_fetch_private` (whether `web_fetch` may reach loopback and private addresses).
/// docs/tools.md says what each does.
///
/// Errors: `PANTO_ERR_NULL` (`agent`), `PANTO_ERR_UTF8`, `PANTO_ERR_CONFIG` (the options do not
/// parse, naming the field; a rule does not parse; a path does not exist; the sandbox was asked
/// for and this system cannot apply it, naming `"sandbox": "off"`), `PANTO_ERR_TOOL` (a tool of
/// that name is already registered), `PANTO_ERR_BUSY`. On error no tool was added.
///
/// Ownership: `options_json` is borrowed for the call only. Thread safety: callable from any
/// thread.
///
/// # Safety
/// `agent` must be NULL or a live agent; `options_json` NULL or a NUL-terminated string; `err`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_add_builtin_tools(
    agent: *mut panto_agent,
    options_json: *const c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    unsafe { ErrOut::new(err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent")? };
        let options = if options_json.is_null() {
            panto_tools::Options::default()
        } else {
            // SAFETY: the contract makes `options_json` NUL-terminated.
            let json = unsafe { crate::cstr::arg(options_json, "options_json") }?;
            panto_tools::Options::from_json(&json).map_err(|e| Failure::new(PANTO_ERR_CONFIG, e.to_string()))?
        };
        let tools = panto_tools::builtin(&options).map_err(|e| Failure::new(PANTO_ERR_CONFIG, e.to_string()))?;
        agent.shared.with_idle(|a| {
            let taken: Vec<String> = a.tools().into_iter().map(|d| d.name).collect();
            if let Some(clash) = tools.iter().map(|t| t.declaration().name).find(|n| taken.contains(n)) {
                return Err(Failure::new(
                    PANTO_ERR_TOOL,
                    format!("a tool named {clash} is already registered; no built-in tool was added"),
                ));
            }
            for tool in tools {
                a.register_tool(tool)?;
            }
            Ok(PANTO_OK)
        })
    })
}

/// Goes back to before the prompt stored as entry `entry_id`, like `panto_agent_rewind`, and puts
/// back the files the built-in `write` and `edit` tools changed since: each to its content at
/// that point, byte for byte; a file created since is removed. A file that changed outside panto
/// since panto last wrote it is left alone and reported. `options_json` is as for
/// `panto_agent_add_builtin_tools` (NULL or `{}` for the defaults): its `read_roots` and
/// `sandbox` bound where a restore may write.
///
/// `*json_out` receives a JSON array with one object per file, in the order they were first
/// changed: `{"path", "outcome"}` where `outcome` is `"restored"`, `"removed"`, `"unchanged"`,
/// `"changed_outside"` or `"failed"` (then with `"error"`); `[]` when no file changed.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, `PANTO_ERR_CONFIG` (the options), `PANTO_ERR_BUSY`,
/// `PANTO_ERR_STATE` (`entry_id` is not a prompt on the active branch, or the store keeps no
/// branches or checkpoints), store errors; then nothing was rewound and no file touched.
/// Ownership: `entry_id` and `options_json` are copied; `*json_out` receives an owned string
/// (only on success; on failure it is left as it was), freed with `panto_string_free`. Thread safety: callable from any thread;
/// blocks while files and the session are written. Not callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `entry_id` NULL or NUL-terminated; `options_json` NULL
/// or NUL-terminated; `json_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_rewind_files(
    agent: *mut panto_agent,
    entry_id: *const c_char,
    options_json: *const c_char,
    json_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `json_out` and `err` NULL or writable.
    unsafe { crate::guard::HandOut::required(json_out, "json_out", err) }.guard(|| {
        // SAFETY: the contract makes `agent` NULL or live and `entry_id` NULL or NUL-terminated.
        let (agent, entry) = unsafe { (handle(agent, "agent")?, crate::cstr::arg(entry_id, "entry_id")?) };
        let options = if options_json.is_null() {
            panto_tools::Options::default()
        } else {
            // SAFETY: the contract makes `options_json` NUL-terminated.
            let json = unsafe { crate::cstr::arg(options_json, "options_json") }?;
            panto_tools::Options::from_json(&json).map_err(|e| Failure::new(PANTO_ERR_CONFIG, e.to_string()))?
        };
        let toolbox = panto_tools::Toolbox::new(&options).map_err(|e| Failure::new(PANTO_ERR_CONFIG, e.to_string()))?;
        agent.shared.with_idle(|a| {
            let report = agent
                .rt
                .block_on("panto_agent_rewind_files", toolbox.rewind_with_files(a, &entry))??;
            serde_json::to_string(&report)
                .map_err(|e| Failure::state(format!("the report cannot be written as JSON: {e}")))
        })
    })
}
