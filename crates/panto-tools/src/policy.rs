//! Whether a tool call may run: the one policy chain every tool call passes, whoever offers the
//! tool (a built-in tool, an MCP server's, any other tool source's). For front ends and
//! embedders that go past [`crate::builtin`]: those that register the chain as hooks on the agent
//! ([`crate::Toolbox::policy_hook`], [`crate::Toolbox::approval_hook`]), ask the user in `ask` mode
//! ([`Prompt`]), parse rules from their own configuration ([`Rule`], [`HookConfig`]) or tell the
//! chain which tools of an MCP server change nothing ([`SourceAnnotations`], [`SourceRegistry`]).
//!
//! The chain is, in order: deny rules, command hooks, allow rules, the approval mode
//! ([`crate::Approval`]), then the front end's [`Prompt`] in `ask` mode. It is kept by two hooks on
//! the agent: [`PolicyHook`] (deny rules and command hooks) first, [`ApprovalHook`] (allow rules,
//! approval mode, prompt) last, with the embedder's own hooks between. A further policy (a
//! permission mode such as plan mode) is one more step of [`ApprovalHook::decide`], between the
//! allow rules and the approval mode. The tools themselves ask nothing: the tools
//! [`crate::builtin`] makes run both hooks' checks in front of each call, for an agent that
//! registers no hooks.
//!
//! Rules have one syntax for every tool ([`Rule`]): `TOOL` or `TOOL(GLOB)` for a built-in tool,
//! the glob matched against the call's main argument (the command for `bash`, the path for the
//! file and search tools, the URL for `web_fetch`, whose host also matches
//! `web_fetch(domain:HOST)` for itself and its subdomains; see [`main_argument`]); `server__tool` for a tool of an MCP server (or
//! any tool source), globs allowed in the name.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use globset::{Glob, GlobBuilder, GlobMatcher};
use panto_core::CancellationToken;

pub use crate::approval::{describe_arguments, ApprovalHook};
pub use crate::hooks::{main_argument, CommandHook, HookConfig, HookVerdict, PolicyHook};

use crate::approval::{Approval, ApprovalModeHandle};
use crate::error::Error;
use crate::shell::{self, Split};
use crate::ToolName;

/// The front end's approval question, asked in [`Approval::Ask`] mode for calls no rule decided.
/// The CLI's implementation asks on the terminal.
#[async_trait]
pub trait Prompt: Send + Sync + fmt::Debug {
    /// Whether the tool the model calls `tool` (`bash`, `git__commit`) may run the call described
    /// by `what` (the command, `create notes.txt (12 bytes)`, an MCP call's arguments one per
    /// line). `Err` holds the text of the error result the model gets.
    async fn approve(&self, tool: &str, what: &str, cancel: &CancellationToken) -> Result<(), String>;
}

/// The tool a call is for, as the policy sees it: one of the built-in tools, or a tool of a tool
/// source (an MCP server), which panto-core shows hooks as `source/tool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalledTool<'a> {
    /// A built-in tool.
    Builtin(ToolName),
    /// Tool `tool` (the source's own name for it) of the source `source`.
    Source {
        /// The source's name (the MCP server's name in the configuration).
        source: &'a str,
        /// The tool's name as its source gives it.
        tool: &'a str,
    },
}

impl<'a> CalledTool<'a> {
    /// The tool of a call whose hook-visible name is `name` (a built-in tool's name, or
    /// `source/tool`); `None` for a tool of neither kind (an embedder's own), which no rule
    /// names.
    pub fn of(name: &'a str) -> Option<CalledTool<'a>> {
        if let Ok(tool) = ToolName::parse(name) {
            return Some(CalledTool::Builtin(tool));
        }
        let (source, tool) = name.split_once('/')?;
        Some(CalledTool::Source { source, tool })
    }

    /// The name the model calls the tool by: `bash`, or `<source>__<tool>` ([`offered_name`]).
    pub fn offered_name(&self) -> String {
        match self {
            CalledTool::Builtin(tool) => tool.as_str().to_owned(),
            CalledTool::Source { source, tool } => offered_name(source, tool),
        }
    }
}

/// The name the model is offered tool `tool` of source `source` under: panto-core's encoding of
/// a tool source's names, `<source>__<tool>` with every byte outside `[A-Za-z0-9-]` written as
/// `_xx` (a test checks it against an agent's manifest). Names past 64 bytes are cut and hashed
/// by the registry; rules and listings use the uncut name.
pub fn offered_name(source: &str, tool: &str) -> String {
    format!("{}__{}", encode_part(source), encode_part(tool))
}

fn encode_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("_{b:02x}"));
        }
    }
    out
}

/// What a tool source says about its tools that the policy uses: which change nothing. An MCP
/// server's `readOnlyHint` annotation is such a claim (untrusted: trusted only to skip the
/// approval question, as for the built-in tools that change nothing).
pub trait SourceAnnotations: Send + Sync + fmt::Debug {
    /// The source's name (its tools are `source/tool` to hooks).
    fn source_name(&self) -> &str;
    /// Whether the source declares its tool `tool` read-only.
    fn declares_read_only(&self, tool: &str) -> bool;
}

/// The sources whose annotations the approval step reads, shared: a front end that adds tool
/// sources after the hooks are on the agent (the C ABI adds MCP servers later) adds them here.
#[derive(Debug, Clone, Default)]
pub struct SourceRegistry {
    sources: Arc<RwLock<Vec<Arc<dyn SourceAnnotations>>>>,
}

impl SourceRegistry {
    /// An empty registry.
    pub fn new() -> SourceRegistry {
        SourceRegistry::default()
    }

    /// Adds a source; its tools' read-only claims count from now on.
    pub fn add(&self, source: Arc<dyn SourceAnnotations>) {
        self.sources.write().unwrap_or_else(|e| e.into_inner()).push(source);
    }

    /// Whether tool `tool` of `source` is declared read-only (false for an unknown source).
    pub fn declares_read_only(&self, source: &str, tool: &str) -> bool {
        self.sources
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|s| s.source_name() == source && s.declares_read_only(tool))
    }
}

/// One rule: `TOOL` or `TOOL(GLOB)` for a built-in tool, `server__tool` for tools of a tool
/// source (an MCP server).
///
/// A built-in tool's rule is matched two ways. As an allow rule ([`Rule::allows`]) it must match
/// the whole call: for `bash`, every simple command of the command line (see [`crate::shell`]),
/// and a line the splitter cannot reason about (a command substitution, a redirection to a file,
/// ...) is matched by no `bash(GLOB)` allow rule. As a deny rule or a hook's `match`
/// ([`Rule::covers`]) it matches when any part does: the whole line or any simple command in it,
/// those inside substitutions and subshells included, as written or with quotes removed.
///
/// Rules about a file also cover the tools that do the same to it: a `write` rule is also an
/// `edit` rule (an edit is a smaller write), a deny rule on `edit` also refuses `write`, and a
/// deny rule on `read` also refuses `edit` (which reads the file) and withholds the file from
/// `grep`.
///
/// A source tool has no main argument to match, so its rule is its offered name alone,
/// `<server>__<tool>`, where `*`, `?`, `[…]` and `{a,b}` work as in globs (`git__*` is every tool
/// of the server `git`). The name is matched both as offered (the encoding escapes `_` inside a
/// part, so `git_status` of `git` is offered as `git__git_5fstatus`) and as written with the
/// server's and the tool's own names (`git__git_status`), so a rule can be written either way
/// ([`Rule::names_source_tool`]). Allow and deny mean the same for it: the rule matches the call
/// or not.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    /// A built-in tool, and the glob over its main argument.
    Builtin { tool: ToolName, glob: Option<GlobMatcher> },
    /// Source tools, by a glob over `server__tool`.
    Source(GlobMatcher),
}

impl Rule {
    /// Parses `TOOL`, `TOOL(GLOB)` or `server__tool`. In a built-in tool's glob `*` matches any
    /// characters, `/` included, so `bash(git status*)` and `read(src/*)` mean what they say;
    /// `?`, `[...]` and `{a,b}` as usual. A name that is not a built-in tool's and holds `__` is
    /// a source tool's rule; a front end that knows its servers checks the name starts with one
    /// of theirs ([`Rule::source_prefix`]).
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
        let tool = match ToolName::parse(name) {
            Ok(tool) => tool,
            Err(_) if name.contains("__") => {
                if glob.is_some() {
                    return Err(bad(
                        "a rule for an MCP tool is its name alone (`server__tool`, globs allowed), \
                         without an argument glob in parentheses"
                            .into(),
                    ));
                }
                let glob = GlobBuilder::new(trimmed)
                    .literal_separator(false)
                    .build()
                    .map_err(|e| bad(format!("bad glob: {}", e.kind())))?;
                return Ok(Rule {
                    text: trimmed.to_owned(),
                    target: Target::Source(glob.compile_matcher()),
                });
            }
            Err(e) => return Err(bad(format!("{e}, or an MCP tool as server__tool"))),
        };
        let glob = glob
            .map(|g| Glob::new(g).map(|g| g.compile_matcher()))
            .transpose()
            .map_err(|e| bad(format!("bad glob: {e}")))?;
        Ok(Rule {
            text: trimmed.to_owned(),
            target: Target::Builtin { tool, glob },
        })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The built-in tool the rule names; `None` for a source tool's rule.
    pub fn builtin(&self) -> Option<ToolName> {
        match &self.target {
            Target::Builtin { tool, .. } => Some(*tool),
            Target::Source(_) => None,
        }
    }

    /// For a source tool's rule, the text before its first `__` (the server part as written,
    /// perhaps a glob): what a front end checks against its configured servers. `None` for a
    /// built-in tool's rule.
    pub fn source_prefix(&self) -> Option<&str> {
        match self.target {
            Target::Source(_) => self.text.split_once("__").map(|(server, _)| server),
            Target::Builtin { .. } => None,
        }
    }

    /// Whether the rule matches tool `tool` of source `source` (see [`Rule`]): by the offered
    /// name or by `source__tool` as the names are.
    pub fn names_source_tool(&self, source: &str, tool: &str) -> bool {
        match &self.target {
            Target::Source(glob) => {
                glob.is_match(offered_name(source, tool)) || glob.is_match(format!("{source}__{tool}"))
            }
            Target::Builtin { .. } => false,
        }
    }

    /// Whether the rule, as an allow rule, lets the call run: it names `tool` (or `write` for an
    /// `edit`), and its glob matches the path, or every simple command of a command line that is
    /// nothing but simple commands.
    pub fn allows(&self, tool: ToolName, subjects: &Subjects) -> bool {
        let Target::Builtin { tool: named, glob } = &self.target else {
            return false;
        };
        let names = *named == tool || (*named == ToolName::Write && tool == ToolName::Edit);
        if !names {
            return false;
        }
        let Some(glob) = glob else {
            return true;
        };
        match &subjects.split {
            None => subjects.forms.iter().any(|s| glob.is_match(s)),
            Some(split) => {
                split.is_plain() && !split.commands.is_empty() && split.commands.iter().all(|c| glob.is_match(&c.text))
            }
        }
    }

    /// Whether the rule, as a deny rule or a hook's `match`, covers the call: it names `tool` (or
    /// a tool that does the same to the file, see [`Rule`]), and its glob matches the path, the
    /// whole command line, or any simple command in it (as written or with quotes removed).
    pub fn covers(&self, tool: ToolName, subjects: &Subjects) -> bool {
        use ToolName::{Edit, Read, Write};
        let Target::Builtin { tool: named, glob } = &self.target else {
            return false;
        };
        let names = *named == tool || matches!((*named, tool), (Write, Edit) | (Edit, Write) | (Read, Edit));
        if !names {
            return false;
        }
        let Some(glob) = glob else {
            return true;
        };
        subjects.forms.iter().any(|s| glob.is_match(s))
            || subjects.split.as_ref().is_some_and(|split| {
                split
                    .commands
                    .iter()
                    .any(|c| glob.is_match(&c.text) || glob.is_match(&c.plain))
            })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A call's main argument in the forms rules are matched against ([`rule_subjects`]).
#[derive(Debug, Clone)]
pub struct Subjects {
    /// A path's forms (absolute, and relative to the working directory), or a command line as
    /// written.
    forms: Vec<String>,
    /// A command line's simple commands.
    split: Option<Split>,
}

impl Subjects {
    /// Why a command line cannot be matched command by command by an allow rule, if it cannot.
    pub fn opaque(&self) -> Option<&str> {
        self.split.as_ref().and_then(|s| s.opaque.as_deref())
    }
}

/// The forms of a call's main argument rules are matched against. A command is split into its
/// simple commands ([`crate::shell`]). A path is normalised first (made absolute against `cwd`,
/// symbolic links and `..` resolved as the kernel will), then offered both absolute and, when
/// inside `cwd`, relative to it: `src/../../etc/passwd` is matched as `/etc/passwd`, never as
/// something under `src/`.
pub fn rule_subjects(tool: ToolName, argument: &str, cwd: &Path) -> Subjects {
    if tool == ToolName::WebFetch {
        return url_subjects(argument);
    }
    if !tool.takes_path() {
        return Subjects {
            forms: vec![argument.to_owned()],
            split: Some(shell::split(argument)),
        };
    }
    let raw = Path::new(argument);
    let absolute = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        cwd.join(raw)
    };
    let real = crate::roots::real_path(&absolute).unwrap_or(absolute);
    let real_cwd = crate::roots::real_path(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    resolved_path_subjects(&real, &real_cwd)
}

/// The forms of a `web_fetch` URL: the URL as parsed (credentials and fragment dropped), and
/// `domain:HOST` for its host and every parent domain, so `web_fetch(domain:example.com)` covers
/// `example.com` and `docs.example.com`, not `badexample.com`. A host written as an address has
/// only itself. A URL that does not parse is matched as written (the tool refuses it anyway).
fn url_subjects(argument: &str) -> Subjects {
    let Ok(url) = crate::web_fetch::parse_url(argument) else {
        return Subjects {
            forms: vec![argument.to_owned()],
            split: None,
        };
    };
    let mut forms = vec![url.to_string()];
    if let Some(host) = crate::web_fetch::rule_host(&url) {
        match url.host() {
            Some(url::Host::Domain(_)) => {
                let mut rest = host.as_str();
                loop {
                    forms.push(format!("domain:{rest}"));
                    match rest.split_once('.') {
                        Some((_, parent)) if !parent.is_empty() => rest = parent,
                        _ => break,
                    }
                }
            }
            _ => forms.push(format!("domain:{host}")),
        }
    }
    Subjects { forms, split: None }
}

/// The forms of a path already resolved (`real`, against the resolved working directory
/// `real_cwd`): itself, and relative to `real_cwd` when inside it. Nothing is resolved again, so
/// a link swapped in meanwhile cannot change what the rules see.
pub(crate) fn resolved_path_subjects(real: &Path, real_cwd: &Path) -> Subjects {
    let mut forms = vec![real.display().to_string()];
    if let Ok(relative) = real.strip_prefix(real_cwd) {
        let relative = relative.display().to_string();
        forms.push(if relative.is_empty() { ".".to_owned() } else { relative });
    }
    Subjects { forms, split: None }
}

/// The policy every built-in tool asks before it acts.
#[derive(Debug, Clone)]
pub struct Policy {
    deny: Vec<Rule>,
    allow: Vec<Rule>,
    /// Read at each decision: a front end may change it while the tools live.
    approval: ApprovalModeHandle,
    prompt: Option<Arc<dyn Prompt>>,
    read_only_hint: String,
}

impl Policy {
    /// A policy with no rules in `approval` mode and no prompt. Its clones share the mode
    /// ([`Policy::approval_mode`]).
    pub fn new(approval: Approval) -> Policy {
        Policy {
            deny: Vec::new(),
            allow: Vec::new(),
            approval: ApprovalModeHandle::new(approval),
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

    /// The approval mode now.
    pub fn approval(&self) -> Approval {
        self.approval.get()
    }

    /// The approval mode's handle: setting it changes the mode of every later decision of this
    /// policy, its clones and the hooks and tools made from it (the sandbox stays as it was).
    pub fn approval_mode(&self) -> &ApprovalModeHandle {
        &self.approval
    }

    /// Whether the front end asks in `ask` mode: a prompt was set (without one `ask` refuses).
    pub fn asks(&self) -> bool {
        self.asks_in(self.approval())
    }

    /// Whether a call left to the approval `mode` is asked about.
    pub(crate) fn asks_in(&self, mode: Approval) -> bool {
        mode == Approval::Ask && self.prompt.is_some()
    }

    /// Whether `tool` may run this call. `subjects` are the forms of its main argument (from
    /// [`rule_subjects`]); `what` describes the call for a question. In order: the first deny rule
    /// that matches refuses; an allow rule that matches runs it without asking (in every approval
    /// mode, read-only included: an allow rule is the user's explicit word); a tool that changes
    /// nothing runs; else the approval mode decides. `Err` is the text of the error result.
    pub async fn check(
        &self,
        tool: ToolName,
        subjects: &Subjects,
        what: &str,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        if let Some(rule) = self.denying_rule(tool, subjects) {
            return Err(denied(tool.as_str(), rule));
        }
        if self.runs_freely(tool, subjects) {
            return Ok(());
        }
        self.approve(tool.as_str(), what, cancel).await
    }

    /// The first deny rule that covers a call of built-in `tool` ([`Rule::covers`]).
    pub fn denying_rule(&self, tool: ToolName, subjects: &Subjects) -> Option<&Rule> {
        self.deny.iter().find(|r| r.covers(tool, subjects))
    }

    /// The first deny rule that names tool `tool` of source `source`.
    pub fn denying_source_rule(&self, source: &str, tool: &str) -> Option<&Rule> {
        self.deny.iter().find(|r| r.names_source_tool(source, tool))
    }

    /// Whether an allow rule names tool `tool` of source `source`: its calls run without
    /// approval, in every mode (and in read-only mode a front end offers it).
    pub fn allows_source_tool(&self, source: &str, tool: &str) -> bool {
        self.allow.iter().any(|r| r.names_source_tool(source, tool))
    }

    /// Whether a call of `tool` runs without approval: an allow rule matches it, or the tool
    /// changes nothing.
    pub fn runs_freely(&self, tool: ToolName, subjects: &Subjects) -> bool {
        !tool.needs_approval() || self.allow.iter().any(|r| r.allows(tool, subjects))
    }

    /// Whether a call of `tool` that needs approval runs because an allow rule matched it, where
    /// the approval mode would not have run it unasked (`ask`, `read-only`). Such a `bash` call
    /// runs in the sandbox even when the configured sandbox is off (see [`crate::Options`]).
    pub fn runs_by_rule(&self, tool: ToolName, subjects: &Subjects) -> bool {
        tool.needs_approval()
            && self.approval() != Approval::Auto
            && self.allow.iter().any(|r| r.allows(tool, subjects))
    }

    /// The `read` deny rule that protects the file at `path` (relative to `cwd` or absolute),
    /// if one does: a search tool withholds such a file.
    pub fn read_denied(&self, path: &Path, cwd: &Path) -> Option<&Rule> {
        let mut rules = self
            .deny
            .iter()
            .filter(|r| r.builtin() == Some(ToolName::Read))
            .peekable();
        rules.peek()?;
        let subjects = rule_subjects(ToolName::Read, &path.to_string_lossy(), cwd);
        rules.find(|r| r.covers(ToolName::Read, &subjects))
    }

    /// Whether any allow rule names `tool`.
    pub(crate) fn allows_any(&self, tool: ToolName) -> bool {
        self.allow.iter().any(|r| r.builtin() == Some(tool))
    }

    /// The approval mode's answer for a call of the tool the model calls `tool` that no rule
    /// decided: run it (`auto`), refuse it (`read-only`), or ask the prompt (`ask`) about `what`.
    /// `Err` is the text of the error result.
    pub async fn approve(&self, tool: &str, what: &str, cancel: &CancellationToken) -> Result<(), String> {
        self.approve_in(self.approval(), tool, what, cancel).await
    }

    /// [`Policy::approve`] in approval `mode`, read by the caller once for the whole decision.
    pub(crate) async fn approve_in(
        &self,
        mode: Approval,
        tool: &str,
        what: &str,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        match mode {
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

/// The refusal of a call of the tool the model calls `tool` by the deny rule `rule`.
pub(crate) fn denied(tool: &str, rule: &Rule) -> String {
    format!("the {tool} call is denied by the rule `{rule}` ([tools] deny)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<Rule> {
        list.iter().map(|r| Rule::parse(r).unwrap()).collect()
    }

    fn cmd(c: &str) -> Subjects {
        rule_subjects(ToolName::Bash, c, Path::new("/w"))
    }

    fn path(p: &str) -> Subjects {
        rule_subjects(ToolName::Read, p, Path::new("/w"))
    }

    #[test]
    fn rules_parse_and_bad_ones_say_why() {
        let r = Rule::parse(" bash(git status*) ").unwrap();
        assert!(r.allows(ToolName::Bash, &cmd("git status --short")));
        assert!(!r.allows(ToolName::Bash, &cmd("git push")));
        assert!(!r.allows(ToolName::Read, &path("git status")));
        assert!(Rule::parse("read").unwrap().allows(ToolName::Read, &path("anything")));
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
        assert!(!allow.allows(ToolName::Write, &s), "{s:?}");
        let s = rule_subjects(ToolName::Write, "./src/a.rs", &cwd);
        assert!(allow.allows(ToolName::Write, &s), "{s:?}");
        let s = rule_subjects(ToolName::Read, "/etc/passwd", &cwd);
        assert!(Rule::parse("read(/etc/*)").unwrap().covers(ToolName::Read, &s));
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
        assert!(policy.check(ToolName::Write, &path("x"), "x", &cancel).await.is_ok());
        assert!(policy.check(ToolName::Read, &path("x"), "x", &cancel).await.is_ok());
        let denied = Policy::new(Approval::Auto).with_rules(rules(&["read(*.env)"]), vec![]);
        let e = denied
            .check(ToolName::Read, &path("/w/.env"), "x", &cancel)
            .await
            .unwrap_err();
        assert!(e.contains("denied"), "{e}");
    }

    #[tokio::test]
    async fn ask_without_a_prompt_refuses() {
        let e = Policy::new(Approval::Ask)
            .check(ToolName::Edit, &path("f"), "f", &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(e.contains("no terminal to ask on"), "{e}");
    }

    /// The documented allow rule and compound commands: every simple command must match, and a
    /// line the splitter cannot reason about is matched by no allow rule.
    #[test]
    fn a_bash_allow_rule_matches_only_when_every_simple_command_does() {
        let allow = Rule::parse("bash(git status*)").unwrap();
        for ok in [
            "git status",
            "git status --short",
            "git status && git status -s",
            "git status | git status",
            "git status 2>&1",
            "git status >/dev/null",
            "git status ';' x",
            "git status \\; rm x",
            "git status 'a\nb'",
            "  git   status  ",
        ] {
            assert!(allow.allows(ToolName::Bash, &cmd(ok)), "{ok:?} should be allowed");
        }
        for bad in [
            "git status; echo PWN > ~/x",
            "git status; touch x",
            "git status\ntouch x",
            "git status && rm -rf x",
            "git status || rm -rf x",
            "git status | sh",
            "git status & rm x",
            "git status |& sh",
            "git status \"$(rm x)\"",
            "git status `rm x`",
            "git status > x",
            "git status >> ~/.bashrc",
            "LD_PRELOAD=/tmp/x.so git status",
            "git status <(rm x)",
            "(git status)",
            "{ git status; }",
            "git status <<EOF\nx\nEOF",
            "git status $((1))",
            "if git status; then rm x; fi",
            "git status 'unclosed",
            "# git status",
        ] {
            assert!(
                !allow.allows(ToolName::Bash, &cmd(bad)),
                "{bad:?} should not be allowed"
            );
        }
        // A rule without a glob is the user's word for every command.
        assert!(Rule::parse("bash").unwrap().allows(ToolName::Bash, &cmd("a; $(b)")));
    }

    #[test]
    fn a_bash_deny_rule_matches_when_any_part_does() {
        let deny = Rule::parse("bash(rm *)").unwrap();
        for hit in [
            "rm -rf x",
            "cd x && rm y",
            "git status; rm -rf ~",
            "git status\nrm x",
            "echo $(rm x)",
            "echo `rm x`",
            "(rm x)",
            "if true; then rm x; fi",
            "X=1 rm x",
            "\\rm x",
            "'rm' x",
            "git status | rm x",
        ] {
            assert!(deny.covers(ToolName::Bash, &cmd(hit)), "{hit:?} should be denied");
        }
        assert!(!deny.covers(ToolName::Bash, &cmd("git status; echo rm x")));
        // A glob with a leading `*` still sees the whole line.
        assert!(Rule::parse("bash(*push*)")
            .unwrap()
            .covers(ToolName::Bash, &cmd("a; b $(c) push")));
    }

    #[test]
    fn write_rules_cover_edit_and_read_deny_rules_cover_edit() {
        let cwd = Path::new("/w");
        let edit = rule_subjects(ToolName::Edit, "Cargo.lock", cwd);
        assert!(Rule::parse("write(*.lock)").unwrap().covers(ToolName::Edit, &edit));
        assert!(Rule::parse("write(*.lock)").unwrap().allows(ToolName::Edit, &edit));
        assert!(Rule::parse("edit(*.lock)").unwrap().covers(ToolName::Write, &edit));
        // An edit allow rule does not let a whole-file write run.
        assert!(!Rule::parse("edit(*.lock)").unwrap().allows(ToolName::Write, &edit));
        assert!(Rule::parse("read(*.lock)").unwrap().covers(ToolName::Edit, &edit));
        assert!(!Rule::parse("read(*.lock)").unwrap().covers(ToolName::Write, &edit));
        let policy = Policy::new(Approval::Auto).with_rules(rules(&["read(*.env)", "write(*)"]), vec![]);
        assert!(policy.read_denied(Path::new("sub/.env"), cwd).is_some());
        assert!(policy.read_denied(Path::new("/w/a.rs"), cwd).is_none());
    }

    #[test]
    fn only_a_rule_runs_a_call_by_rule_and_auto_runs_everything_itself() {
        let allow = rules(&["bash(git status*)"]);
        let ask = Policy::new(Approval::Ask).with_rules(vec![], allow.clone());
        assert!(ask.runs_by_rule(ToolName::Bash, &cmd("git status")));
        assert!(!ask.runs_by_rule(ToolName::Bash, &cmd("git status; rm x")));
        assert!(!ask.runs_by_rule(ToolName::Read, &path("x")));
        let auto = Policy::new(Approval::Auto).with_rules(vec![], allow);
        assert!(!auto.runs_by_rule(ToolName::Bash, &cmd("git status")));
    }
}
