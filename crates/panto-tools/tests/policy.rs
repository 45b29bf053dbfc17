//! The one policy chain: one rule list and one pair of hooks for built-in tools and the tools of
//! MCP servers (any tool source, whose tools hooks see as `source/tool`).

use std::sync::Arc;
use std::time::Duration;

use panto_core::{BeforeTool, Hook, ToolCall};
use panto_tools::policy::{
    offered_name, CalledTool, CommandHook, HookVerdict, Rule, SourceAnnotations, SourceRegistry,
};
use panto_tools::{Approval, Options, ToolName, Toolbox};
use serde_json::json;

/// A tool source whose `status` tool is annotated read-only.
#[derive(Debug)]
struct Git;

impl SourceAnnotations for Git {
    fn source_name(&self) -> &str {
        "git"
    }
    fn declares_read_only(&self, tool: &str) -> bool {
        tool == "status"
    }
}

fn toolbox(dir: &std::path::Path, approval: Approval) -> Toolbox {
    let mut options = Options::new(dir);
    options.approval = approval;
    options.deny = vec!["bash(rm *)".into(), "git__push*".into()];
    options.allow = vec!["bash(git status*)".into(), "git__log".into()];
    Toolbox::new(&options).unwrap()
}

fn call(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall::new("t1", name, input)
}

/// The same `[tools] deny`/`allow` list decides about a built-in tool's calls and an MCP tool's,
/// through the same two hooks, reached by the names hooks see (`bash`, `git/push_force`).
#[tokio::test]
async fn one_rule_list_governs_a_built_in_and_an_mcp_tool() {
    let dir = tempfile::tempdir().unwrap();
    let toolbox = toolbox(dir.path(), Approval::ReadOnly);
    let sources = SourceRegistry::new();
    sources.add(Arc::new(Git));
    let policy = toolbox.policy_hook(Vec::new());
    let approval = toolbox.approval_hook().with_sources(sources);

    // Deny rules: the built-in tool's by its argument, the MCP tool's by its name.
    let denied = |answer: BeforeTool| match answer {
        BeforeTool::Deny(reason) => reason,
        other => panic!("not denied: {other:?}"),
    };
    let r = denied(
        policy
            .before_tool(&call("bash", json!({"command": "ls; rm -rf x"})))
            .await,
    );
    assert_eq!(r, "the bash call is denied by the rule `bash(rm *)` ([tools] deny)");
    let r = denied(policy.before_tool(&call("git/push_force", json!({}))).await);
    assert_eq!(
        r,
        "the git__push_5fforce call is denied by the rule `git__push*` ([tools] deny)"
    );
    for passes in [
        call("bash", json!({"command": "ls"})),
        call("git/status", json!({})),
        call("my_own_tool", json!({})),
    ] {
        assert!(
            matches!(policy.before_tool(&passes).await, BeforeTool::Allow),
            "{}",
            passes.name
        );
    }

    // Allow rules and read-only approval: what a rule allows runs, what changes nothing runs,
    // the rest is refused, built-in or MCP alike.
    let refused = |answer: BeforeTool| match answer {
        BeforeTool::Respond(result) => format!("{:?}", result.parts),
        other => panic!("not refused: {other:?}"),
    };
    for runs in [
        call("bash", json!({"command": "git status --short"})),
        call("read", json!({"path": "x"})),
        call("git/log", json!({"n": 3})),
        call("git/status", json!({})),
        call("my_own_tool", json!({})),
    ] {
        assert!(
            matches!(approval.before_tool(&runs).await, BeforeTool::Allow),
            "{}",
            runs.name
        );
    }
    let r = refused(approval.before_tool(&call("bash", json!({"command": "make"}))).await);
    assert!(
        r.contains("the bash tool is not allowed: tool approval is read-only"),
        "{r}"
    );
    let r = refused(approval.before_tool(&call("git/commit", json!({"m": "x"}))).await);
    assert!(
        r.contains("the git__commit tool is not allowed: tool approval is read-only"),
        "{r}"
    );
}

/// A command hook whose `match` names MCP tools is asked about their calls (and only theirs),
/// gets the offered name as `tool`, and may rewrite the input; built-in calls meet only theirs.
#[tokio::test]
async fn command_hooks_match_built_in_and_mcp_tools_by_one_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let toolbox = toolbox(dir.path(), Approval::Auto);
    let seen = dir.path().join("seen.json");
    let hooks = vec![
        CommandHook {
            rule: Rule::parse("git__comm*").unwrap(),
            command: format!(
                r#"cat > '{}'; echo '{{"decision":"rewrite","input":{{"m":"signed"}}}}'"#,
                seen.display()
            ),
            timeout: Duration::from_secs(10),
        },
        CommandHook {
            rule: Rule::parse("bash(make*)").unwrap(),
            command: "echo 'no make today' >&2; exit 1".into(),
            timeout: Duration::from_secs(10),
        },
    ];
    let policy = toolbox.policy_hook(hooks);
    let git = CalledTool::Source {
        source: "git",
        tool: "commit",
    };
    assert_eq!(
        policy.decide(git, &json!({"m": "x"})).await,
        HookVerdict::Rewrite(json!({"m": "signed"}))
    );
    let payload: serde_json::Value = serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
    assert_eq!(payload["tool"], "git__commit");
    assert_eq!(payload["input"], json!({"m": "x"}));
    assert_eq!(
        policy
            .decide(CalledTool::Builtin(ToolName::Bash), &json!({"command": "make all"}))
            .await,
        HookVerdict::Deny("no make today".into())
    );
    let other = CalledTool::Source {
        source: "git",
        tool: "log",
    };
    assert_eq!(policy.decide(other, &json!({})).await, HookVerdict::Allow);
}

#[test]
fn mcp_rules_name_tools_offered_or_as_written_and_globs_work() {
    let exact = Rule::parse("git__git_status").unwrap();
    assert!(exact.names_source_tool("git", "git_status"));
    assert!(!exact.names_source_tool("git", "git_commit"));
    assert_eq!(exact.source_prefix(), Some("git"));
    assert_eq!(exact.builtin(), None);
    let offered = Rule::parse("git__git_5fstatus").unwrap();
    assert!(offered.names_source_tool("git", "git_status"));
    let all = Rule::parse("every__*").unwrap();
    assert!(all.names_source_tool("every", "echo") && !all.names_source_tool("git", "git_log"));
    let builtin = Rule::parse("bash(ls*)").unwrap();
    assert!(!builtin.names_source_tool("bash", "ls"));
    assert_eq!(builtin.source_prefix(), None);
    let e = Rule::parse("git__git_log(*)").unwrap_err().to_string();
    assert!(e.contains("name alone"), "{e}");
    let e = Rule::parse("rm").unwrap_err().to_string();
    assert!(e.contains("unknown tool \"rm\"") && e.contains("server__tool"), "{e}");
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
                    input_schema: json!({"type": "object"}),
                })
                .to_vec()
        }
        async fn call(&self, _: ToolCall) -> Result<panto_core::ToolCallResult, panto_core::ToolError> {
            Err("never called".into())
        }
    }
    let mut agent = panto_core::Agent::new(
        panto_core::Config::new(
            panto_core::ProviderConfig::new(panto_core::ApiStyle::OpenAiChat, "m")
                .with_base_url("http://127.0.0.1:9")
                .with_api_key("k"),
        ),
        panto_core::Session::create(Arc::new(panto_core::NullStore)),
        None,
    )
    .unwrap();
    agent.register_tool_source(Arc::new(Source)).unwrap();
    let offered: Vec<String> = agent.tools().into_iter().map(|d| d.name).collect();
    let ours: Vec<String> = ["git_status", "get-sum", "a b/c"]
        .iter()
        .map(|t| offered_name("my.srv", t))
        .collect();
    assert_eq!(offered, ours);
}
