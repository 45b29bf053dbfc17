//! The C ABI driven from Rust against the mock LLM server: a turn with a tool whose result goes
//! back to the model, a busy agent, and a cancel from another thread. (The C and Go programs in
//! tests/ cover the same ground from the other side; these run with `cargo test`.)

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use panto::*;
use panto_testkit::{script, MockServer, Reply};

/// A mock server on its own runtime (libpanto has its own, as a C program would).
struct Mock {
    server: MockServer,
    _runtime: tokio::runtime::Runtime,
}

fn mock() -> Mock {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the mock");
    let server = runtime.block_on(MockServer::start());
    Mock {
        server,
        _runtime: runtime,
    }
}

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL in test strings")
}

/// Panics with the error's message unless `status` is PANTO_OK.
fn ok(status: i32, err: *mut panto_error) {
    if status != PANTO_OK {
        // SAFETY: a failed call hands back a live error (or NULL), freed here.
        let message = unsafe { CStr::from_ptr(panto_error_message(err)) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        unsafe { panto_error_free(err) };
        panic!("status {status}: {message}");
    }
}

/// An agent on a null store, configured for `mock`.
fn agent(mock: &Mock) -> (*mut panto_runtime, *mut panto_agent) {
    let mut err = null_mut();
    let mut rt = null_mut();
    let json = c(&format!(
        r#"{{"provider": {{"api_style": "anthropic-messages", "base_url": "{}", "model": "claude-sonnet-4-5",
             "api_key": "k"}}, "retry": {{"max_attempts": 1}}, "compaction": {{"enabled": false}}}}"#,
        mock.server.anthropic_base_url()
    ));
    // SAFETY: every pointer is a live local or a handle made just before; each handle but the
    // runtime and agent is freed once, right after use.
    unsafe {
        ok(panto_runtime_new(2, &mut rt, &mut err), err);
        let mut config = null_mut();
        ok(panto_config_new_json(json.as_ptr(), &mut config, &mut err), err);
        let mut store = null_mut();
        ok(panto_store_new_null(rt, &mut store, &mut err), err);
        let mut session = null_mut();
        ok(panto_session_create(store, &mut session, &mut err), err);
        let mut agent = null_mut();
        ok(panto_agent_new(config, session, &mut agent, &mut err), err);
        panto_session_free(session);
        panto_store_free(store);
        panto_config_free(config);
        (rt, agent)
    }
}

/// Reads `run` to its end: the event kinds, and the final status with its message. Every
/// event's JSON is checked against docs/events.schema.json.
fn drain(run: *mut panto_run) -> (Vec<i32>, i32, String) {
    let mut kinds = Vec::new();
    loop {
        let mut event = null_mut();
        let mut err = null_mut();
        // SAFETY: `run` is live; the outputs are locals; each event and error is freed once.
        unsafe {
            match panto_run_next_event(run, 5_000, &mut event, &mut err) {
                PANTO_OK => {
                    let json = CStr::from_ptr(panto_event_json(event)).to_str().expect("UTF-8 JSON");
                    let json: serde_json::Value = serde_json::from_str(json).expect("event JSON");
                    panto_testkit::assert_event(&json);
                    kinds.push(panto_event_kind(event));
                    panto_event_free(event);
                }
                PANTO_TIMEOUT => panic!("no event within 5 s"),
                status => {
                    let message = CStr::from_ptr(panto_error_message(err)).to_string_lossy().into_owned();
                    panto_error_free(err);
                    return (kinds, status, message);
                }
            }
        }
    }
}

static CALLS: AtomicUsize = AtomicUsize::new(0);
static DROPS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn shout(_context: *mut c_void, input: *const c_char, result: *mut panto_tool_result) {
    CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: libpanto passes a NUL-terminated input that lives for the call.
    let input = unsafe { CStr::from_ptr(input) }.to_string_lossy().to_uppercase();
    let text = c(&input);
    // SAFETY: `result` is live during the call; `text` outlives the call that copies it.
    unsafe { panto_tool_result_set_text(result, text.as_ptr(), 0, null_mut()) };
}

unsafe extern "C" fn count_drop(_context: *mut c_void) {
    DROPS.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_tool_call_goes_to_c_and_its_result_back_to_the_model() {
    let mock = mock();
    mock.server.push(Reply::sse(script::anthropic_tool_uses(&[(
        "toolu_1",
        "shout",
        r#"{"word":"hi"}"#,
    )])));
    mock.server.push(Reply::sse(script::anthropic_text("Done.")));
    let (rt, agent) = agent(&mock);
    let mut err = null_mut();
    // SAFETY: live handles and locals; each handle is freed once.
    unsafe {
        let mut tool = null_mut();
        let (name, description, schema) = (c("shout"), c("Upper-cases."), c(r#"{"type":"object"}"#));
        ok(
            panto_tool_new(
                name.as_ptr(),
                description.as_ptr(),
                schema.as_ptr(),
                null_mut(),
                Some(shout),
                Some(count_drop),
                &mut tool,
                &mut err,
            ),
            err,
        );
        ok(panto_agent_add_tool(agent, tool, &mut err), err);
        panto_tool_free(tool);

        let mut run = null_mut();
        let prompt = c("Shout hi");
        ok(panto_agent_run(agent, prompt.as_ptr(), &mut run, &mut err), err);
        let (kinds, status, message) = drain(run);
        assert_eq!(status, PANTO_END, "{message}");
        assert!(kinds.contains(&PANTO_EVENT_TOOL_START) && kinds.contains(&PANTO_EVENT_TOOL_COMPLETE));
        assert_eq!(kinds.last(), Some(&PANTO_EVENT_TURN_COMPLETE));
        panto_run_free(run);

        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        let requests = mock.server.requests();
        assert_eq!(requests.len(), 2);
        let second = String::from_utf8_lossy(&requests[1].body).into_owned();
        assert!(
            second.contains(r#"{\"WORD\":\"HI\"}"#),
            "the tool's result is missing: {second}"
        );
        assert_eq!(requests[1].validation, None);

        assert_eq!(
            DROPS.load(Ordering::SeqCst),
            0,
            "dropped while the agent holds the tool"
        );
        panto_agent_free(agent);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        panto_runtime_free(rt);
    }
}

/// Cancels `run` from another thread after 100 ms; join it before freeing the run.
fn cancel_later(run: *mut panto_run) -> std::thread::JoinHandle<i32> {
    let address = run as usize;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: the caller frees the run only after joining this thread.
        unsafe { panto_run_cancel(address as *mut panto_run) }
    })
}

#[test]
fn a_cancel_from_another_thread_ends_the_run_and_frees_the_agent() {
    let mock = mock();
    mock.server.push(Reply::hang());
    let (rt, agent) = agent(&mock);
    let mut err = null_mut();
    // SAFETY: live handles and locals; each handle is freed once; the run outlives the thread
    // that cancels it (joined before the free).
    unsafe {
        let mut run = null_mut();
        let prompt = c("Hello?");
        ok(panto_agent_run(agent, prompt.as_ptr(), &mut run, &mut err), err);

        let mut second = null_mut();
        assert_eq!(
            panto_agent_run(agent, prompt.as_ptr(), &mut second, null_mut()),
            PANTO_ERR_BUSY
        );
        assert!(second.is_null());

        let canceller = cancel_later(run);
        let (_, status, message) = drain(run);
        assert_eq!(canceller.join().expect("the canceller"), PANTO_OK);
        assert_eq!((status, message.as_str()), (PANTO_ERR_CANCELLED, "turn cancelled"));
        let mut event = null_mut();
        assert_eq!(panto_run_next_event(run, 0, &mut event, null_mut()), PANTO_END);
        panto_run_free(run);

        // The agent is idle again.
        let mut json = null_mut();
        ok(panto_agent_conversation_json(agent, &mut json, &mut err), err);
        let conversation = CStr::from_ptr(json).to_string_lossy().into_owned();
        panto_string_free(json);
        assert!(conversation.contains("Hello?"), "{conversation}");
        assert!(!panto_agent_session_id(agent).is_null());
        panto_agent_free(agent);
        panto_runtime_free(rt);
    }
}
