//! Installs panto-tools' one policy chain on an agent of the CLI, in front of every tool,
//! built-in or MCP: deny rules and command hooks (`PolicyHook`), then allow rules and the approval
//! mode (`ApprovalHook`, which in `ask` mode asks the [`Gate`](super::Gate), the terminal). So one
//! gate asks every question, one at a time, and remembers "always" for every tool.

use std::sync::Arc;

use panto_core::Agent;
use panto_tools::policy::SourceRegistry;
use panto_tools::Toolbox;

use crate::config::CommandHooks;

/// Registers the built-in tools of `toolbox` (whose options hold the gate as their prompt) and
/// the hooks that put the policy in front of every tool, in the order deny rules, command
/// `hooks`, allow rules, approval. `mcp` holds the MCP servers' annotations (a tool annotated
/// read-only runs without approval). The MCP servers' tools are registered by the caller, after
/// these.
pub fn install(
    agent: &mut Agent,
    toolbox: &Toolbox,
    mcp: SourceRegistry,
    hooks: CommandHooks,
) -> Result<(), panto_core::Error> {
    for tool in toolbox.bare_tools() {
        agent.register_tool(tool)?;
    }
    agent.add_hook(Arc::new(toolbox.policy_hook(hooks)));
    agent.add_hook(Arc::new(toolbox.approval_hook().with_sources(mcp)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use panto_core::{ApiStyle, CancellationToken, Config, NullStore, ProviderConfig, Session};
    use panto_testkit::{script, MockServer, Reply};
    use serde_json::json;

    use std::time::Duration;

    use panto_core::{BeforeTool, Hook, ToolCall};

    use super::*;
    use crate::mcp::GatedSource;
    use crate::tools::{Answer, Approval, Asker, Gate};

    fn annotations(source: &Arc<panto_mcp::McpSource>) -> SourceRegistry {
        let registry = SourceRegistry::new();
        registry.add(source.clone());
        registry
    }

    /// Records every question and answers no.
    #[derive(Debug, Default)]
    struct Questions {
        asked: Mutex<Vec<String>>,
    }

    impl Asker for Questions {
        fn ask(&self, question: &str, _cancel: &CancellationToken) -> Option<Answer> {
            self.asked.lock().unwrap().push(question.to_owned());
            Some(Answer::No)
        }
    }

    impl Questions {
        fn sorted(&self) -> Vec<String> {
            let mut asked = self.asked.lock().unwrap().clone();
            asked.sort();
            asked
        }
    }

    /// An embedder's hook: records the calls it is shown and denies those that mention
    /// "blocked".
    #[derive(Default)]
    struct Blocker {
        seen: Mutex<Vec<String>>,
    }

    #[panto_core::async_trait]
    impl Hook for Blocker {
        async fn before_tool(&self, call: &ToolCall) -> BeforeTool {
            let input = call.input.to_string();
            self.seen.lock().unwrap().push(input.clone());
            if input.contains("blocked") {
                BeforeTool::Deny("blocked by the test hook".into())
            } else {
                BeforeTool::Allow
            }
        }
    }

    /// The gate in `ask` mode with `questions` as the terminal, and the built-in tools in `dir`
    /// with a deny rule, asking that gate.
    fn gate_and_toolbox(dir: &std::path::Path, questions: &Arc<Questions>) -> (Arc<Gate>, Toolbox) {
        let gate = Arc::new(Gate::new(Some(questions.clone() as Arc<dyn Asker>)));
        let mut options = panto_tools::Options::new(dir);
        options.approval = Approval::Ask;
        options.deny = vec!["bash(sudo *)".into()];
        options.prompt = Some(gate.clone());
        (gate, Toolbox::new(&options).unwrap())
    }

    fn agent(server: &MockServer) -> Agent {
        let provider = ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_base_url(server.anthropic_base_url())
            .with_api_key("key");
        Agent::new(Config::new(provider), Session::create(NullStore::shared()), None).unwrap()
    }

    /// Runs one turn whose first answer makes `calls` and returns each call's result text by id.
    async fn results_of(agent: &mut Agent, server: &MockServer) -> Vec<(String, String)> {
        let mut stream = agent.run("go".into());
        while stream.next().await.unwrap().is_some() {}
        drop(stream);
        let second = server.requests()[1].json().unwrap();
        let last = second["messages"].as_array().unwrap().last().unwrap().clone();
        last["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| {
                let text = block["content"].as_array().map_or(String::new(), |parts| {
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                });
                (block["tool_use_id"].as_str().unwrap().to_owned(), text)
            })
            .collect()
    }

    fn result<'a>(results: &'a [(String, String)], id: &str) -> &'a str {
        &results.iter().find(|(i, _)| i == id).unwrap().1
    }

    #[tokio::test]
    async fn deny_rules_then_hooks_then_approval_and_a_failing_preview_is_not_asked_about() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "one\n").unwrap();
        let server = MockServer::start().await;
        let edit = json!({"path": "f.txt", "old_string": "two", "new_string": "three"}).to_string();
        server.push(Reply::sse(script::anthropic_tool_uses(&[
            ("t1", "bash", r#"{"command":"sudo rm -rf /"}"#),
            ("t2", "bash", r#"{"command":"echo blocked"}"#),
            ("t3", "bash", r#"{"command":"echo asked"}"#),
            ("t4", "edit", &edit),
        ])));
        server.push(Reply::sse(script::anthropic_text("done")));
        let questions = Arc::new(Questions::default());
        let (_gate, toolbox) = gate_and_toolbox(dir.path(), &questions);
        let mut agent = agent(&server);
        for tool in toolbox.bare_tools() {
            agent.register_tool(tool).unwrap();
        }
        // The order install() keeps, with an embedder's hook where hooks go: before approval.
        let blocker = Arc::new(Blocker::default());
        agent.add_hook(Arc::new(toolbox.policy_hook(Vec::new())));
        agent.add_hook(blocker.clone());
        agent.add_hook(Arc::new(toolbox.approval_hook()));
        let results = results_of(&mut agent, &server).await;

        // The deny rule decided before the hook saw the call; the hook's denial before any
        // question; only the call both let through was asked about.
        let r1 = result(&results, "t1");
        assert!(r1.contains("denied by the rule `bash(sudo *)`"), "{r1}");
        assert_eq!(result(&results, "t2"), "the call was denied: blocked by the test hook");
        assert_eq!(
            result(&results, "t3"),
            "the bash call did not run: the user declined this call"
        );
        let mut seen = blocker.seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(
            seen,
            [
                r#"{"command":"echo asked"}"#,
                r#"{"command":"echo blocked"}"#,
                edit.as_str()
            ]
        );
        // The edit whose text is not in the file is not asked about: it fails as the tool does.
        let r4 = result(&results, "t4");
        assert!(r4.starts_with("old_string was not found in f.txt;"), "{r4}");
        assert_eq!(questions.sorted(), ["allow bash: echo asked"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "one\n");
    }

    /// The testkit's MCP fault server as the source `faults`, with the names its `sleep` and
    /// `echo` tools are offered under.
    async fn faults() -> (Arc<panto_mcp::McpSource>, String, String) {
        let config = panto_mcp::ServerConfig::stdio(panto_testkit::mcp::fault_server().to_string_lossy());
        let source = Arc::new(panto_mcp::McpSource::start("faults", config).await.unwrap());
        let offered = |tool: &str| panto_tools::policy::offered_name("faults", tool);
        (source, offered("sleep"), offered("echo"))
    }

    #[tokio::test]
    async fn an_mcp_tool_and_a_built_in_tool_are_asked_about_by_the_same_hook() {
        let dir = tempfile::tempdir().unwrap();
        let (source, sleep, echo) = faults().await;
        let server = MockServer::start().await;
        server.push(Reply::sse(script::anthropic_tool_uses(&[
            ("t1", "bash", r#"{"command":"echo built-in"}"#),
            ("t2", &sleep, r#"{"ms":1}"#),
            ("t3", &echo, r#"{"text":"read-only, so not asked"}"#),
        ])));
        server.push(Reply::sse(script::anthropic_text("done")));
        let questions = Arc::new(Questions::default());
        let (gate, toolbox) = gate_and_toolbox(dir.path(), &questions);
        let gated = Arc::new(GatedSource::new(
            source.clone(),
            gate,
            Vec::new(),
            toolbox.policy().approval_mode().clone(),
        ));
        let mut agent = agent(&server);
        install(&mut agent, &toolbox, annotations(&source), CommandHooks::default()).unwrap();
        agent.register_tool_source(gated).unwrap();
        let results = results_of(&mut agent, &server).await;
        source.shutdown().await;

        assert_eq!(
            questions.sorted(),
            ["allow bash: echo built-in".to_owned(), format!("allow {sleep}: ms: 1")]
        );
        assert_eq!(
            result(&results, "t1"),
            "the bash call did not run: the user declined this call"
        );
        // Declined, so the server never slept; the read-only tool ran without a question.
        assert_eq!(
            result(&results, "t2"),
            format!("the {sleep} call did not run: the user declined this call")
        );
        assert!(
            result(&results, "t3").contains("read-only, so not asked"),
            "{results:?}"
        );
    }

    /// The approval mode changed through the policy's handle changes what an MCP server's tools
    /// offer and whether their calls are asked about, and moves the source's generation so the
    /// agent reads its tools again before the next request.
    #[tokio::test]
    async fn a_changed_mode_changes_what_an_mcp_server_offers() {
        use panto_core::ToolSource;

        let dir = tempfile::tempdir().unwrap();
        let (source, _, _) = faults().await;
        let questions = Arc::new(Questions::default());
        let (gate, toolbox) = gate_and_toolbox(dir.path(), &questions);
        let mode = toolbox.policy().approval_mode().clone();
        let gated = GatedSource::new(source.clone(), gate, Vec::new(), mode.clone());
        let offered = |tool: &str| gated.tools().iter().any(|t| t.name == tool);
        let before = gated.generation();
        assert!(offered("sleep") && offered("echo"));
        assert!(gated.asks("sleep"));

        mode.set(Approval::ReadOnly);
        assert_ne!(gated.generation(), before, "the agent reads the tools again");
        assert!(
            !offered("sleep"),
            "not annotated read-only: not offered in read-only mode"
        );
        assert!(offered("echo"));

        mode.set(Approval::Auto);
        assert!(offered("sleep"));
        assert!(!gated.asks("sleep"), "auto asks nothing");
        mode.set(Approval::Ask);
        assert_eq!(gated.generation(), before);
        assert!(gated.asks("sleep"));
        source.shutdown().await;
    }

    /// A command hook whose `match` names MCP tools is asked about their calls after the deny
    /// rules and before approval: it sees the offered name and the arguments, its denial is the
    /// result, and its rewrite is what the approval question shows.
    #[tokio::test]
    async fn command_hooks_match_mcp_tools_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let (source, sleep, echo) = faults().await;
        let server = MockServer::start().await;
        server.push(Reply::sse(script::anthropic_tool_uses(&[
            ("t1", &echo, r#"{"text":"hello"}"#),
            ("t2", &sleep, r#"{"ms":1}"#),
            ("t3", "bash", r#"{"command":"echo no hook on me"}"#),
        ])));
        server.push(Reply::sse(script::anthropic_text("done")));
        let questions = Arc::new(Questions::default());
        let (gate, toolbox) = gate_and_toolbox(dir.path(), &questions);
        let gated = Arc::new(GatedSource::new(
            source.clone(),
            gate,
            Vec::new(),
            toolbox.policy().approval_mode().clone(),
        ));
        let rule = |text: &str| panto_tools::policy::Rule::parse(text).unwrap();
        let seen = dir.path().join("seen.json");
        let hooks = vec![
            panto_tools::policy::CommandHook {
                rule: rule("faults__echo"),
                command: r#"echo '{"decision":"deny","reason":"no echo today"}'"#.into(),
                timeout: Duration::from_secs(10),
            },
            panto_tools::policy::CommandHook {
                rule: rule("faults__sl*"),
                command: format!(
                    r#"cat > '{}'; echo '{{"decision":"rewrite","input":{{"ms":2}}}}'"#,
                    seen.display()
                ),
                timeout: Duration::from_secs(10),
            },
        ];
        let mut agent = agent(&server);
        install(&mut agent, &toolbox, annotations(&source), hooks).unwrap();
        agent.register_tool_source(gated).unwrap();
        let results = results_of(&mut agent, &server).await;
        source.shutdown().await;

        assert_eq!(result(&results, "t1"), "the call was denied: no echo today");
        let payload: serde_json::Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
        assert_eq!(payload["tool"], sleep.as_str(), "the hook sees the offered name");
        assert_eq!(payload["input"], json!({"ms": 1}));
        // The rewritten call is what approval asks about; the built-in call met no MCP hook.
        assert_eq!(
            questions.sorted(),
            [
                "allow bash: echo no hook on me".to_owned(),
                format!("allow {sleep}: ms: 2")
            ]
        );
    }
}
