//! `[mcp.servers.NAME]`: the MCP servers whose tools the agent offers, in file order.
//!
//! Each table is a `panto_mcp::ServerConfig` as written (its unknown keys are refused by the
//! parser, at their line); what the schema cannot say is checked here, at the table's line: one
//! transport, valid globs, timeouts, and a name that can be a file name (the server's standard
//! error goes to `$XDG_STATE_HOME/panto/mcp/<NAME>.log`).

use std::path::{Path, PathBuf};

use panto_mcp::ServerConfig;

use super::file::{McpEntry, Source};
use super::Env;
use crate::exit::Failure;

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name: the table's key, and the prefix of its tools' offered names.
    pub name: String,
    /// How to reach it; `cwd` resolved against the config file's directory, `stderr_log` set.
    pub config: ServerConfig,
}

/// The servers of `[mcp.servers]` in the order the file lists them (so the tool manifest, and the
/// provider's prompt cache, stay the same from run to run).
pub fn resolve(section: &McpEntry, env: &Env, base_dir: &Path, source: &Source<'_>) -> Result<Vec<McpServer>, Failure> {
    let mut tables: Vec<_> = section.servers.iter().collect();
    tables.sort_by_key(|(_, table)| table.span().start);
    let mut out = Vec::new();
    for (name, table) in tables {
        let span = table.span();
        let key = format!("mcp.servers.{name}");
        check_name(name).map_err(|why| source.error(span.clone(), format!("{key}: {why}")))?;
        let mut config = table.get_ref().clone();
        config
            .validate(name)
            .map_err(|e| source.error(span.clone(), format!("{key}: {}", reason(&e))))?;
        if let Some(cwd) = &config.cwd {
            let raw = cwd.to_string_lossy();
            config.cwd = Some(
                env.expand(&raw, base_dir)
                    .map_err(|e| source.error(span.clone(), format!("{key}.cwd {e}")))?,
            );
        }
        if config.stderr_log.is_none() {
            config.stderr_log = log_path(env, name);
        }
        out.push(McpServer {
            name: name.clone(),
            config,
        });
    }
    Ok(out)
}

/// The file a server's standard error is appended to: `$XDG_STATE_HOME/panto/mcp/<name>.log`.
pub fn log_path(env: &Env, name: &str) -> Option<PathBuf> {
    env.state_dir().map(|d| d.join("mcp").join(format!("{name}.log")))
}

/// A server's name becomes a file name and the prefix of tool names: letters, digits, `-`, `_`
/// and `.`, not starting with `.`.
fn check_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "the server name {name:?} must be 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'"
        ))
    }
}

/// The library's configuration error without the server name it repeats (the key names it).
fn reason(error: &panto_mcp::Error) -> String {
    match error {
        panto_mcp::Error::Config { why, .. } => why.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::file;
    use super::*;

    fn load(text: &str) -> Result<Vec<McpServer>, Failure> {
        let path = Path::new("/etc/panto/c.toml");
        let parsed = file::parse(path, text)?;
        let env = Env::from_pairs(&[("HOME", "/h"), ("XDG_STATE_HOME", "/s")]);
        resolve(&parsed.mcp, &env, Path::new("/etc/panto"), &Source { path, text })
    }

    #[test]
    fn servers_come_in_file_order_with_their_settings_and_log_files() {
        let servers = load(
            r#"
[mcp.servers.zeta]
command = "mcp-server-git"
args = ["--repository", "."]
env = { GIT_DIR = ".git" }
cwd = "repo"
tool_timeout_secs = 5
denied_tools = ["git_commit"]

[mcp.servers.alpha]
url = "http://127.0.0.1:3001/mcp"
headers = { x-team = "platform" }
bearer_token_env = "ALPHA_TOKEN"
enabled = false
startup_timeout_secs = 3
allowed_tools = ["echo", "get-*"]
"#,
        )
        .unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"], "file order, not name order");
        let zeta = &servers[0].config;
        assert_eq!(zeta.command.as_deref(), Some("mcp-server-git"));
        assert_eq!(zeta.cwd.as_deref(), Some(Path::new("/etc/panto/repo")));
        assert_eq!(zeta.env["GIT_DIR"], ".git");
        assert_eq!(zeta.tool_timeout_secs, 5);
        assert_eq!(zeta.stderr_log.as_deref(), Some(Path::new("/s/panto/mcp/zeta.log")));
        let alpha = &servers[1].config;
        assert!(!alpha.enabled);
        assert_eq!(alpha.headers["x-team"], "platform");
        assert_eq!(alpha.bearer_token_env.as_deref(), Some("ALPHA_TOKEN"));
        assert_eq!(alpha.allowed_tools, ["echo", "get-*"]);
    }

    #[test]
    fn an_unknown_key_names_the_file_the_line_and_the_key() {
        let e = load("[mcp.servers.git]\ncommand = \"x\"\nbearer_token = \"T\"\n").unwrap_err();
        assert!(
            e.message.contains("/etc/panto/c.toml:3:") && e.message.contains("bearer_token"),
            "{}",
            e.message
        );
        let e = load("[mcp]\nserver = {}\n").unwrap_err();
        assert!(
            e.message.contains(":2:") && e.message.contains("server"),
            "{}",
            e.message
        );
    }

    #[test]
    fn what_the_schema_cannot_say_is_an_error_at_the_servers_table() {
        for (text, message) in [
            (
                "\n[mcp.servers.both]\ncommand = \"x\"\nurl = \"http://127.0.0.1/mcp\"\n",
                "mcp.servers.both: `command` and `url` are both set",
            ),
            (
                "\n[mcp.servers.none]\nenabled = true\n",
                "mcp.servers.none: neither `command`",
            ),
            (
                "\n[mcp.servers.glob]\ncommand = \"x\"\nallowed_tools = [\"[\"]\n",
                "mcp.servers.glob: `allowed_tools[0]`",
            ),
            (
                "\n[mcp.servers.slow]\ncommand = \"x\"\ntool_timeout_secs = 0\n",
                "`tool_timeout_secs` must be at least 1",
            ),
            (
                "\n[mcp.servers.\"../../etc\"]\ncommand = \"x\"\n",
                "the server name \"../../etc\" must be",
            ),
        ] {
            let e = load(text).unwrap_err();
            assert!(
                e.message.contains("c.toml:2:") && e.message.contains(message),
                "{text:?}: {}",
                e.message
            );
        }
    }
}
