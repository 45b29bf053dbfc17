//! How one MCP server is reached and what panto takes from it: the `[mcp.servers.NAME]` table of
//! the CLI's TOML, the objects of the C ABI's JSON, or a [`ServerConfig`] built in Rust.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The default of [`ServerConfig::startup_timeout_secs`].
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 30;
/// The default of [`ServerConfig::tool_timeout_secs`].
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 120;

/// One MCP server: either a program panto starts and talks to over its standard input and output
/// (`command`), or a streamable HTTP endpoint (`url`), never both.
///
/// Unknown fields are refused with an error naming the field, so a misspelt `bearer_token_env`
/// does not silently send requests without a token:
///
/// ```
/// let config: panto_mcp::ServerConfig =
///     serde_json::from_str(r#"{"command": "mcp-server-git", "args": ["--repository", "."]}"#).unwrap();
/// config.validate("git").unwrap();
///
/// let err = serde_json::from_str::<panto_mcp::ServerConfig>(r#"{"url": "http://127.0.0.1:1/mcp", "token": "x"}"#)
///     .unwrap_err();
/// assert!(err.to_string().contains("unknown field `token`"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program of a stdio server, looked up in `PATH` like a shell would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to the environment it inherits from panto. A variable set here is passed
    /// even when `scrub_env` or [`panto_tools::process::KEY_VARIABLES`] names it: the way to give a server
    /// a key on purpose.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Variables removed from the environment a stdio server inherits from panto, besides the
    /// well-known provider key variables ([`panto_tools::process::KEY_VARIABLES`]), which are always
    /// removed. The CLI adds every variable its configuration reads a key or token from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scrub_env: Vec<String>,
    /// Its working directory (panto's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server (`http://` or `https://`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every HTTP request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The name of an environment variable holding a bearer token for HTTP servers. The token is
    /// read when the server is connected and sent as `Authorization: Bearer ...`; it is never
    /// stored, logged or put in an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// Whether the server is used at all (default true): a disabled server is not started and
    /// offers no tools.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// How long starting the server (spawning or connecting, and the MCP initialization and tool
    /// listing) may take before it counts as failed.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_secs: u64,
    /// How long one tool call may take; past it the call is an error result and the server is
    /// told to cancel it (it keeps running).
    #[serde(default = "default_tool_timeout")]
    pub tool_timeout_secs: u64,
    /// Globs over the server's own tool names (`*` any characters, `?`, `[...]`, `{a,b}`): when
    /// not empty, only tools matching one of them are offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// Globs over the server's own tool names: tools matching one are never offered, whatever
    /// `allowed_tools` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied_tools: Vec<String>,
    /// Where a stdio server's standard error is appended (its directory is created). The CLI
    /// passes `$XDG_STATE_HOME/panto/mcp/<server>.log`; when absent the output is kept only in
    /// memory, for the tail that start-up warnings and errors quote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_log: Option<PathBuf>,
}

fn default_true() -> bool {
    true
}

fn default_startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_SECS
}

fn default_tool_timeout() -> u64 {
    DEFAULT_TOOL_TIMEOUT_SECS
}

/// How a server is reached, as [`ServerConfig::transport`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process over its standard input and output.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl ServerConfig {
    /// A stdio server running `command`, with the defaults for everything else.
    pub fn stdio(command: impl Into<String>) -> ServerConfig {
        ServerConfig {
            command: Some(command.into()),
            ..ServerConfig::empty()
        }
    }

    /// A streamable HTTP server at `url`, with the defaults for everything else.
    pub fn http(url: impl Into<String>) -> ServerConfig {
        ServerConfig {
            url: Some(url.into()),
            ..ServerConfig::empty()
        }
    }

    fn empty() -> ServerConfig {
        ServerConfig {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            scrub_env: Vec::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            bearer_token_env: None,
            enabled: true,
            startup_timeout_secs: DEFAULT_STARTUP_TIMEOUT_SECS,
            tool_timeout_secs: DEFAULT_TOOL_TIMEOUT_SECS,
            allowed_tools: Vec::new(),
            denied_tools: Vec::new(),
            stderr_log: None,
        }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> ServerConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> ServerConfig {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> ServerConfig {
        self.cwd = Some(cwd.into());
        self
    }

    /// Adds an HTTP header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> ServerConfig {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Names the environment variable holding the bearer token.
    pub fn bearer_token_env(mut self, var: impl Into<String>) -> ServerConfig {
        self.bearer_token_env = Some(var.into());
        self
    }

    /// Enables or disables the server.
    pub fn enabled(mut self, enabled: bool) -> ServerConfig {
        self.enabled = enabled;
        self
    }

    /// Sets the start-up timeout in seconds.
    pub fn startup_timeout_secs(mut self, secs: u64) -> ServerConfig {
        self.startup_timeout_secs = secs;
        self
    }

    /// Sets the tool-call timeout in seconds.
    pub fn tool_timeout_secs(mut self, secs: u64) -> ServerConfig {
        self.tool_timeout_secs = secs;
        self
    }

    /// Adds a glob of tools to offer.
    pub fn allow_tool(mut self, glob: impl Into<String>) -> ServerConfig {
        self.allowed_tools.push(glob.into());
        self
    }

    /// Adds a glob of tools never to offer.
    pub fn deny_tool(mut self, glob: impl Into<String>) -> ServerConfig {
        self.denied_tools.push(glob.into());
        self
    }

    /// Sets the file the server's standard error is appended to.
    pub fn stderr_log(mut self, path: impl Into<PathBuf>) -> ServerConfig {
        self.stderr_log = Some(path.into());
        self
    }

    /// Parses one server's configuration from JSON; an error names the field and the place.
    pub fn from_json(name: &str, json: &str) -> Result<ServerConfig, Error> {
        let mut de = serde_json::Deserializer::from_str(json);
        let config: ServerConfig = deserialize_whole(&mut de).map_err(|why| Error::Config {
            server: name.to_owned(),
            why,
        })?;
        config.validate(name)?;
        Ok(config)
    }

    /// How the server is reached, or why the configuration names no way or two.
    pub fn transport(&self) -> Result<TransportKind, String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err("`command` and `url` are both set; a server has one or the other".into()),
            (None, None) => Err("neither `command` (a stdio server) nor `url` (an HTTP server) is set".into()),
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err("`command` is empty".into());
                }
                if !self.headers.is_empty() || self.bearer_token_env.is_some() {
                    return Err("`headers` and `bearer_token_env` are for `url` servers, not `command` ones".into());
                }
                Ok(TransportKind::Stdio)
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("`url` {url:?} is not an http:// or https:// address"));
                }
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err("`args`, `env` and `cwd` are for `command` servers, not `url` ones".into());
                }
                Ok(TransportKind::Http)
            }
        }
    }

    /// Checks what serde cannot: one transport, valid globs, non-zero timeouts. `name` is the
    /// server's name, for the error. [`crate::McpSource::start`] checks this too.
    pub fn validate(&self, name: &str) -> Result<(), Error> {
        let bad = |why: String| Error::Config {
            server: name.to_owned(),
            why,
        };
        if name.is_empty() {
            return Err(bad("a server needs a non-empty name".into()));
        }
        self.transport().map_err(bad)?;
        if self.startup_timeout_secs == 0 {
            return Err(bad("`startup_timeout_secs` must be at least 1".into()));
        }
        if self.tool_timeout_secs == 0 {
            return Err(bad("`tool_timeout_secs` must be at least 1".into()));
        }
        crate::filter::ToolFilter::new(&self.allowed_tools, &self.denied_tools).map_err(bad)?;
        Ok(())
    }

    /// [`startup_timeout_secs`](ServerConfig::startup_timeout_secs) as a duration.
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.startup_timeout_secs.max(1))
    }

    /// [`tool_timeout_secs`](ServerConfig::tool_timeout_secs) as a duration.
    pub fn tool_timeout(&self) -> Duration {
        Duration::from_secs(self.tool_timeout_secs.max(1))
    }
}

/// Deserializes with serde_json's own error, which names an unknown field and gives line and
/// column; the field path is added by callers that have one.
fn deserialize_whole(de: &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>) -> Result<ServerConfig, String> {
    let config = ServerConfig::deserialize(&mut *de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let err = ServerConfig::from_json("git", r#"{"command": "x", "bearer_token": "T"}"#).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("git") && text.contains("unknown field `bearer_token`"),
            "{text}"
        );
    }

    #[test]
    fn a_server_needs_exactly_one_transport() {
        let both = ServerConfig::stdio("x").validate("s");
        assert!(both.is_ok());
        let mut config = ServerConfig::stdio("x");
        config.url = Some("http://127.0.0.1/mcp".into());
        let err = config.validate("s").unwrap_err().to_string();
        assert!(err.contains("`command` and `url` are both set"), "{err}");
        let err = ServerConfig::from_json("s", "{}").unwrap_err().to_string();
        assert!(err.contains("neither `command`"), "{err}");
        let err = ServerConfig::http("ftp://x").validate("s").unwrap_err().to_string();
        assert!(err.contains("not an http"), "{err}");
    }

    #[test]
    fn defaults_and_builder_agree_with_serde() {
        let parsed =
            ServerConfig::from_json("s", r#"{"command": "srv", "args": ["-v"], "denied_tools": ["rm*"]}"#).unwrap();
        assert_eq!(parsed, ServerConfig::stdio("srv").args(["-v"]).deny_tool("rm*"));
        assert!(parsed.enabled);
        assert_eq!(parsed.tool_timeout_secs, DEFAULT_TOOL_TIMEOUT_SECS);
    }

    #[test]
    fn bad_globs_and_zero_timeouts_are_refused() {
        let err = ServerConfig::stdio("x")
            .allow_tool("[")
            .validate("s")
            .unwrap_err()
            .to_string();
        assert!(err.contains("allowed_tools"), "{err}");
        let err = ServerConfig::stdio("x")
            .tool_timeout_secs(0)
            .validate("s")
            .unwrap_err()
            .to_string();
        assert!(err.contains("tool_timeout_secs"), "{err}");
    }
}
