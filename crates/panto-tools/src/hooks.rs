//! Command hooks and the policy hook: the user's own programs asked about a tool call before it
//! runs, and the first [`panto_core::Hook`] a front end registers, which applies the deny rules
//! and then them, to every call of a built-in tool or a tool source's (an MCP server's).
//!
//! The order for every call is deny rules, hooks, allow rules, approval (see [`crate::policy`]).
//! The deny rules and the command hooks run here ([`PolicyHook`], registered first); the allow
//! rules and the approval mode are [`crate::policy::ApprovalHook`], registered last. A denied call
//! never reaches a hook, and a call a hook denies never reaches approval.
//!
//! A command hook gets the call as JSON on stdin (`{"tool", "input", "cwd"}`, `tool` being the
//! name the model calls it by: `bash`, `git__status`) and answers on
//! stdout with `{"decision": "allow"}`, `{"decision": "deny", "reason": "..."}` or
//! `{"decision": "rewrite", "input": {...}}` (empty output is "allow"). A hook that exits with a
//! failure, answers something else, or does not finish within its timeout denies the call, with
//! its stderr (or what went wrong) as the reason the model reads. Its output is untrusted: it is
//! read to a bound and never shown raw.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use panto_core::{BeforeTool, Hook, ToolCall, DEFAULT_HOOK_TIMEOUT};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::child::{spawn, ChildSetup};
use crate::error::Error;
use crate::policy::{denied, rule_subjects, CalledTool, Rule};
use crate::sandbox::SandboxConfig;
use crate::ToolName;

/// How much of a hook's stdout and stderr is read; the rest is ignored.
const MAX_HOOK_OUTPUT: u64 = 64 * 1024;
/// How much of a hook's stderr a denial quotes.
const MAX_REASON_CHARS: usize = 2000;

/// One `[[hooks.before_tool]]`: a program asked about every call its rule matches.
#[derive(Debug, Clone)]
pub struct CommandHook {
    /// Which calls it is asked about (`TOOL`, `TOOL(GLOB)` or `server__tool`), matched as a deny
    /// rule is ([`Rule::covers`]): a `bash(GLOB)` hook is asked about a command line when the
    /// glob matches the whole line or any simple command in it.
    pub rule: Rule,
    /// The shell command (run with `sh -c`).
    pub command: String,
    /// How long it may take before its silence denies the call.
    pub timeout: Duration,
}

/// What a command hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookVerdict {
    /// Run the call (the allow rules and the approval mode still apply).
    Allow,
    /// Refuse it, with the reason the model reads.
    Deny(String),
    /// Run it with this input instead.
    Rewrite(Value),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

/// One command hook as configured: `{"match": RULE, "command": "...", "timeout_secs": N}`, the
/// shape of the CLI's `[[hooks.before_tool]]` and of the C ABI's `policy.hooks`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// The rule of the calls it is asked about.
    #[serde(rename = "match")]
    pub matcher: String,
    /// The shell command.
    pub command: String,
    /// Seconds it may take (at least 1); default [`DEFAULT_HOOK_TIMEOUT`].
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl HookConfig {
    /// The hook, checked: its `match` parses, its command is not empty, its timeout is at least
    /// a second. The error names the field.
    pub fn resolve(&self) -> Result<CommandHook, Error> {
        let rule = Rule::parse(&self.matcher)?;
        if self.command.trim().is_empty() {
            return Err(Error::BadOptions("command is empty".into()));
        }
        let timeout = match self.timeout_secs {
            Some(0) => return Err(Error::BadOptions("timeout_secs must be at least 1".into())),
            Some(secs) => Duration::from_secs(secs),
            None => DEFAULT_HOOK_TIMEOUT,
        };
        Ok(CommandHook {
            rule,
            command: self.command.clone(),
            timeout,
        })
    }
}

impl CommandHook {
    /// Whether the hook is asked about a call of `called` with `input` (its rule covers it),
    /// the main argument worked out against `cwd`.
    pub fn matches(&self, called: CalledTool<'_>, input: &Value, cwd: &Path) -> bool {
        match called {
            CalledTool::Builtin(tool) => self
                .rule
                .covers(tool, &rule_subjects(tool, &main_argument(tool, input), cwd)),
            CalledTool::Source { source, tool } => self.rule.names_source_tool(source, tool),
        }
    }

    /// Asks the hook about a call of `called` with `input`, run in `cwd`.
    pub async fn ask(&self, called: CalledTool<'_>, input: &Value, cwd: &Path) -> HookVerdict {
        ask_command(&self.command, self.timeout, &called.offered_name(), input, cwd).await
    }
}

/// Asks the hook program `command` (run with `sh -c` in `cwd`, given `timeout`) about a call of
/// the tool the model calls `tool` with `input`.
async fn ask_command(command: &str, timeout: Duration, tool: &str, input: &Value, cwd: &Path) -> HookVerdict {
    let name = command;
    let payload = json!({"tool": tool, "input": input, "cwd": cwd.display().to_string()});
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(name)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match spawn(command, &ChildSetup::new(SandboxConfig::off())) {
        Ok(child) => child,
        Err(e) => {
            return HookVerdict::Deny(format!(
                "the hook `{name}` could not start: {}",
                crate::child::explain_spawn_error(&e)
            ))
        }
    };
    let run = async {
        let process = child.child();
        let stdin = process.stdin.take();
        let stdout = process.stdout.take();
        let stderr = process.stderr.take();
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input closes the pipe early; that is fine.
                let _ = stdin.write_all(payload.to_string().as_bytes()).await;
            }
        };
        let (_, out, err) = tokio::join!(write, read_bounded(stdout), read_bounded(stderr));
        let status = process.wait().await;
        (status, out, err)
    };
    let (status, out, err) = match tokio::time::timeout(timeout, run).await {
        Ok(done) => done,
        // Dropping the child kills its process group.
        Err(_) => {
            return HookVerdict::Deny(format!(
                "the hook `{name}` did not answer within {}s",
                timeout.as_secs_f64()
            ))
        }
    };
    let stderr = quoted(&err);
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => {
            let why = if stderr.is_empty() {
                format!("the hook `{name}` failed ({status})")
            } else {
                stderr
            };
            return HookVerdict::Deny(why);
        }
        Err(e) => return HookVerdict::Deny(format!("the hook `{name}` could not be waited for: {e}")),
    }
    let text = String::from_utf8_lossy(&out);
    if text.trim().is_empty() {
        return HookVerdict::Allow;
    }
    match serde_json::from_str::<Answer>(text.trim()) {
        Ok(answer) => match (answer.decision.as_str(), answer.input) {
            ("allow", _) => HookVerdict::Allow,
            ("deny", _) => HookVerdict::Deny(
                answer
                    .reason
                    .map(|r| quoted(r.as_bytes()))
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| format!("the hook `{name}` denied the call")),
            ),
            ("rewrite", Some(input)) if input.is_object() => HookVerdict::Rewrite(input),
            ("rewrite", _) => HookVerdict::Deny(format!(
                "the hook `{name}` asked for a rewrite without an `input` object"
            )),
            (other, _) => HookVerdict::Deny(format!(
                "the hook `{name}` answered decision {:?}; expected allow, deny or rewrite",
                quoted(other.as_bytes())
            )),
        },
        Err(e) => HookVerdict::Deny(format!(
            "the hook `{name}` answered something that is not its JSON ({e}): {}",
            quoted(text.as_bytes())
        )),
    }
}

async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.take(MAX_HOOK_OUTPUT).read_to_end(&mut out).await;
    }
    out
}

/// Untrusted output as a reason: lossy UTF-8, control characters but newlines and tabs dropped,
/// trimmed and bounded.
fn quoted(bytes: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .take(MAX_REASON_CHARS)
        .collect();
    text.trim().to_owned()
}

/// The main argument of a built-in tool's call, as rules see it: the command for `bash`, the path
/// for the others (`.` when a search tool's path is left out).
pub fn main_argument(tool: ToolName, input: &Value) -> String {
    let field = match tool {
        ToolName::Bash => "command",
        ToolName::WebFetch => "url",
        _ => "path",
    };
    match input.get(field).and_then(Value::as_str) {
        Some(value) => value.to_owned(),
        None if tool.takes_path() => ".".to_owned(),
        None => String::new(),
    }
}

/// The hook a front end registers first on its agent: the deny rules, then the command hooks,
/// for every call of a built-in tool or a tool source's (see the module docs for the order).
/// Calls of an embedder's own tools (neither kind) pass.
#[derive(Debug, Clone)]
pub struct PolicyHook {
    deny: Vec<Rule>,
    hooks: Vec<CommandHook>,
    cwd: PathBuf,
}

impl PolicyHook {
    /// With these deny rules and command hooks, for tools working in `cwd`.
    pub fn new(deny: Vec<Rule>, hooks: Vec<CommandHook>, cwd: PathBuf) -> PolicyHook {
        PolicyHook { deny, hooks, cwd }
    }

    /// What the rules and hooks decide about a call of `called` with `input`: the first deny
    /// rule that matches refuses; then each hook whose rule matches (the input as earlier hooks
    /// left it) is asked, in order, and the first denial ends it.
    pub async fn decide(&self, called: CalledTool<'_>, input: &Value) -> HookVerdict {
        let denying = match called {
            CalledTool::Builtin(tool) => {
                let subjects = rule_subjects(tool, &main_argument(tool, input), &self.cwd);
                self.deny.iter().find(|r| r.covers(tool, &subjects))
            }
            CalledTool::Source { source, tool } => self.deny.iter().find(|r| r.names_source_tool(source, tool)),
        };
        if let Some(rule) = denying {
            return HookVerdict::Deny(denied(&called.offered_name(), rule));
        }
        let mut input = input.clone();
        let mut rewritten = false;
        for hook in &self.hooks {
            if !hook.matches(called, &input, &self.cwd) {
                continue;
            }
            match hook.ask(called, &input, &self.cwd).await {
                HookVerdict::Allow => {}
                HookVerdict::Deny(reason) => return HookVerdict::Deny(reason),
                HookVerdict::Rewrite(new) => {
                    input = new;
                    rewritten = true;
                }
            }
        }
        if rewritten {
            HookVerdict::Rewrite(input)
        } else {
            HookVerdict::Allow
        }
    }
}

#[async_trait]
impl Hook for PolicyHook {
    fn name(&self) -> &str {
        "policy"
    }

    /// Each command hook has its own timeout; the rules take no time.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
        let Some(called) = CalledTool::of(&call.name) else {
            return BeforeTool::Allow;
        };
        tokio::select! {
            verdict = self.decide(called, &call.input) => match verdict {
                HookVerdict::Allow => BeforeTool::Allow,
                HookVerdict::Deny(reason) => BeforeTool::Deny(reason),
                HookVerdict::Rewrite(input) => BeforeTool::Rewrite(input),
            },
            _ = call.cancel.cancelled() => BeforeTool::Deny("the turn was cancelled".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(command: &str, timeout: Duration) -> PolicyHook {
        PolicyHook::new(
            vec![Rule::parse("bash(sudo *)").unwrap()],
            vec![CommandHook {
                rule: Rule::parse("bash").unwrap(),
                command: command.to_owned(),
                timeout,
            }],
            std::env::temp_dir(),
        )
    }

    fn bash(command: &str) -> Value {
        json!({ "command": command })
    }

    #[tokio::test]
    async fn a_hook_allows_denies_or_rewrites_and_deny_rules_come_first() {
        let second = Duration::from_secs(5);
        assert_eq!(
            hook("cat >/dev/null", second)
                .decide(CalledTool::Builtin(ToolName::Bash), &bash("ls"))
                .await,
            HookVerdict::Allow
        );
        assert_eq!(
            hook(r#"echo '{"decision":"deny","reason":"not today"}'"#, second)
                .decide(CalledTool::Builtin(ToolName::Bash), &bash("ls"))
                .await,
            HookVerdict::Deny("not today".into())
        );
        assert_eq!(
            hook(r#"echo '{"decision":"rewrite","input":{"command":"ls -a"}}'"#, second)
                .decide(CalledTool::Builtin(ToolName::Bash), &bash("ls"))
                .await,
            HookVerdict::Rewrite(bash("ls -a"))
        );
        // The deny rule decides before the hook is asked (the hook would allow).
        let verdict = hook("true", second)
            .decide(CalledTool::Builtin(ToolName::Bash), &bash("sudo rm x"))
            .await;
        assert!(
            matches!(&verdict, HookVerdict::Deny(r) if r.contains("bash(sudo *)")),
            "{verdict:?}"
        );
        // Calls the rule does not match are not asked about.
        assert_eq!(
            hook("exit 1", second)
                .decide(CalledTool::Builtin(ToolName::Read), &json!({"path": "x"}))
                .await,
            HookVerdict::Allow
        );
    }

    #[tokio::test]
    async fn a_failing_slow_or_garbled_hook_denies_with_its_stderr_or_what_went_wrong() {
        let second = Duration::from_secs(5);
        assert_eq!(
            hook("echo 'no rm here' >&2; exit 2", second)
                .decide(CalledTool::Builtin(ToolName::Bash), &bash("rm"))
                .await,
            HookVerdict::Deny("no rm here".into())
        );
        let slow = hook("sleep 30", Duration::from_millis(200))
            .decide(CalledTool::Builtin(ToolName::Bash), &bash("ls"))
            .await;
        assert_eq!(
            slow,
            HookVerdict::Deny("the hook `sleep 30` did not answer within 0.2s".into())
        );
        let garbled = hook("echo 'yes please'", second)
            .decide(CalledTool::Builtin(ToolName::Bash), &bash("ls"))
            .await;
        assert!(
            matches!(&garbled, HookVerdict::Deny(r) if r.contains("not its JSON") && r.contains("yes please")),
            "{garbled:?}"
        );
    }

    /// A hook's `match` is matched as a deny rule: a compound command is asked about when any
    /// simple command in it (or the whole line) matches, so `echo a; rm -rf x` cannot slip past
    /// a `bash(rm *)` hook.
    #[tokio::test]
    async fn a_hook_is_asked_about_a_compound_command_any_part_of_which_matches() {
        let second = Duration::from_secs(5);
        let guard = PolicyHook::new(
            Vec::new(),
            vec![CommandHook {
                rule: Rule::parse("bash(rm *)").unwrap(),
                command: "echo 'no rm' >&2; exit 1".to_owned(),
                timeout: second,
            }],
            std::env::temp_dir(),
        );
        for command in [
            "rm -rf x",
            "echo a; rm -rf x",
            "echo a && rm x",
            "echo $(rm x)",
            "echo a\nrm x",
        ] {
            assert_eq!(
                guard.decide(CalledTool::Builtin(ToolName::Bash), &bash(command)).await,
                HookVerdict::Deny("no rm".into()),
                "{command:?}"
            );
        }
        assert_eq!(
            guard
                .decide(CalledTool::Builtin(ToolName::Bash), &bash("echo rm x"))
                .await,
            HookVerdict::Allow
        );
    }
}
