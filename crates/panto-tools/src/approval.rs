//! The approval mode ([`Approval`]); [`ApprovalHook`], which applies the allow rules and the
//! approval mode, the last of the two hooks that keep the order deny rules, hooks, allow rules,
//! approval (see [`crate::policy`]), for every tool; and [`Guarded`], which runs the same checks
//! in front of a built-in tool for an agent that registers no hooks.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use panto_core::{BeforeTool, CancellationToken, Hook, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hooks::{main_argument, HookVerdict, PolicyHook};
use crate::policy::{rule_subjects, CalledTool, Policy, SourceRegistry};
use crate::{preview, ToolContext, ToolName};

/// How tool calls that change things (`write`, `edit`, `bash`) are approved when no rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    /// Ask the front end's [`Prompt`](crate::policy::Prompt) before each call; refused when there is none.
    Ask,
    /// Run every call.
    Auto,
    /// Refuse write, edit and bash: they return an error result to the model.
    ReadOnly,
}

impl Approval {
    /// Every mode, in the order the command line lists them.
    pub const ALL: [Approval; 3] = [Approval::Ask, Approval::Auto, Approval::ReadOnly];

    /// The name used on the command line and in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Ask => "ask",
            Approval::Auto => "auto",
            Approval::ReadOnly => "read-only",
        }
    }
}

impl fmt::Display for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Approval {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Approval::ALL
            .into_iter()
            .find(|a| a.as_str() == s.trim())
            .ok_or_else(|| format!("unknown approval mode {s:?}; expected ask, auto or read-only"))
    }
}

/// The approval mode of a set of tools while they live: the one value the policy reads at each
/// decision ([`crate::policy::Policy::approval_mode`]), which a front end changes mid-session
/// (the CLI's `/approve` and Shift-Tab). Clones share that value, so every holder (the policy,
/// the hooks, a front end's MCP gating) sees a change at its next read; a call already being
/// decided keeps the mode it read. The sandbox does not follow it: it is fixed when the tools are
/// made ([`crate::Options::sandbox`]).
#[derive(Debug, Clone)]
pub struct ApprovalModeHandle(Arc<AtomicU8>);

impl ApprovalModeHandle {
    /// A handle holding `mode`, shared by nothing yet.
    pub fn new(mode: Approval) -> ApprovalModeHandle {
        ApprovalModeHandle(Arc::new(AtomicU8::new(Self::encode(mode))))
    }

    /// The mode now.
    pub fn get(&self) -> Approval {
        // Only `encode` writes the value, so every value is a mode; were it not, the strictest.
        Approval::ALL
            .get(usize::from(self.0.load(Ordering::SeqCst)))
            .copied()
            .unwrap_or(Approval::ReadOnly)
    }

    /// Changes the mode for every holder of this handle, from their next decision on.
    pub fn set(&self, mode: Approval) {
        self.0.store(Self::encode(mode), Ordering::SeqCst);
    }

    fn encode(mode: Approval) -> u8 {
        match mode {
            Approval::Ask => 0,
            Approval::Auto => 1,
            Approval::ReadOnly => 2,
        }
    }
}

/// The hook that applies the allow rules and the approval mode to every call
/// ([`crate::Toolbox::approval_hook`]); register it after [`PolicyHook`] and the embedder's own
/// hooks. Its steps, in order ([`ApprovalHook::decide`]): an allow rule that matches runs the
/// call; a tool that changes nothing runs (the built-in `read`, `grep`, `find`, `ls`, and a
/// source tool its source declares read-only, see [`SourceRegistry`]); else the approval mode
/// decides, and in `ask` mode the policy's [`crate::policy::Prompt`] is asked. For a built-in tool the
/// question is the call's preview ([`crate::Toolbox::preview`]), worked out first: a call whose
/// preview fails is not asked about and ends with the error the tool would have given; for a
/// source tool it is every argument of the call ([`describe_arguments`]). A refusal is the
/// result the model reads, word for word. Calls of an embedder's own tools pass.
#[derive(Debug, Clone)]
pub struct ApprovalHook {
    policy: Arc<Policy>,
    ctx: ToolContext,
    sources: SourceRegistry,
}

impl ApprovalHook {
    pub(crate) fn new(policy: Arc<Policy>, ctx: ToolContext) -> ApprovalHook {
        ApprovalHook {
            policy,
            ctx,
            sources: SourceRegistry::new(),
        }
    }

    /// With the annotations of these tool sources: a tool a source declares read-only runs
    /// without approval. The registry is shared: sources added to it later count too.
    pub fn with_sources(mut self, sources: SourceRegistry) -> ApprovalHook {
        self.sources = sources;
        self
    }

    /// Whether a call of `called` with `input` may run as far as the allow rules and the
    /// approval mode are concerned. `Err` is the text of the error result the model gets.
    pub async fn decide(
        &self,
        called: CalledTool<'_>,
        input: &Value,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        match called {
            CalledTool::Builtin(tool) => self.decide_builtin(tool, input, cancel).await,
            CalledTool::Source { source, tool } => {
                if self.policy.allows_source_tool(source, tool) || self.sources.declares_read_only(source, tool) {
                    return Ok(());
                }
                let what = describe_arguments(input);
                let mode = self.policy.approval();
                self.policy
                    .approve_in(mode, &called.offered_name(), &what, cancel)
                    .await
            }
        }
    }

    async fn decide_builtin(&self, tool: ToolName, input: &Value, cancel: &CancellationToken) -> Result<(), String> {
        let argument = main_argument(tool, input);
        let subjects = rule_subjects(tool, &argument, &self.ctx.cwd);
        if self.policy.runs_freely(tool, &subjects) {
            return Ok(());
        }
        // The mode is read once, so the question and the answer follow the same mode.
        let mode = self.policy.approval();
        let what = if self.policy.asks_in(mode) {
            preview::preview(&self.ctx, tool, input).await?.summary
        } else {
            argument
        };
        self.policy.approve_in(mode, tool.as_str(), &what, cancel).await
    }
}

#[async_trait]
impl Hook for ApprovalHook {
    fn name(&self) -> &str {
        "approval"
    }

    /// A question takes as long as the person answering it.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
        let Some(called) = CalledTool::of(&call.name) else {
            return BeforeTool::Allow;
        };
        match self.decide(called, &call.input, &call.cancel).await {
            Ok(()) => BeforeTool::Allow,
            Err(refusal) => BeforeTool::Respond(ToolCallResult::error(refusal)),
        }
    }
}

/// The arguments of a source tool's call as the approval question shows them: every argument in
/// full, one per line, as `name: value`. A front end draws it without cutting anything (the CLI
/// through the same rendering as a bash command's: long values wrap, padding and invisible
/// characters are shown as marks, a long call ends with its size), so no argument can push
/// another out of sight.
///
/// A string is shown as it is; a string holding a line break, and every other value (numbers,
/// booleans, nested objects and arrays), as compact JSON, so each argument stays on one line and
/// a line of one value cannot pass for another argument. A name that is not plain (letters,
/// digits, `_`, `-`, `.`) is shown quoted, so it cannot hold a `: ` of its own.
pub fn describe_arguments(input: &Value) -> String {
    let Value::Object(arguments) = input else {
        return input.to_string();
    };
    if arguments.is_empty() {
        return "(no arguments)".to_owned();
    }
    let lines: Vec<String> = arguments
        .iter()
        .map(|(name, value)| {
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            let name = if plain {
                name.clone()
            } else {
                Value::String(name.clone()).to_string()
            };
            let value = match value {
                Value::String(text) if !text.contains('\n') => text.clone(),
                other => other.to_string(),
            };
            format!("{name}: {value}")
        })
        .collect();
    lines.join("\n")
}

/// A built-in tool with the policy in front of it: the deny rules, then the allow rules and the
/// approval mode, as the two hooks apply them. What [`crate::builtin`] and
/// [`crate::Toolbox::tools`] return, for an agent that registers no hooks; a refusal is the
/// call's error, as the tool's own errors are.
pub(crate) struct Guarded {
    tool: Arc<dyn Tool>,
    name: ToolName,
    deny: PolicyHook,
    approval: ApprovalHook,
}

impl Guarded {
    pub(crate) fn new(tool: Arc<dyn Tool>, name: ToolName, deny: PolicyHook, approval: ApprovalHook) -> Guarded {
        Guarded {
            tool,
            name,
            deny,
            approval,
        }
    }
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded")
            .field("tool", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for Guarded {
    fn declaration(&self) -> ToolDecl {
        self.tool.declaration()
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let called = CalledTool::Builtin(self.name);
        let input = match self.deny.decide(called, &call.input).await {
            HookVerdict::Allow => call.input.clone(),
            HookVerdict::Rewrite(input) => input,
            HookVerdict::Deny(reason) => return Err(reason.into()),
        };
        self.approval.decide(called, &input, &call.cancel).await?;
        let mut call = call;
        call.input = input;
        self.tool.call(call).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::policy::Prompt;
    use crate::testing::{call, text};
    use crate::{Approval, Options, Toolbox};

    /// A prompt that records each question and answers no with the same words.
    #[derive(Debug, Default)]
    struct Recorder {
        asked: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl Prompt for Recorder {
        async fn approve(&self, tool: &str, what: &str, _cancel: &CancellationToken) -> Result<(), String> {
            self.asked.lock().unwrap().push(format!("{tool}: {what}"));
            Err("the user said no".into())
        }
    }

    fn toolbox(dir: &std::path::Path, prompt: Arc<Recorder>) -> Toolbox {
        let mut options = Options::new(dir);
        options.approval = Approval::Ask;
        options.allow = vec!["bash(git status*)".into()];
        options.prompt = Some(prompt);
        Toolbox::new(&options).unwrap()
    }

    #[tokio::test]
    async fn a_call_whose_preview_fails_is_not_asked_about_and_fails_as_the_tool_would() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a\n").unwrap();
        let prompt = Arc::new(Recorder::default());
        let hook = toolbox(dir.path(), prompt.clone()).approval_hook();
        let cancel = CancellationToken::new();
        let missing = json!({"path": "f", "old_string": "zzz", "new_string": "b"});
        let refusal = hook
            .decide(CalledTool::Builtin(ToolName::Edit), &missing, &cancel)
            .await
            .unwrap_err();
        // The bare edit tool's own error, word for word.
        let bare = crate::edit::EditTool::new(crate::testing::context(&dir.path().canonicalize().unwrap()));
        assert_eq!(refusal, text(&call(&bare, missing).await));
        assert!(prompt.asked.lock().unwrap().is_empty());

        let good = json!({"path": "f", "old_string": "a", "new_string": "b"});
        let refusal = hook
            .decide(CalledTool::Builtin(ToolName::Edit), &good, &cancel)
            .await
            .unwrap_err();
        assert_eq!(refusal, "the user said no");
        // An allow rule and a tool that changes nothing are not asked about.
        hook.decide(
            CalledTool::Builtin(ToolName::Bash),
            &json!({"command": "git status"}),
            &cancel,
        )
        .await
        .unwrap();
        hook.decide(CalledTool::Builtin(ToolName::Read), &json!({"path": "f"}), &cancel)
            .await
            .unwrap();
        assert_eq!(
            prompt.asked.lock().unwrap().clone(),
            ["edit: edit f at line 1 (1 occurrence)"]
        );
    }

    #[tokio::test]
    async fn guarded_tools_ask_the_prompt_and_a_refusal_is_the_result() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a\n").unwrap();
        let prompt = Arc::new(Recorder::default());
        let tools = toolbox(dir.path(), prompt.clone()).tools();
        let write = tools.iter().find(|t| t.declaration().name == "write").unwrap();
        let r = call(write.as_ref(), json!({"path": "f", "content": "changed"})).await;
        assert!(r.is_error && text(&r) == "the user said no", "{}", text(&r));
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "a\n");
        assert_eq!(prompt.asked.lock().unwrap().clone(), ["write: overwrite f (7 bytes)"]);
    }

    /// The mode changed through the policy's handle decides the next call, of a built-in tool
    /// and of a source's (an MCP server's) alike, through the hook and through the guarded tools.
    #[tokio::test]
    async fn a_changed_mode_decides_the_next_call_of_built_in_and_source_tools() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "a\n").unwrap();
        let prompt = Arc::new(Recorder::default());
        let toolbox = toolbox(dir.path(), prompt.clone());
        let hook = toolbox.approval_hook();
        let mode = toolbox.policy().approval_mode().clone();
        let write = toolbox
            .tools()
            .into_iter()
            .find(|t| t.declaration().name == "write")
            .unwrap();
        let cancel = CancellationToken::new();
        let edit = json!({"path": "f", "old_string": "a", "new_string": "b"});
        let source = CalledTool::Source {
            source: "git",
            tool: "commit",
        };
        let decide = |called: CalledTool<'static>, input: Value| {
            let (hook, cancel) = (hook.clone(), cancel.clone());
            async move { hook.decide(called, &input, &cancel).await }
        };
        let asked = || prompt.asked.lock().unwrap().len();

        assert_eq!(mode.get(), Approval::Ask);
        let e = decide(CalledTool::Builtin(ToolName::Edit), edit.clone())
            .await
            .unwrap_err();
        assert_eq!(e, "the user said no");
        let e = decide(source, json!({"message": "x"})).await.unwrap_err();
        assert_eq!(e, "the user said no");
        assert_eq!(asked(), 2);

        mode.set(Approval::Auto);
        assert_eq!(toolbox.policy().approval(), Approval::Auto);
        decide(CalledTool::Builtin(ToolName::Edit), edit.clone()).await.unwrap();
        decide(source, json!({"message": "x"})).await.unwrap();
        let r = call(write.as_ref(), json!({"path": "f", "content": "auto"})).await;
        assert!(!r.is_error, "{}", text(&r));
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "auto");
        assert_eq!(asked(), 2, "auto asks nothing");

        mode.set(Approval::ReadOnly);
        let e = decide(CalledTool::Builtin(ToolName::Bash), json!({"command": "touch x"}))
            .await
            .unwrap_err();
        assert!(e.contains("tool approval is read-only"), "{e}");
        let e = decide(source, json!({"message": "x"})).await.unwrap_err();
        assert!(e.contains("the git__commit tool is not allowed"), "{e}");
        let r = call(write.as_ref(), json!({"path": "f", "content": "read-only"})).await;
        assert!(r.is_error && text(&r).contains("read-only"), "{}", text(&r));
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "auto");
        assert_eq!(asked(), 2, "read-only asks nothing");

        mode.set(Approval::Ask);
        let r = call(write.as_ref(), json!({"path": "f", "content": "asked"})).await;
        assert!(r.is_error && text(&r) == "the user said no", "{}", text(&r));
        assert_eq!(asked(), 3, "back in ask, the next call is asked about");
    }

    #[test]
    fn every_argument_is_shown_in_full_on_a_line_of_its_own() {
        let padding = "x".repeat(5_000);
        let shown = describe_arguments(&json!({"a_padding": padding, "command": "curl x | sh"}));
        assert_eq!(shown, format!("a_padding: {padding}\ncommand: curl x | sh"));
    }

    #[test]
    fn line_breaks_nested_values_and_odd_names_stay_on_their_line() {
        let shown = describe_arguments(&json!({
            "script": "ls\ncommand: rm -rf ~",
            "options": {"force": true, "paths": ["/a", "/b"]},
            "n": 3,
            "bad: name": "x",
        }));
        assert_eq!(
            shown,
            "\"bad: name\": x\nn: 3\noptions: {\"force\":true,\"paths\":[\"/a\",\"/b\"]}\nscript: \"ls\\ncommand: rm -rf ~\""
        );
        assert_eq!(describe_arguments(&json!({})), "(no arguments)");
    }
}
