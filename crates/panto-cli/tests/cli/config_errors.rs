//! A bad config file is an error naming the file, the line and the key, with exit code 2; a good
//! one is used.

use panto_testkit::{script, MockServer, Reply};

use super::support::{body, Home, Run};

#[tokio::test(flavor = "multi_thread")]
async fn unknown_key_is_reported_with_file_line_and_key() {
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k");
    home.write_config(
        "default_model = \"fast\"\n\n[models.fast]\nprovider = \"anthropic\"\nmodel = \"x\"\ntemprature = 0.2\n",
    );
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    let err = out.stderr.trim();
    let expected = format!("{}:6:", home.config_file().display());
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("temprature"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_value_is_reported_with_its_line() {
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k");
    home.write_config("[retry]\nmax_attempts = \"many\"\n");
    let out = home.run(&["models"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains(":2:") && out.stderr.contains("max_attempts"),
        "{}",
        out.stderr
    );

    home.write_config("[compaction]\nthreshold = 2.0\n");
    let out = home.run(&["-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains(":2:") && out.stderr.contains("threshold"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn explicit_config_must_exist() {
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k");
    let out = home
        .run(&["--config", "/nonexistent/panto.toml", "-p", "x"], None)
        .await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("/nonexistent/panto.toml"), "{}", out.stderr);
    home.set("PANTO_CONFIG", "/nonexistent/other.toml");
    let out = home.run(&["-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("/nonexistent/other.toml"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_alias_provider_and_prompt_reach_the_request() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("configured")));
    let mut home = Home::new();
    home.set("LOCAL_KEY", "local-secret");
    home.write_config(&format!(
        r#"
default_model = "small"
system_prompt = "You answer in haiku."
agents_md = false

[providers.local]
api_style = "openai-chat"
base_url = "{}"
api_key_env = "LOCAL_KEY"

[models.small]
provider = "local"
model = "qwen-small"
max_tokens = 512
"#,
        server.openai_base_url()
    ));
    std::fs::write(home.work().join("AGENTS.md"), "IGNORED INSTRUCTIONS").unwrap();
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.ok().trim(), "configured");
    let requests = server.requests();
    let req = &requests[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer local-secret"));
    let b = body(req);
    assert_eq!(b["model"], "qwen-small");
    assert_eq!(b["messages"][0]["role"], "system");
    assert_eq!(b["messages"][0]["content"], "You answer in haiku.");
    let max = b.get("max_completion_tokens").or_else(|| b.get("max_tokens")).cloned();
    assert_eq!(max, Some(serde_json::json!(512)));
}

/// A key of the shape providers use; none of it may appear in a message.
const PASTED_KEY: &str = "sk-proj-Zq81nVmPa0Lr7TzY2bWc93xK";

#[tokio::test(flavor = "multi_thread")]
async fn a_key_pasted_into_api_key_env_is_never_echoed() {
    let home = Home::new();
    home.write_config(&format!(
        "default_model = \"w\"\n[providers.work]\napi_style = \"openai-chat\"\napi_key_env = \"{PASTED_KEY}\"\n\
         [models.w]\nprovider = \"work\"\nmodel = \"x\"\n"
    ));
    let out = home.run(&["-p", "hi"], None).await;
    assert_usage_error_without_the_key(&out, ":4:", "api_key_env must be the NAME");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_toml_error_on_a_key_line_does_not_quote_the_key() {
    let mut home = Home::new();
    home.set("ANTHROPIC_API_KEY", "k");
    // A missing closing quote: the parser's error points into the api_key line.
    home.write_config(&format!(
        "[providers.work]\napi_style = \"openai-chat\"\napi_key = \"{PASTED_KEY}\n"
    ));
    let out = home.run(&["models"], None).await;
    assert_usage_error_without_the_key(&out, ":3:", "api_key = …");
}

/// A usage error that says `message` at `line` (`:N:`) and nothing of [`PASTED_KEY`].
fn assert_usage_error_without_the_key(out: &Run, line: &str, message: &str) {
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr.contains(line) && out.stderr.contains(message),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("Zq81nVmPa0Lr7TzY2bWc93xK"),
        "the key is echoed: {}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_holding_a_key_that_others_can_read_gets_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let mut home = Home::new();
    home.write_config(&format!(
        "[providers.work]\napi_style = \"openai-chat\"\napi_key = \"{PASTED_KEY}\"\n[models.w]\nprovider = \"work\"\nmodel = \"x\"\n"
    ));
    let path = home.config_file();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = home.run(&["models"], None).await;
    out.ok();
    let expected = format!(
        "warning: {} holds an api_key and other users can read it",
        path.display()
    );
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("chmod 600 {}", path.display())),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("Zq81nVmPa0Lr7TzY2bWc93xK"));

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = home.run(&["models"], None).await;
    out.ok();
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    // Without a key in it, a readable config is fine.
    home.set("OPENAI_API_KEY", "k");
    home.write_config("[models.w]\nprovider = \"openai\"\nmodel = \"x\"\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = home.run(&["models"], None).await;
    out.ok();
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}
