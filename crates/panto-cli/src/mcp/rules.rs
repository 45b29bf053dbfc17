//! `[tools] allow` / `deny` rules that name MCP tools, and the names MCP tools are offered under.
//!
//! A built-in tool's rule is `TOOL` or `TOOL(GLOB)` (panto-tools parses it). An MCP tool has no
//! main argument to match, so its rule is its offered name alone, `<server>__<tool>`, where `*`,
//! `?`, `[…]` and `{a,b}` work as in globs (`git__*` is every tool of the server `git`). The name
//! is matched both as offered (the wire encoding escapes `_` inside a part, so `git_status` of
//! `git` is offered as `git__git_5fstatus`) and as written with the server's and the tool's own
//! names (`git__git_status`), so a rule can be written either way.

use globset::{GlobBuilder, GlobMatcher};

/// One `allow` or `deny` rule over MCP tool names.
#[derive(Debug, Clone)]
pub struct NameRule {
    text: String,
    glob: GlobMatcher,
}

impl NameRule {
    /// The rule for `text` when it names an MCP tool of one of `servers` (it starts with
    /// `<server>__`, written plainly or encoded): `None` when it does not, an error when it does
    /// but cannot be a rule.
    pub fn parse(text: &str, servers: &[&str]) -> Option<Result<NameRule, String>> {
        let trimmed = text.trim();
        let names_a_server = servers.iter().any(|server| {
            trimmed.starts_with(&format!("{server}__")) || trimmed.starts_with(&format!("{}__", encode_part(server)))
        });
        if !names_a_server {
            return None;
        }
        if trimmed.contains('(') {
            return Some(Err(format!(
                "{trimmed:?}: a rule for an MCP tool is its name alone (`server__tool`, globs allowed), \
                 without an argument glob in parentheses"
            )));
        }
        Some(
            GlobBuilder::new(trimmed)
                .literal_separator(false)
                .build()
                .map(|g| NameRule {
                    text: trimmed.to_owned(),
                    glob: g.compile_matcher(),
                })
                .map_err(|e| format!("{trimmed:?}: bad glob: {}", e.kind())),
        )
    }

    /// Whether the rule matches the tool `tool` of `server`.
    pub fn matches(&self, server: &str, tool: &str) -> bool {
        self.glob.is_match(offered_name(server, tool)) || self.glob.is_match(format!("{server}__{tool}"))
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// The name the model is offered tool `tool` of server `server` under: panto-core's encoding of
/// a tool source's names, `<server>__<tool>` with every byte outside `[A-Za-z0-9-]` written as
/// `_xx` (a test checks it against an agent's manifest). Names past 64 bytes are cut and hashed
/// by the registry; rules and listings use the uncut name.
pub fn offered_name(server: &str, tool: &str) -> String {
    format!("{}__{}", encode_part(server), encode_part(tool))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_tools_offered_or_as_written_and_globs_work() {
        let servers = ["git", "every"];
        let exact = NameRule::parse("git__git_status", &servers).unwrap().unwrap();
        assert!(exact.matches("git", "git_status"));
        assert!(!exact.matches("git", "git_commit"));
        let offered = NameRule::parse("git__git_5fstatus", &servers).unwrap().unwrap();
        assert!(offered.matches("git", "git_status"));
        let all = NameRule::parse("every__*", &servers).unwrap().unwrap();
        assert!(all.matches("every", "echo") && !all.matches("git", "git_log"));
        assert!(
            NameRule::parse("bash(ls*)", &servers).is_none(),
            "built-in rules are not ours"
        );
        assert!(NameRule::parse("other__x", &servers).is_none());
        let e = NameRule::parse("git__git_log(*)", &servers).unwrap().unwrap_err();
        assert!(e.contains("name alone"), "{e}");
    }

    #[tokio::test]
    async fn offered_names_are_the_ones_the_agent_offers() {
        struct Source;
        #[panto_core::async_trait]
        impl panto_core::ToolSource for Source {
            fn name(&self) -> &str {
                "my.srv"
            }
            fn tools(&self) -> Vec<panto_core::ToolDecl> {
                ["git_status", "get-sum", "a b/c"]
                    .map(|name| panto_core::ToolDecl {
                        name: name.into(),
                        description: String::new(),
                        input_schema: serde_json::json!({"type": "object"}),
                    })
                    .to_vec()
            }
            async fn call(&self, _: panto_core::ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
                unreachable!("never called")
            }
        }
        let mut agent = panto_core::Agent::new(
            panto_core::Config::new(
                panto_core::ProviderConfig::new(panto_core::ApiStyle::OpenAiChat, "m")
                    .with_base_url("http://127.0.0.1:9")
                    .with_api_key("k"),
            ),
            panto_core::Session::create(std::sync::Arc::new(panto_core::NullStore)),
            None,
        )
        .unwrap();
        agent.register_tool_source(std::sync::Arc::new(Source)).unwrap();
        let offered: Vec<String> = agent.tools().into_iter().map(|d| d.name).collect();
        let ours: Vec<String> = ["git_status", "get-sum", "a b/c"]
            .iter()
            .map(|t| offered_name("my.srv", t))
            .collect();
        assert_eq!(offered, ours);
    }
}
