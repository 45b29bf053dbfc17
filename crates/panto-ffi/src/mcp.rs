//! Tools from MCP servers added to an agent, configured by JSON in the shape of the CLI's
//! `[mcp.servers.NAME]` tables (panto-mcp's `ServerConfig`).

use std::ffi::c_char;
use std::fmt;
use std::sync::Arc;

use panto_mcp::ServerConfig;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::agent::panto_agent;
use crate::error::{panto_error, Failure};
use crate::guard::{handle, HandOut, Made};
use crate::status::{PANTO_ERR_CONFIG, PANTO_ERR_TOOL, PANTO_OK};

/// The JSON `panto_agent_add_mcp_servers` reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpOptions {
    /// The servers, in the order written.
    servers: OrderedServers,
    /// Offer only tools annotated `readOnlyHint` (as the CLI's read-only approval mode).
    #[serde(default)]
    read_only: bool,
    /// The cap on the text of one result, in bytes.
    max_result_bytes: Option<usize>,
}

/// A JSON object of servers, kept in the order it is written (so the tools are offered in it
/// and a provider's prompt cache holds from run to run).
#[derive(Debug, Default)]
struct OrderedServers(Vec<(String, ServerConfig)>);

impl<'de> Deserialize<'de> for OrderedServers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Servers;
        impl<'de> Visitor<'de> for Servers {
            type Value = OrderedServers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of servers by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedServers, A::Error> {
                let mut out: Vec<(String, ServerConfig)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(serde::de::Error::custom(format!("server {name:?} is listed twice")));
                    }
                    let config = map
                        .next_value::<ServerConfig>()
                        .map_err(|e| serde::de::Error::custom(format!("servers.{name}: {e}")))?;
                    out.push((name, config));
                }
                Ok(OrderedServers(out))
            }
        }
        deserializer.deserialize_map(Servers)
    }
}

/// Parses and checks the options: every server's configuration valid (one transport, valid
/// globs, non-zero timeouts).
fn parse(json: &str) -> Result<McpOptions, Failure> {
    let options: McpOptions = serde_json::from_str(json).map_err(|e| Failure::new(PANTO_ERR_CONFIG, e.to_string()))?;
    for (name, config) in &options.servers.0 {
        config
            .validate(name)
            .map_err(|e| Failure::new(PANTO_ERR_CONFIG, e.to_string()))?;
    }
    Ok(options)
}

/// Starts MCP servers and offers their tools to the agent as `<server>__<tool>` (see
/// docs/mcp.md). `servers_json` is `{"servers": {"NAME": {...}, ...}, "read_only": false,
/// "max_result_bytes": N}`; each server is an object with the keys of the CLI's
/// `[mcp.servers.NAME]`: `command`, `args`, `env`, `cwd` (a stdio server) or `url`, `headers`,
/// `bearer_token_env` (a streamable HTTP server), and `enabled`, `startup_timeout_secs`,
/// `tool_timeout_secs`, `allowed_tools`, `denied_tools`, `stderr_log` (a file the server's
/// standard error is appended to; without it, only the last lines are kept, for errors). The
/// servers start in parallel and their tools are offered in the order written. `read_only`
/// offers only tools annotated `readOnlyHint`. There is no approval question in the C ABI: the
/// config's `policy` (deny rules, command hooks, allow rules, approval mode; docs/ffi.md)
/// decides about every call, and without one every offered tool runs when the model calls it.
///
/// A server that does not start is not an error: the others are added, and `*warnings_out`
/// receives a JSON array of strings, one per server that did not start, naming it and quoting
/// the end of its standard error (which may span lines). When every enabled server started,
/// `*warnings_out` is NULL.
///
/// Errors: `PANTO_ERR_NULL` (`agent`, `servers_json`), `PANTO_ERR_UTF8`, `PANTO_ERR_CONFIG` (the
/// JSON does not parse or a server's configuration is wrong, naming the server and the field),
/// `PANTO_ERR_TOOL` (a server of that name is already added, or a tool name clashes),
/// `PANTO_ERR_BUSY`, `PANTO_ERR_STATE` (called from inside a tool callback). On error no server
/// was added (servers that had started are stopped).
///
/// Ownership: `servers_json` is borrowed for the call only. `*warnings_out` (may be NULL: the
/// warnings are dropped) receives an owned string or NULL, freed with `panto_string_free`. The
/// servers live as long as the agent: `panto_agent_free` stops them (a stdio server's whole
/// process group is killed). Thread safety: callable from any thread; blocks while the servers
/// start (each at most its `startup_timeout_secs`). Not callable from inside a tool callback.
///
/// # Safety
/// `agent` must be NULL or a live agent; `servers_json` NULL or a NUL-terminated string;
/// `warnings_out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_agent_add_mcp_servers(
    agent: *mut panto_agent,
    servers_json: *const c_char,
    warnings_out: *mut *mut c_char,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `warnings_out` and `err` NULL or writable.
    unsafe { HandOut::optional(warnings_out, "warnings_out", err) }.guard_status(|| {
        // SAFETY: the contract makes `agent` NULL or live.
        let agent = unsafe { handle(agent, "agent")? };
        // SAFETY: the contract makes `servers_json` NULL or NUL-terminated.
        let json = unsafe { crate::cstr::arg(servers_json, "servers_json") }?;
        let options = parse(&json)?;
        // Checked before anything starts: a name already taken fails the whole call.
        agent.shared.with_idle(|a| {
            let taken: Vec<String> = a.tools().into_iter().map(|d| d.name).collect();
            for (name, _) in &options.servers.0 {
                if taken.iter().any(|t| t.starts_with(&format!("{name}__"))) {
                    return Err(Failure::new(
                        PANTO_ERR_TOOL,
                        format!("an MCP server named {name:?} is already added; no server was added"),
                    ));
                }
            }
            Ok(())
        })?;
        let started = agent
            .rt
            .block_on("panto_agent_add_mcp_servers", panto_mcp::start_all(options.servers.0))?;
        for source in &started.sources {
            // The config's policy (if any) reads the server's read-only annotations.
            agent.sources.add(source.clone());
            source.set_read_only_mode(options.read_only);
            if let Some(bytes) = options.max_result_bytes {
                source.set_max_result_bytes(bytes);
            }
        }
        agent.shared.with_idle(|a| {
            for (i, source) in started.sources.iter().enumerate() {
                if let Err(e) = a.register_tool_source(source.clone() as Arc<dyn panto_core::ToolSource>) {
                    // All or nothing: take back the servers this call already registered.
                    for earlier in &started.sources[..i] {
                        for decl in a.tools() {
                            if decl.name.starts_with(&format!("{}__", earlier.name())) {
                                a.unregister_tool(&decl.name);
                            }
                        }
                    }
                    return Err(Failure::new(
                        PANTO_ERR_TOOL,
                        format!("MCP server `{}`: {e}", source.name()),
                    ));
                }
            }
            Ok(())
        })?;
        if started.warnings.is_empty() {
            return Ok(Made::Status(PANTO_OK));
        }
        let warnings: Vec<String> = started.warnings.iter().map(ToString::to_string).collect();
        // A JSON array rather than lines: a warning quotes the server's stderr, which has lines.
        Ok(Made::Value(serde_json::Value::from(warnings).to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_keep_their_order_and_bad_ones_name_the_server_and_the_field() {
        let options =
            parse(r#"{"servers": {"zeta": {"command": "z"}, "alpha": {"url": "http://127.0.0.1:1/mcp"}}}"#).unwrap();
        let names: Vec<&str> = options.servers.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"]);
        let e = parse(r#"{"servers": {"git": {"command": "x", "bearer_token": "T"}}}"#).unwrap_err();
        assert!(
            e.message.contains("servers.git") && e.message.contains("bearer_token"),
            "{}",
            e.message
        );
        let e = parse(r#"{"servers": {"both": {"command": "x", "url": "http://h/mcp"}}}"#).unwrap_err();
        assert!(
            e.message.contains("both") && e.message.contains("`command` and `url`"),
            "{}",
            e.message
        );
        let e = parse(r#"{"servers": {}, "readonly": true}"#).unwrap_err();
        assert!(e.message.contains("readonly"), "{}", e.message);
    }
}
