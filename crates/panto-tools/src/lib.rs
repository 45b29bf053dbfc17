//! panto's coding tools, for every embedder: `read`, `write`, `edit`, `bash`, `grep`, `find`,
//! `ls` and `web_fetch`, the policy in front of them (`[tools] allow`/`deny` rules and the approval mode), and the
//! Linux sandbox `bash` runs in.
//!
//! Each tool is a plain [`panto_core::Tool`] under its own name (not a `ToolSource`, whose tools
//! get a prefix), so a model sees the same tools in the `panto` program, in a Rust program and
//! through the C ABI. Paths are relative to the working directory of the [`Options`]; bad
//! arguments from the model become error results that say what was wrong, never panics.
//!
//! # Example
//!
//! ```
//! use panto_core::{Agent, ApiStyle, Config, MemoryStore, ProviderConfig, Session};
//! use panto_tools::{Approval, Options, Sandbox};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = ProviderConfig::new(ApiStyle::AnthropicMessages, "model")
//!     .with_base_url("http://127.0.0.1:9")
//!     .with_api_key("key");
//! let mut agent = Agent::new(Config::new(provider), Session::create(MemoryStore::new()), None)?;
//!
//! let mut options = Options::new(std::env::temp_dir());
//! options.approval = Approval::ReadOnly; // write, edit and bash are refused...
//! options.allow = vec!["bash(git status*)".into()]; // ...except `git status`
//! options.deny = vec!["read(*.env)".into()];
//! options.sandbox = Sandbox::Off; // Sandbox::WorkspaceWrite confines bash on Linux
//! for tool in panto_tools::builtin(&options)? {
//!     agent.register_tool(tool)?;
//! }
//! # Ok(()) }
//! ```
//!
//! `builtin` fails when a rule does not parse or the sandbox was asked for on a system that
//! cannot provide it (see [`Sandbox`]): it fails closed, never runs unconfined.
//!
//! The tools `builtin` returns apply the policy in front of each call themselves. A front end that
//! hooks tool calls registers [`Toolbox::bare_tools`] instead, then the policy as hooks in the
//! order deny rules, hooks, allow rules, approval: [`Toolbox::policy_hook`], its own hooks, and
//! [`Toolbox::approval_hook`] (see [`policy::ApprovalHook`]). These two hooks are the one policy
//! chain for every tool on the agent: built-in tools and the tools of MCP servers (any tool
//! source), whose rules are `server__tool` ([`policy::Rule`]).
//!
//! # Modules
//!
//! The root holds what an embedder that registers the tools needs. The rest is grouped by who
//! uses it:
//! - [`policy`]: the policy chain's parts, for front ends that register it as hooks, ask the
//!   user, or read rules and command hooks from their own configuration;
//! - [`process`]: starting programs as the tools do (panto-mcp's stdio servers) and the tool work
//!   in flight at exit;
//! - [`files`]: files as the tools see them (the safe open a front end's attachments use, an
//!   edit's result, what a rewind did to each file);
//! - [`shell`]: the splitter of a `bash` command line that `bash(GLOB)` rules match;
//! - [`web`]: which addresses `web_fetch` connects to, and the resolver it looks names up with.

#![deny(missing_docs)]
#![deny(unreachable_pub)]

mod approval;
mod bash;
mod beneath;
mod checkpoint;
mod child;
mod edit;
mod error;
pub mod files;
mod find;
mod grep;
mod hooks;
mod ls;
mod options;
pub mod policy;
mod preview;
pub mod process;
mod processes;
mod read;
mod roots;
mod running;
mod sandbox;
mod search;
pub mod shell;
pub mod web;
mod web_fetch;
mod write;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use panto_core::{Tool, ToolError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use policy::{rule_subjects, ApprovalHook, CommandHook, Policy, PolicyHook, Rule};

pub use approval::{Approval, ApprovalModeHandle};
pub use bash::BashProgress;
pub use error::Error;
pub use options::{Options, DEFAULT_BASH_TIMEOUT, DEFAULT_MAX_OUTPUT_BYTES};
pub use preview::{FileChange, Preview};
pub use roots::Roots;
pub use sandbox::{Sandbox, SandboxConfig};

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolName {
    /// Read a file or an image.
    Read,
    /// Write a whole file.
    Write,
    /// Replace an exact string in a file.
    Edit,
    /// Run a shell command.
    Bash,
    /// Search file contents with a regular expression.
    Grep,
    /// Find files by glob.
    Find,
    /// List a directory.
    Ls,
    /// Fetch a web page as Markdown.
    #[serde(rename = "web_fetch")]
    WebFetch,
}

impl ToolName {
    /// Every built-in tool, in the order they are offered.
    pub const ALL: [ToolName; 8] = [
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Bash,
        ToolName::Grep,
        ToolName::Find,
        ToolName::Ls,
        ToolName::WebFetch,
    ];

    /// The name the model sees.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Read => "read",
            ToolName::Write => "write",
            ToolName::Edit => "edit",
            ToolName::Bash => "bash",
            ToolName::Grep => "grep",
            ToolName::Find => "find",
            ToolName::Ls => "ls",
            ToolName::WebFetch => "web_fetch",
        }
    }

    /// Whether the tool changes files, runs programs or sends requests out (`web_fetch`: a URL
    /// can carry data away), and so needs approval.
    pub fn needs_approval(self) -> bool {
        matches!(
            self,
            ToolName::Write | ToolName::Edit | ToolName::Bash | ToolName::WebFetch
        )
    }

    /// Whether the tool's main argument (what `TOOL(GLOB)` rules match) is a path; else it is a
    /// command (`bash`) or a URL (`web_fetch`).
    pub fn takes_path(self) -> bool {
        !matches!(self, ToolName::Bash | ToolName::WebFetch)
    }

    /// Parses a tool name.
    pub fn parse(name: &str) -> Result<ToolName, String> {
        ToolName::ALL
            .into_iter()
            .find(|t| t.as_str() == name.trim())
            .ok_or_else(|| format!("unknown tool {name:?}; the built-in tools are {}", names_list()))
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn names_list() -> String {
    ToolName::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
}

/// Parses `--tools a,b`; `none` alone selects no tool.
pub fn parse_list(items: &[String]) -> Result<Vec<ToolName>, String> {
    if items.len() == 1 && items[0].trim() == "none" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for item in items {
        let tool = ToolName::parse(item).map_err(|e| format!("--tools: {e} (or `none`)"))?;
        if !out.contains(&tool) {
            out.push(tool);
        }
    }
    Ok(out)
}

/// What every built-in tool needs.
#[derive(Debug, Clone)]
pub(crate) struct ToolContext {
    /// The working directory relative paths and commands use.
    pub cwd: PathBuf,
    /// Default bash timeout.
    pub bash_timeout: Duration,
    /// Cap on a tool's text output.
    pub max_output_bytes: usize,
    /// The directories file tools may touch (`[tools] read_roots`).
    pub roots: Roots,
    /// The sandbox: what bash runs in, and where write and edit may write.
    pub sandbox: Arc<SandboxConfig>,
    /// The `[tools] deny` rules, checked again by `write` and `edit` on the path they resolved
    /// and opened (the policy checked the path before; a link swapped since must not get past
    /// them).
    pub deny: Arc<[Rule]>,
    /// Who sees `bash`'s output while it runs ([`Options::bash_progress`]).
    pub bash_progress: Option<Arc<dyn BashProgress>>,
    /// The policy: its `read` deny rules are applied to every file a search tool opens, and its
    /// allow rules pick [`ToolContext::rule_sandbox`] for the bash calls they run.
    pub policy: Arc<Policy>,
    /// The sandbox a bash call that runs because an allow rule matched it runs in
    /// ([`Policy::runs_by_rule`]), when the configured one is off and this system has one.
    pub rule_sandbox: Option<Arc<SandboxConfig>>,
    /// The variables removed from `bash`'s environment besides [`process::KEY_VARIABLES`]
    /// ([`Options::scrub_env`]).
    pub scrub_env: Arc<[String]>,
    /// `web_fetch`'s client, resolver and cache, shared by the tools of one configuration.
    pub web: Arc<web_fetch::Web>,
}

impl ToolContext {
    /// The path a file tool works on for the model's `raw` path: resolved against the working
    /// directory and checked against the read roots (see [`Roots::check`]). Every tool that takes
    /// a path calls this; none opens a model's path any other way.
    pub(crate) fn file_path(&self, raw: &str) -> Result<PathBuf, String> {
        if raw.trim().is_empty() {
            return Err("the path is empty".into());
        }
        let path = Path::new(raw);
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        };
        self.roots.check(&absolute)
    }

    /// The sandbox a bash call of `command` runs in: [`ToolContext::rule_sandbox`] when an
    /// allow rule runs it ([`Policy::runs_by_rule`]), else the configured one. A pure function
    /// of the command, so the approval hook's decision and the sandbox never disagree.
    pub(crate) fn bash_sandbox(&self, command: &str) -> Arc<SandboxConfig> {
        match &self.rule_sandbox {
            Some(sandbox)
                if self
                    .policy
                    .runs_by_rule(ToolName::Bash, &rule_subjects(ToolName::Bash, command, &self.cwd)) =>
            {
                sandbox.clone()
            }
            _ => self.sandbox.clone(),
        }
    }
}

/// The built-in tools an [`Options`] selects, configured and ready to register: panto's coding
/// tools in one call, each with the policy (rules and approval mode) in front of it. See the
/// crate example.
pub fn builtin(options: &Options) -> Result<Vec<Arc<dyn Tool>>, Error> {
    Ok(Toolbox::new(options)?.tools())
}

/// The built-in tools of one configuration, kept to make them again for every agent (a front
/// end that starts new sessions), and the facts a front end shows about them.
#[derive(Debug, Clone)]
pub struct Toolbox {
    ctx: ToolContext,
    policy: Arc<Policy>,
    names: Vec<ToolName>,
}

impl Toolbox {
    /// Checks `options` (rules parse, the sandbox is available) and prepares the tools.
    pub fn new(options: &Options) -> Result<Toolbox, Error> {
        let (ctx, policy, names) = options.prepare()?;
        Ok(Toolbox { ctx, policy, names })
    }

    /// A fresh set of the selected tools, each with the policy in front of it (deny rules, allow
    /// rules, approval mode): for an agent that registers no hooks. A front end that registers
    /// [`Toolbox::policy_hook`] and an approval hook uses [`Toolbox::bare_tools`] instead.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let deny = self.policy_hook(Vec::new());
        let approve = self.approval_hook();
        self.names
            .iter()
            .zip(self.bare_tools())
            .map(|(name, tool)| -> Arc<dyn Tool> {
                Arc::new(approval::Guarded::new(tool, *name, deny.clone(), approve.clone()))
            })
            .collect()
    }

    /// A fresh set of the selected tools with no policy of their own: every call runs (except
    /// that `write` and `edit` check the deny rules again on the path they resolved and opened,
    /// so a link swapped after the check cannot get a write past them). For an
    /// agent that applies the policy with hooks, registered in this order: [`Toolbox::policy_hook`]
    /// (deny rules, command hooks), the embedder's own hooks, then [`Toolbox::approval_hook`] (or
    /// a front end's own approval hook built on it, as the CLI's is).
    pub fn bare_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.names
            .iter()
            .map(|name| -> Arc<dyn Tool> {
                let ctx = self.ctx.clone();
                match name {
                    ToolName::Read => Arc::new(read::ReadTool::new(ctx)),
                    ToolName::Write => Arc::new(write::WriteTool::new(ctx)),
                    ToolName::Edit => Arc::new(edit::EditTool::new(ctx)),
                    ToolName::Bash => Arc::new(bash::BashTool::new(ctx)),
                    ToolName::Grep => Arc::new(grep::GrepTool::new(ctx)),
                    ToolName::Find => Arc::new(find::FindTool::new(ctx)),
                    ToolName::Ls => Arc::new(ls::LsTool::new(ctx)),
                    ToolName::WebFetch => Arc::new(web_fetch::WebFetchTool::new(ctx)),
                }
            })
            .collect()
    }

    /// The selected tools, in the order they are offered.
    pub fn names(&self) -> &[ToolName] {
        &self.names
    }

    /// The working directory the tools use.
    pub fn cwd(&self) -> &Path {
        &self.ctx.cwd
    }

    /// The first hook of the order: the deny rules, then the command `hooks`, for every tool (see
    /// [`PolicyHook`]).
    pub fn policy_hook(&self, hooks: Vec<CommandHook>) -> PolicyHook {
        PolicyHook::new(self.policy.deny_rules().to_vec(), hooks, self.ctx.cwd.clone())
    }

    /// The last hook of the order: the allow rules and the approval mode, asking the options'
    /// [`Prompt`](policy::Prompt) in `ask` mode about the call's [`Toolbox::preview`] (see [`ApprovalHook`]). For
    /// the tools of MCP servers give it their annotations with [`ApprovalHook::with_sources`].
    pub fn approval_hook(&self) -> ApprovalHook {
        ApprovalHook::new(self.policy.clone(), self.ctx.clone())
    }

    /// What a call of `tool` with `input` would do, worked out without doing it (the file is
    /// read, nothing is written): the summary an approval question shows and, for `write` and
    /// `edit`, the file's text before and after. `Err` is the error the call would end with (old
    /// text not found, a path outside the read roots, bad arguments), word for word.
    pub async fn preview(&self, tool: ToolName, input: &serde_json::Value) -> Result<Preview, String> {
        preview::preview(&self.ctx, tool, input).await
    }

    /// The policy in front of the tools.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The sandbox bash runs in.
    pub fn sandbox(&self) -> &SandboxConfig {
        &self.ctx.sandbox
    }

    /// The sandbox of the bash calls an allow rule runs ([`Policy::runs_by_rule`]) when it is
    /// not [`Toolbox::sandbox`]: workspace-write, chosen because the configured sandbox is off.
    /// Used only while the approval mode is not `auto`. `None` when the configured sandbox is on,
    /// no allow rule names `bash`, or this system cannot apply a sandbox (then such calls run
    /// unconfined).
    pub fn rule_sandbox(&self) -> Option<&SandboxConfig> {
        self.ctx.rule_sandbox.as_deref()
    }
}

/// Decodes a tool's arguments, with an error that names the tool and the problem.
fn parse_input<T: DeserializeOwned>(tool: ToolName, input: &serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(input.clone()).map_err(|e| format!("invalid arguments for {tool}: {e}").into())
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary:
/// how every tool's output cap (bash's, MCP results') cuts text.
pub fn cut_at(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A short one-line rendering of `text` for approval prompts and summaries.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(max_chars).collect();
    if first.chars().count() > max_chars || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the tools' unit tests.

    use super::*;
    use panto_core::{CancellationToken, ResultPart, ToolCall, ToolCallResult};

    /// A context over `dir`, no sandbox and no terminal.
    pub(crate) fn context(dir: &Path) -> ToolContext {
        ToolContext {
            cwd: dir.to_path_buf(),
            bash_timeout: Duration::from_secs(10),
            max_output_bytes: 4_096,
            roots: Roots::unrestricted(),
            sandbox: Arc::new(SandboxConfig::off()),
            deny: Arc::new([]),
            bash_progress: None,
            policy: Arc::new(Policy::new(Approval::Auto)),
            rule_sandbox: None,
            scrub_env: Arc::from([]),
            web: Arc::new(web_fetch::Web::new(false, Arc::new(web::SystemResolver))),
        }
    }

    /// Built-in `tool` as [`crate::builtin`] makes it for `dir` in approval `mode`: behind the
    /// policy.
    pub(crate) fn guarded(tool: ToolName, dir: &Path, mode: Approval) -> Arc<dyn Tool> {
        let mut options = Options::new(dir);
        options.tools = Some(vec![tool]);
        options.approval = mode;
        builtin(&options).unwrap().remove(0)
    }

    /// Calls `tool` with `input`, turning an `Err` into an error result as the agent does.
    pub(crate) async fn call(tool: &dyn Tool, input: serde_json::Value) -> ToolCallResult {
        call_with(tool, input, CancellationToken::new()).await
    }

    /// Calls `tool` with `input` and a cancel token.
    pub(crate) async fn call_with(
        tool: &dyn Tool,
        input: serde_json::Value,
        cancel: CancellationToken,
    ) -> ToolCallResult {
        let call = ToolCall::new("t1", tool.declaration().name, input).with_cancel(cancel);
        tool.call(call)
            .await
            .unwrap_or_else(|e| ToolCallResult::error(e.to_string()))
    }

    /// The text parts of a result, joined.
    pub(crate) fn text(result: &ToolCallResult) -> String {
        result
            .parts
            .iter()
            .filter_map(|p| match p {
                ResultPart::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_parse_and_reject_unknown_names() {
        let list = parse_list(&["read".into(), "bash".into(), "read".into()]).unwrap();
        assert_eq!(list, [ToolName::Read, ToolName::Bash]);
        assert_eq!(parse_list(&["none".into()]).unwrap(), []);
        let e = parse_list(&["rm".into()]).unwrap_err();
        assert!(
            e.contains("rm") && e.contains("read, write, edit, bash, grep, find, ls, web_fetch"),
            "{e}"
        );
    }
}
