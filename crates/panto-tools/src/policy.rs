//! Whether a tool call may run: deny rules, then allow rules, then the approval mode (and the
//! front end's prompt in `ask` mode).
//!
//! Rules have one syntax, `TOOL` or `TOOL(GLOB)`, where the glob is matched against the call's
//! main argument: the command for `bash`, the path for the file and search tools (see
//! [`crate::main_argument`]). The order for every call is deny rules, hooks, allow rules,
//! approval, and it is kept by two hooks on the agent: [`crate::PolicyHook`] (the deny rules and
//! the command hooks) first, [`crate::ApprovalHook`] (the allow rules and the approval mode)
//! last, with the embedder's own hooks between. The tools themselves ask nothing: the tools
//! [`crate::builtin`] makes run both hooks' checks in front of each call, for an agent that
//! registers no hooks (the C ABI's).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use globset::{Glob, GlobMatcher};
use panto_core::CancellationToken;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::ToolName;

/// How tool calls that change things (`write`, `edit`, `bash`) are approved when no rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    /// Ask the front end's [`Prompt`] before each call; refused when there is none.
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

/// The front end's approval question, asked in [`Approval::Ask`] mode for calls no rule decided.
/// The CLI's implementation asks on the terminal.
#[async_trait]
pub trait Prompt: Send + Sync + fmt::Debug {
    /// Whether `tool` may run the call described by `what` (the command, `create notes.txt (12
    /// bytes)`). `Err` holds the text of the error result the model gets.
    async fn approve(&self, tool: ToolName, what: &str, cancel: &CancellationToken) -> Result<(), String>;
}

/// One `TOOL` or `TOOL(GLOB)` matcher.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: ToolName,
    glob: Option<GlobMatcher>,
}

impl Rule {
    /// Parses `TOOL` or `TOOL(GLOB)`. In the glob `*` matches any characters, `/` included, so
    /// `bash(git status*)` and `read(src/*)` mean what they say; `?`, `[...]` and `{a,b}` as usual.
    pub fn parse(text: &str) -> Result<Rule, Error> {
        let bad = |why: String| Error::BadRule {
            rule: text.to_owned(),
            why,
        };
        let trimmed = text.trim();
        let (name, glob) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let inner = trimmed[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| bad("a rule with a glob ends with `)`: TOOL(GLOB)".into()))?;
                if inner.is_empty() {
                    return Err(bad(
                        "the glob in parentheses is empty; write TOOL alone to match every call".into(),
                    ));
                }
                (&trimmed[..open], Some(inner))
            }
        };
        let tool = ToolName::parse(name).map_err(bad)?;
        let glob = glob
            .map(|g| Glob::new(g).map(|g| g.compile_matcher()))
            .transpose()
            .map_err(|e| bad(format!("bad glob: {e}")))?;
        Ok(Rule {
            text: trimmed.to_owned(),
            tool,
            glob,
        })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule matches a call of `tool` whose main argument has the forms `subjects`
    /// (a path is offered both relative to the working directory and absolute).
    pub fn matches(&self, tool: ToolName, subjects: &[String]) -> bool {
        self.tool == tool
            && match &self.glob {
                None => true,
                Some(glob) => subjects.iter().any(|s| glob.is_match(s)),
            }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The forms of a call's main argument rules are matched against. A command is matched as
/// written. A path is normalised first (made absolute against `cwd`, symbolic links and `..`
/// resolved as the kernel will), then offered both absolute and, when inside `cwd`, relative to
/// it: `src/../../etc/passwd` is matched as `/etc/passwd`, never as something under `src/`.
pub fn rule_subjects(tool: ToolName, argument: &str, cwd: &Path) -> Vec<String> {
    if !tool.takes_path() {
        return vec![argument.to_owned()];
    }
    let raw = Path::new(argument);
    let absolute = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        cwd.join(raw)
    };
    let real = crate::roots::real_path(&absolute).unwrap_or(absolute);
    let real_cwd = crate::roots::real_path(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let mut out = vec![real.display().to_string()];
    if let Ok(relative) = real.strip_prefix(&real_cwd) {
        let relative = relative.display().to_string();
        out.push(if relative.is_empty() { ".".to_owned() } else { relative });
    }
    out
}

/// The policy every built-in tool asks before it acts.
#[derive(Debug, Clone)]
pub struct Policy {
    deny: Vec<Rule>,
    allow: Vec<Rule>,
    approval: Approval,
    prompt: Option<Arc<dyn Prompt>>,
    read_only_hint: String,
}

impl Policy {
    /// A policy with no rules in `approval` mode and no prompt.
    pub fn new(approval: Approval) -> Policy {
        Policy {
            deny: Vec::new(),
            allow: Vec::new(),
            approval,
            prompt: None,
            read_only_hint: String::new(),
        }
    }

    /// With these deny and allow rules.
    pub fn with_rules(mut self, deny: Vec<Rule>, allow: Vec<Rule>) -> Policy {
        self.deny = deny;
        self.allow = allow;
        self
    }

    /// With the prompt asked in [`Approval::Ask`] mode.
    pub fn with_prompt(mut self, prompt: Arc<dyn Prompt>) -> Policy {
        self.prompt = Some(prompt);
        self
    }

    /// With text appended to the read-only refusal: how to get the tool allowed
    /// (` (use --approve auto)`).
    pub fn with_read_only_hint(mut self, hint: &str) -> Policy {
        self.read_only_hint = hint.to_owned();
        self
    }

    /// The deny rules.
    pub fn deny_rules(&self) -> &[Rule] {
        &self.deny
    }

    /// The approval mode.
    pub fn approval(&self) -> Approval {
        self.approval
    }

    /// Whether the front end asks in `ask` mode: a prompt was set (without one `ask` refuses).
    pub fn asks(&self) -> bool {
        self.approval == Approval::Ask && self.prompt.is_some()
    }

    /// Whether `tool` may run this call. `subjects` are the forms of its main argument (from
    /// [`rule_subjects`]); `what` describes the call for a question. In order: the first deny rule
    /// that matches refuses; an allow rule that matches runs it without asking (in every approval
    /// mode, read-only included: an allow rule is the user's explicit word); a tool that changes
    /// nothing runs; else the approval mode decides. `Err` is the text of the error result.
    pub async fn check(
        &self,
        tool: ToolName,
        subjects: &[String],
        what: &str,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, subjects)) {
            return Err(format!("the {tool} call is denied by the rule `{rule}` ([tools] deny)"));
        }
        if self.runs_freely(tool, subjects) {
            return Ok(());
        }
        self.approve(tool, what, cancel).await
    }

    /// Whether a call of `tool` runs without approval: an allow rule matches it, or the tool
    /// changes nothing.
    pub fn runs_freely(&self, tool: ToolName, subjects: &[String]) -> bool {
        !tool.needs_approval() || self.allow.iter().any(|r| r.matches(tool, subjects))
    }

    /// The approval mode's answer for a call no rule decided: run it (`auto`), refuse it
    /// (`read-only`), or ask the prompt (`ask`) about `what`. `Err` is the text of the error
    /// result.
    pub async fn approve(&self, tool: ToolName, what: &str, cancel: &CancellationToken) -> Result<(), String> {
        match self.approval {
            Approval::Auto => Ok(()),
            Approval::ReadOnly => Err(format!(
                "the {tool} tool is not allowed: tool approval is read-only{}",
                self.read_only_hint
            )),
            Approval::Ask => match &self.prompt {
                Some(prompt) => prompt.approve(tool, what, cancel).await,
                None => Err(format!(
                    "the {tool} tool needs approval, and there is no terminal to ask on"
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<Rule> {
        list.iter().map(|r| Rule::parse(r).unwrap()).collect()
    }

    fn cmd(c: &str) -> Vec<String> {
        vec![c.to_owned()]
    }

    #[test]
    fn rules_parse_and_bad_ones_say_why() {
        let r = Rule::parse(" bash(git status*) ").unwrap();
        assert!(r.matches(ToolName::Bash, &cmd("git status --short")));
        assert!(!r.matches(ToolName::Bash, &cmd("git push")));
        assert!(!r.matches(ToolName::Read, &cmd("git status")));
        assert!(Rule::parse("read").unwrap().matches(ToolName::Read, &cmd("anything")));
        for (bad, why) in [
            ("rm(x)", "unknown tool \"rm\""),
            ("bash(git", "ends with `)`"),
            ("bash()", "is empty"),
            ("read([)", "bad glob"),
        ] {
            let e = Rule::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn paths_are_matched_normalised_relative_and_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::create_dir(cwd.join("src")).unwrap();
        let s = rule_subjects(ToolName::Write, "src/../../escape.txt", &cwd);
        let allow = Rule::parse("write(src/*)").unwrap();
        assert!(!allow.matches(ToolName::Write, &s), "{s:?}");
        let s = rule_subjects(ToolName::Write, "./src/a.rs", &cwd);
        assert!(allow.matches(ToolName::Write, &s), "{s:?}");
        let s = rule_subjects(ToolName::Read, "/etc/passwd", &cwd);
        assert!(Rule::parse("read(/etc/*)").unwrap().matches(ToolName::Read, &s));
    }

    #[tokio::test]
    async fn deny_beats_allow_and_allow_beats_the_approval_mode() {
        let policy = Policy::new(Approval::ReadOnly)
            .with_rules(rules(&["bash(git push*)"]), rules(&["bash(git *)", "write"]))
            .with_read_only_hint(" (use --approve auto)");
        let cancel = CancellationToken::new();
        let check = |c: &'static str| {
            let s = cmd(c);
            let p = policy.clone();
            let cancel = cancel.clone();
            async move { p.check(ToolName::Bash, &s, c, &cancel).await }
        };
        assert!(check("git status").await.is_ok());
        let e = check("git push origin").await.unwrap_err();
        assert!(e.contains("denied by the rule `bash(git push*)`"), "{e}");
        let e = check("rm -rf x").await.unwrap_err();
        assert!(e.contains("read-only (use --approve auto)"), "{e}");
        assert!(policy.check(ToolName::Write, &cmd("x"), "x", &cancel).await.is_ok());
        assert!(policy.check(ToolName::Read, &cmd("x"), "x", &cancel).await.is_ok());
        let denied = Policy::new(Approval::Auto).with_rules(rules(&["read(*.env)"]), vec![]);
        let e = denied
            .check(ToolName::Read, &cmd("/w/.env"), "x", &cancel)
            .await
            .unwrap_err();
        assert!(e.contains("denied"), "{e}");
    }

    #[tokio::test]
    async fn ask_without_a_prompt_refuses() {
        let e = Policy::new(Approval::Ask)
            .check(ToolName::Edit, &cmd("f"), "f", &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(e.contains("no terminal to ask on"), "{e}");
    }
}
