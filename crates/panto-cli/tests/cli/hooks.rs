//! Command hooks from the config file: the documented example (docs/hooks.md), run as written.

use panto_testkit::{script, MockServer, Reply};

use super::support::{body, Home};

/// The fenced block of `lang` that follows `after` in docs/hooks.md.
fn doc_block(after: &str, lang: &str) -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/hooks.md")).unwrap();
    let from = doc
        .find(after)
        .unwrap_or_else(|| panic!("docs/hooks.md has no {after:?}"));
    let fence = format!("```{lang}\n");
    let start = from + doc[from..].find(&fence).unwrap() + fence.len();
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end].to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_rm_rf_hook_denies_outside_and_allows_inside() {
    let mut home = Home::new();
    let outside = home.home().join("photos");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("cat.jpg"), "precious").unwrap();
    std::fs::create_dir_all(home.work().join("build")).unwrap();
    std::fs::create_dir_all(home.work().join("build2")).unwrap();
    let outside_path = outside.display().to_string();
    // A compound command whose last part is harmless: every part is checked.
    let documents = home.home().join("documents");
    std::fs::create_dir_all(&documents).unwrap();
    std::fs::write(documents.join("thesis.tex"), "precious").unwrap();
    let compound =
        serde_json::json!({ "command": format!("rm -rf {}; rm -rf build2", documents.display()) }).to_string();

    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        (
            "toolu_out",
            "bash",
            &format!(r#"{{"command":"rm -rf {outside_path}"}}"#),
        ),
        ("toolu_in", "bash", r#"{"command":"rm -rf build"}"#),
        ("toolu_compound", "bash", &compound),
    ])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    home.anthropic(&server);

    // The config and the script exactly as docs/hooks.md shows them.
    home.write_config(&doc_block("`~/.config/panto/config.toml`:", "toml"));
    let hook = home.home().join(".config/panto/hooks/no-rm-rf-outside.sh");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, doc_block("`~/.config/panto/hooks/no-rm-rf-outside.sh`:", "sh")).unwrap();

    // No sandbox and auto approval: the hook is the only thing between the model and the files.
    let out = home
        .run(&["-p", "clean up", "--approve", "auto", "--sandbox", "off"], None)
        .await;
    assert_eq!(out.ok(), "Done.\n");
    assert!(
        outside.join("cat.jpg").exists(),
        "the hook must stop rm -rf outside the working directory"
    );
    assert!(
        !home.work().join("build").exists(),
        "rm -rf inside the working directory runs"
    );
    assert!(
        documents.join("thesis.tex").exists() && home.work().join("build2").exists(),
        "a compound command with an rm -rf outside must be denied whole"
    );

    let second = body(&server.requests()[1]);
    let results = second["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let denied = results
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tool_use_id"] == "toolu_out")
        .unwrap();
    assert_eq!(denied["is_error"], true);
    let real_outside = outside.canonicalize().unwrap().display().to_string();
    assert_eq!(
        denied["content"][0]["text"].as_str().unwrap(),
        format!("the call was denied: rm -rf outside the working directory ({real_outside}) is not allowed")
    );
    let compound = results
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tool_use_id"] == "toolu_compound")
        .unwrap();
    let real_documents = documents.canonicalize().unwrap().display().to_string();
    assert_eq!(
        compound["content"][0]["text"].as_str().unwrap(),
        format!("the call was denied: rm -rf outside the working directory ({real_documents}) is not allowed")
    );
}

/// A hook whose `match` names an MCP tool is asked about that tool's calls, from the config file:
/// its denial is what the model reads, and the server's other tools are not held up by it. A
/// `match` naming neither a built-in tool nor a configured server is an error at its line.
#[tokio::test(flavor = "multi_thread")]
async fn a_hook_matches_an_mcp_tool_by_name() {
    let mut home = Home::new();
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_tool_uses(&[
        ("toolu_echo", "faults__echo", r#"{"text":"held back"}"#),
        ("toolu_sleep", "faults__sleep", r#"{"ms":1}"#),
    ])));
    server.push(Reply::sse(script::anthropic_text("Done.")));
    home.anthropic(&server);
    let fault_server = panto_testkit::mcp::fault_server();
    let servers = format!(
        "[mcp.servers.faults]\ncommand = {:?}\n",
        fault_server.display().to_string()
    );
    home.write_config(&format!(
        "{servers}\n[[hooks.before_tool]]\nmatch = \"faults__ec*\"\ncommand = \"echo no echo today >&2; exit 1\"\n"
    ));
    let out = home.run(&["-p", "go", "--approve", "auto"], None).await;
    assert_eq!(out.ok(), "Done.\n");
    let second = body(&server.requests()[1]);
    let results = second["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let text_of = |id: &str| {
        let block = results
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["tool_use_id"] == id)
            .unwrap()
            .clone();
        (
            block["is_error"] == true,
            block["content"][0]["text"].as_str().unwrap_or("").to_owned(),
        )
    };
    assert_eq!(
        text_of("toolu_echo"),
        (true, "the call was denied: no echo today".to_owned())
    );
    assert!(!text_of("toolu_sleep").0, "the sleep call ran: {results}");

    home.write_config(&format!(
        "{servers}\n[[hooks.before_tool]]\nmatch = \"other__echo\"\ncommand = \"true\"\n"
    ));
    let out = home.run(&["-p", "go"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains(":5:") && out.stderr.contains("hooks.before_tool[0].match"),
        "{}",
        out.stderr
    );
}
