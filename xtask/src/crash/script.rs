//! What a trial runs: the config file and the scripted provider replies, for either API style.
//!
//! The first run is one turn of four model requests and a compaction:
//!
//! 1. text, then two parallel tool calls: `bash` running `sleep 0.3` (the slow tool) and `read`;
//! 2. text and a `write` that overwrites the existing `out/plan.txt` (a file checkpoint is
//!    recorded mid-turn), reporting enough input tokens to cross the compaction threshold of the
//!    tiny context window the config sets;
//! 3. the compaction summary (the agent summarises before its next request);
//! 4. text and an `edit` of the same file (a second checkpoint);
//! 5. the final text;
//! 6. (only when a steer came after the final text and became a follow-up turn) a short answer.
//!
//! While it runs, the harness sends a steer on stdin (`--input-format stream-json`). Every
//! `bash` call first goes through a command hook (`[[hooks.before_tool]]`) that takes 100 to
//! 300 ms to allow it, so kills also land while a hook runs (the hook's process outlives panto,
//! and the call it was asked about is closed as interrupted on resume).
//!
//! Every reply streams in small pieces with a short pause between them, so a kill at a random
//! moment lands anywhere: mid-stream, between a message and its tools, inside a hook, inside the
//! slow tool, inside the compaction, or after the end.

use serde_json::{json, Value};

/// The API a trial speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The Anthropic Messages API.
    Anthropic,
    /// The OpenAI Chat Completions API.
    OpenAi,
}

impl Style {
    /// The style of trial `n`: they alternate.
    pub fn of_trial(n: u64) -> Style {
        if n % 2 == 1 {
            Style::Anthropic
        } else {
            Style::OpenAi
        }
    }

    /// A short name for output.
    pub fn name(self) -> &'static str {
        match self {
            Style::Anthropic => "anthropic",
            Style::OpenAi => "openai",
        }
    }

    fn api_style(self) -> &'static str {
        match self {
            Style::Anthropic => "anthropic-messages",
            Style::OpenAi => "openai-chat",
        }
    }

    fn model(self) -> &'static str {
        match self {
            Style::Anthropic => "claude-sonnet-4-5",
            Style::OpenAi => "gpt-4o",
        }
    }

    fn base_url(self, port: u16) -> String {
        match self {
            Style::Anthropic => format!("http://127.0.0.1:{port}"),
            Style::OpenAi => format!("http://127.0.0.1:{port}/v1"),
        }
    }

    fn call_id(self, name: &str, n: usize) -> String {
        match self {
            Style::Anthropic => format!("toolu_crash_{name}_{n}"),
            Style::OpenAi => format!("call_crash_{name}_{n}"),
        }
    }
}

/// The prompt of the first run.
pub const PROMPT: &str = "Run the crash drill: read the notes, write a plan, and check it.";

/// The prompt of the resume.
pub const RESUME_PROMPT: &str = "continue";

/// The compaction summary the mock returns; the log must hold exactly this.
pub const SUMMARY: &str =
    "SUMMARY: the user asked for the crash drill; the notes were read and a two-step plan was written to out/plan.txt.";

/// The steer the harness sends while the first run goes on.
pub const STEER: &str = "STEER: keep the plan to two steps.";

/// The prompt of a rewind run (`-r ID --rewind N --rewind-files`).
pub const REWIND_PROMPT: &str = "try again from there";

/// The prompt of a fork run (`-r ID --fork`).
pub const FORK_PROMPT: &str = "carry on in the fork";

/// The answer of every rewind and fork reply.
pub const OP_ANSWER: &str = "Carried on from where you took me.";

/// The file the script's `write` and `edit` change, relative to the working directory.
pub const PLAN_PATH: &str = "out/plan.txt";

/// What `out/plan.txt` holds before the first run: no final newline, a CR, a tab and a
/// non-ASCII character, so a restore that is not byte for byte shows.
pub const PLAN_BEFORE: &str = "the old plan\r\n\tcafé, no final newline";

/// What the script's `write` leaves in `out/plan.txt`.
pub const PLAN_WRITTEN: &str = "step one: keep every committed message\nstep two: close what a crash left open\n";

/// What the script's `edit` leaves in `out/plan.txt`.
pub const PLAN_EDITED: &str = "step one: keep every committed message\nstep 2: close what a crash left open\n";

/// The content of `notes.txt` in each trial's working directory.
pub const NOTES: &str = "The notes say: keep every committed message, and close what a crash left open.\n";

/// The header that tags every request with the run that sent it, so a late request from a
/// killed run can never be mistaken for one of the resume.
pub const RUN_HEADER: &str = "x-crash-run";

/// The config file of a trial. The context window is tiny so that the second request's usage
/// crosses the compaction threshold; retries are off so that a problem shows at once.
/// `hook_ms` is how long the `bash` hook takes; it appends `start MS` and `end MS` (the
/// wall clock in milliseconds) to `hook_log`, so the harness can tell a kill inside it.
pub fn config(style: Style, port: u16, run_tag: &str, hook_ms: u64, hook_log: &str) -> String {
    format!(
        r#"default_model = "crash"
system_prompt = "You are the crash-test agent. Be brief."
agents_md = false
max_steps = 20
idle_timeout_secs = 20

[providers.mock]
api_style = "{api_style}"
base_url = "{base_url}"
api_key = "sk-crash-test"
headers = {{ "{RUN_HEADER}" = "{run_tag}" }}

[models.crash]
provider = "mock"
model = "{model}"
context_window = 1000
max_tokens = 1024

[retry]
max_attempts = 1

[compaction]
enabled = true
threshold = 0.5
keep_recent_tokens = 60

[tools]
bash_timeout_secs = 20

[[hooks.before_tool]]
match = "bash"
command = "cat >/dev/null; echo start $(date +%s%3N) >> '{hook_log}'; sleep {hook_secs}; echo end $(date +%s%3N) >> '{hook_log}'; echo '{{\"decision\": \"allow\"}}'"
timeout_secs = 10
"#,
        api_style = style.api_style(),
        base_url = style.base_url(port),
        model = style.model(),
        hook_secs = format_args!("{}.{:03}", hook_ms / 1000, hook_ms % 1000),
    )
}

/// How every reply is paced: pieces of 128 bytes, 2 ms apart.
fn paced(builder: Value) -> Value {
    json!({"builder": builder, "chunking": "fixed:128", "delay_ms": 2})
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output})
}

fn text_reply(style: Style, text: &str, usage: Option<Value>) -> Value {
    let mut args = json!({"text": text});
    if let Some(u) = usage {
        args["usage"] = u;
    }
    let name = match style {
        Style::Anthropic => "anthropic_text",
        Style::OpenAi => "openai_text",
    };
    paced(json!({"name": name, "args": args}))
}

fn tool_reply(style: Style, text: &str, calls: &[(String, &str, Value)], usage: Value) -> Value {
    let (name, input_key) = match style {
        Style::Anthropic => ("anthropic_tool_uses", "input"),
        Style::OpenAi => ("openai_tool_calls", "arguments"),
    };
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, tool, input)| json!({"id": id, "name": tool, input_key: input}))
        .collect();
    paced(json!({"name": name, "args": {"text": text, "calls": calls, "usage": usage}}))
}

/// The replies of the first run, in order.
pub fn first_run(style: Style) -> Value {
    json!([
        tool_reply(
            style,
            "Let me read the notes and take a slow look around the working directory before I write anything down.",
            &[
                (
                    style.call_id("bash", 1),
                    "bash",
                    json!({"command": "sleep 0.3; echo slow-done"})
                ),
                (style.call_id("read", 1), "read", json!({"path": "notes.txt"})),
            ],
            usage(220, 30),
        ),
        tool_reply(
            style,
            "The notes are clear. Now I will write the plan down in a file so that it survives whatever happens next.",
            &[(
                style.call_id("write", 2),
                "write",
                json!({"path": PLAN_PATH, "content": PLAN_WRITTEN}),
            )],
            usage(640, 40),
        ),
        text_reply(style, SUMMARY, None),
        tool_reply(
            style,
            "Let me number the second step of the plan.",
            &[(
                style.call_id("edit", 3),
                "edit",
                json!({"path": PLAN_PATH, "old_string": "step two", "new_string": "step 2"}),
            )],
            usage(120, 20),
        ),
        text_reply(
            style,
            "All done: the plan is written to out/plan.txt and its steps are numbered.",
            Some(usage(180, 25)),
        ),
        text_reply(style, "Noted: the plan keeps two steps.", Some(usage(200, 10))),
    ])
}

/// The replies of a rewind or fork run: a plain answer, three times, as for [`resume`].
pub fn op_run(style: Style) -> Value {
    let reply = text_reply(style, OP_ANSWER, Some(usage(90, 10)));
    json!([reply.clone(), reply.clone(), reply])
}

/// The answer of every resume reply (and so the summary, when the resume compacts).
pub const RESUME_ANSWER: &str = "Resumed: everything from before is still here.";

/// The replies of the resume: a plain answer, three times, since the resume may compact first
/// (one reply for the summary) and a late request of the killed run may take one.
pub fn resume(style: Style) -> Value {
    let reply = text_reply(style, RESUME_ANSWER, Some(usage(90, 10)));
    json!([reply.clone(), reply.clone(), reply])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styles_alternate_and_replies_name_their_builders() {
        assert_ne!(Style::of_trial(1), Style::of_trial(2));
        assert_eq!(Style::of_trial(1), Style::of_trial(3));
        let a = first_run(Style::Anthropic);
        let o = first_run(Style::OpenAi);
        assert_eq!(a.as_array().map(Vec::len), Some(6));
        assert_eq!(a[0]["builder"]["name"], "anthropic_tool_uses");
        assert_eq!(
            o[0]["builder"]["args"]["calls"][0]["arguments"]["command"],
            "sleep 0.3; echo slow-done"
        );
        assert_eq!(o[2]["builder"]["args"]["text"], SUMMARY);
    }

    #[test]
    fn config_points_at_the_mock_and_tags_the_run() {
        let c = config(Style::OpenAi, 4242, "t7-first", 150, "/tmp/hook.log");
        assert!(c.contains("sleep 0.150;"), "{c}");
        assert!(c.contains("base_url = \"http://127.0.0.1:4242/v1\""), "{c}");
        assert!(c.contains("\"x-crash-run\" = \"t7-first\""), "{c}");
        assert!(config(Style::Anthropic, 1, "x", 100, "h").contains("base_url = \"http://127.0.0.1:1\""));
    }
}
