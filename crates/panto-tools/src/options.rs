//! [`Options`]: how an embedder (or the CLI's `[tools]` section) configures the built-in tools.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::approval::Approval;
use crate::bash::BashProgress;
use crate::error::Error;
use crate::policy::{Policy, Prompt, Rule};
use crate::roots::Roots;
use crate::sandbox::{Sandbox, SandboxConfig};
use crate::{ToolContext, ToolName};

/// Default timeout of one bash command.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Default cap on a tool's text output, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;

/// The environment variables the well-known LLM providers read their API keys from. None of
/// them reaches a `bash` command or an MCP stdio server panto starts ([`scrub_key_variables`]),
/// whatever the options say: a model that runs `echo $ANTHROPIC_API_KEY` would otherwise put the
/// key into its tool result, the session and whatever the result is shown or exported to.
/// A front end adds the variables its own provider configuration names
/// ([`Options::scrub_env`]).
pub const KEY_VARIABLES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "CEREBRAS_API_KEY",
    "PERPLEXITY_API_KEY",
    "COHERE_API_KEY",
];

/// Removes from `command`'s environment (what it would inherit from this process) every
/// variable of [`KEY_VARIABLES`] and of `more`. Variables set on `command` afterwards (an MCP
/// server's own `env` table) are passed as set.
pub fn scrub_key_variables(command: &mut std::process::Command, more: &[String]) {
    for name in KEY_VARIABLES.iter().copied().chain(more.iter().map(String::as_str)) {
        command.env_remove(name);
    }
}

/// The configuration of the built-in tools. Built with [`Options::new`] and changed field by
/// field, or parsed from JSON with [`Options::from_json`] (the C ABI's form: the field names
/// below, every one optional, e.g. `{"cwd": "/w", "sandbox": "workspace-write", "allow":
/// ["bash(git status*)"]}`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Options {
    /// The working directory: relative paths and commands start here, and in the
    /// `workspace-write` sandbox it is what may be written. Default: the process's.
    pub cwd: Option<PathBuf>,
    /// The tools offered, in this order. Default: every built-in tool.
    pub tools: Option<Vec<ToolName>>,
    /// How calls no rule decided are approved, at first: the tools' policy holds it in a handle
    /// that changes it while they live ([`crate::policy::Policy::approval_mode`]). Default:
    /// `auto` (an embedder has nobody to ask unless it sets a [`Prompt`]).
    pub approval: Approval,
    /// `TOOL` / `TOOL(GLOB)` rules whose calls run without approval.
    pub allow: Vec<String>,
    /// `TOOL` / `TOOL(GLOB)` rules whose calls are refused, whatever else says.
    pub deny: Vec<String>,
    /// The bash timeout when the model gives none, in seconds. Default 120.
    pub bash_timeout_secs: u64,
    /// The cap on a tool's text output, in bytes. Default 30000.
    pub max_output_bytes: usize,
    /// The directories the file tools may use; `None` (the default) leaves them unrestricted.
    /// Must exist.
    pub read_roots: Option<Vec<PathBuf>>,
    /// The sandbox of `bash` and of where `write`/`edit` may write. Default: off. When it is
    /// off and the approval mode is not `auto`, a `bash` call that runs because an allow rule
    /// matched it (nobody approved it) still runs in `workspace-write` where this system can
    /// apply it ([`crate::Toolbox::rule_sandbox`]).
    pub sandbox: Sandbox,
    /// Whether sandboxed commands may open internet (`AF_INET`/`AF_INET6`) sockets. Default false.
    pub sandbox_network: bool,
    /// More directories the `workspace-write` sandbox lets tools write.
    pub writable_roots: Vec<PathBuf>,
    /// Environment variables removed from what `bash` commands inherit, besides
    /// [`KEY_VARIABLES`] (always removed): the variables the embedder reads its provider keys
    /// and other secrets from (the CLI lists every provider's `api_key_env` and every MCP
    /// server's `bearer_token_env`). Default: none.
    pub scrub_env: Vec<String>,
    /// Whether `web_fetch` may connect to loopback, private, link-local and unique-local
    /// addresses (never to the cloud metadata address, see [`crate::web::check_address`]).
    /// Default false.
    pub web_fetch_private: bool,
    /// How `web_fetch` resolves host names; `None` (the default) is the system's resolver
    /// ([`crate::web::SystemResolver`]). Every address it returns is checked before use.
    #[serde(skip)]
    pub web_resolver: Option<Arc<dyn crate::web::Resolver>>,
    /// The question asked in `ask` mode (the CLI's terminal prompt).
    #[serde(skip)]
    pub prompt: Option<Arc<dyn Prompt>>,
    /// Appended to the read-only refusal: how to get a tool allowed in this front end.
    #[serde(skip)]
    pub read_only_hint: String,
    /// Receives `bash`'s output while the command runs (an interactive front end shows its
    /// tail live). `None` (the default): the output is only in the result.
    #[serde(skip)]
    pub bash_progress: Option<Arc<dyn BashProgress>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cwd: None,
            tools: None,
            approval: Approval::Auto,
            allow: Vec::new(),
            deny: Vec::new(),
            bash_timeout_secs: DEFAULT_BASH_TIMEOUT.as_secs(),
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            read_roots: None,
            sandbox: Sandbox::Off,
            sandbox_network: false,
            writable_roots: Vec::new(),
            scrub_env: Vec::new(),
            web_fetch_private: false,
            web_resolver: None,
            prompt: None,
            read_only_hint: String::new(),
            bash_progress: None,
        }
    }
}

impl Options {
    /// The defaults, working in `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Options {
        Options {
            cwd: Some(cwd.into()),
            ..Options::default()
        }
    }

    /// Options from JSON (an object with the fields of [`Options`]); the error names the field
    /// and what was wrong.
    pub fn from_json(json: &str) -> Result<Options, Error> {
        let de = &mut serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!("{path}: ")
            };
            Error::BadOptions(format!("{at}{}", e.inner()))
        })
    }

    /// Parses the rules, resolves the paths and probes the sandbox.
    pub(crate) fn prepare(&self) -> Result<(ToolContext, Arc<Policy>, Vec<ToolName>), Error> {
        let parse = |list: &[String]| list.iter().map(|r| Rule::parse(r)).collect::<Result<Vec<_>, _>>();
        let cwd = match &self.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir().map_err(|source| Error::Path {
                what: "the working directory",
                path: ".".into(),
                source,
            })?,
        };
        let cwd = cwd.canonicalize().map_err(|source| Error::Path {
            what: "the working directory",
            path: cwd.display().to_string(),
            source,
        })?;
        let mut policy = Policy::new(self.approval)
            .with_rules(parse(&self.deny)?, parse(&self.allow)?)
            .with_read_only_hint(&self.read_only_hint);
        if let Some(prompt) = &self.prompt {
            policy = policy.with_prompt(prompt.clone());
        }
        let roots = match &self.read_roots {
            None => Roots::unrestricted(),
            Some(list) => Roots::new(
                list.iter()
                    .map(|p| {
                        p.canonicalize().map_err(|source| Error::Path {
                            what: "read_roots:",
                            path: p.display().to_string(),
                            source,
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        let mut sandbox = SandboxConfig::new(self.sandbox, self.sandbox_network, &cwd, &self.writable_roots)?;
        sandbox.probe()?;
        let mut names = Vec::new();
        for name in self.tools.clone().unwrap_or_else(|| ToolName::ALL.to_vec()) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        // A bash call an allow rule runs (in `ask` or `read-only`, where nobody approved it) runs
        // sandboxed: workspace-write with the configured network switch when the configured
        // sandbox is off and this system can apply one; else as configured. Made whatever the
        // approval mode is now: the mode can change while the tools live, and the policy tells
        // at each call whether it applies ([`Policy::runs_by_rule`]).
        let rule_sandbox = if !sandbox.is_on() && names.contains(&ToolName::Bash) && policy.allows_any(ToolName::Bash) {
            SandboxConfig::new(
                Sandbox::WorkspaceWrite,
                self.sandbox_network,
                &cwd,
                &self.writable_roots,
            )
            .ok()
            .and_then(|mut s| s.probe().is_ok().then_some(s))
            .map(Arc::new)
        } else {
            None
        };
        let policy = Arc::new(policy);
        let ctx = ToolContext {
            cwd,
            bash_timeout: Duration::from_secs(self.bash_timeout_secs.max(1)),
            max_output_bytes: self.max_output_bytes.max(1024),
            roots,
            sandbox: Arc::new(sandbox),
            deny: policy.deny_rules().into(),
            bash_progress: self.bash_progress.clone(),
            policy: policy.clone(),
            rule_sandbox,
            scrub_env: self.scrub_env.clone().into(),
            web: Arc::new(crate::web_fetch::Web::new(
                self.web_fetch_private,
                self.web_resolver
                    .clone()
                    .unwrap_or_else(|| Arc::new(crate::web::SystemResolver)),
            )),
        };
        Ok((ctx, policy, names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_options_parse_and_errors_name_the_field() {
        let o = Options::from_json(r#"{"cwd": "/w", "tools": ["read", "bash"], "approval": "read-only", "sandbox": "workspace-write", "allow": ["bash(ls*)"]}"#).unwrap();
        assert_eq!(o.tools, Some(vec![ToolName::Read, ToolName::Bash]));
        assert_eq!(o.approval, Approval::ReadOnly);
        assert_eq!(o.sandbox, Sandbox::WorkspaceWrite);
        let e = Options::from_json(r#"{"tools": ["rm"]}"#).unwrap_err().to_string();
        assert!(e.contains("tools[0]") && e.contains("rm"), "{e}");
        let e = Options::from_json(r#"{"sandbx": "off"}"#).unwrap_err().to_string();
        assert!(e.contains("sandbx"), "{e}");
    }

    #[test]
    fn a_bad_rule_fails_the_whole_set() {
        let mut o = Options::new(std::env::temp_dir());
        o.deny = vec!["bash(rm".into()];
        let e = o.prepare().unwrap_err().to_string();
        assert!(e.contains("bad tool rule `bash(rm`"), "{e}");
    }
}
