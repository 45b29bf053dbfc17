//! The log file: `PANTO_LOG` writes the spans of a run to $XDG_STATE_HOME/panto/panto.log
//! (0600), and nothing else changes: not stdout, not stderr, and no key in the file.

use std::os::unix::fs::PermissionsExt;

use base64::Engine;
use panto_testkit::{script, MockServer, Reply};
use serde_json::json;

use super::support::{Home, KEY};

/// A turn whose first request is rate limited: the answer after one retry.
fn script_retry(server: &MockServer) {
    server.push(
        Reply::json(
            429,
            &json!({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}),
        )
        .header("retry-after", "0.01"),
    );
    server.push(Reply::sse(script::anthropic_text("Hello after a retry.")));
}

#[tokio::test(flavor = "multi_thread")]
async fn panto_log_debug_writes_requests_timings_tokens_and_the_retry_to_a_private_file() {
    let server = MockServer::start().await;
    let mut home = Home::new();
    home.anthropic(&server);
    script_retry(&server);
    let quiet = home.run(&["-p", "Say hello"], None).await;
    quiet.ok();

    script_retry(&server);
    home.set("PANTO_LOG", "debug");
    let logged = home.run(&["-p", "Say hello"], None).await;
    assert_eq!(logged.ok(), quiet.stdout, "the log changes nothing on stdout");
    assert_eq!(logged.stderr, quiet.stderr, "the log changes nothing on stderr");

    let path = home.home().join("state/panto/panto.log");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the log is private");
    let log = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    // The line a span writes as it closes: `parent{…}:name{…}: target: close time.busy=…`, the
    // span's own name last in the context.
    let closing = |name: &str| -> Vec<&str> {
        lines
            .iter()
            .copied()
            .filter(|l| {
                let Some((context, rest)) = l.split_once(": panto_") else {
                    return false;
                };
                let own = context.rsplit("}:").next().unwrap_or(context);
                own.contains(&format!("{name}{{")) && rest.contains(": close ")
            })
            .collect()
    };
    let chats = closing("chat");
    assert_eq!(chats.len(), 2, "one line per request attempt:\n{log}");
    for (chat, attempt, status) in [(chats[0], 1, 429), (chats[1], 2, 200)] {
        for want in [
            "gen_ai.request.model=\"claude-sonnet-4-5\"".to_owned(),
            format!("panto.request.attempt={attempt}"),
            format!("http.response.status_code={status}"),
            "panto.duration_ms=".to_owned(),
            "time.busy=".to_owned(),
        ] {
            assert!(chat.contains(&want), "{want} missing from {chat}");
        }
    }
    for want in [
        "panto.time_to_first_byte_ms=",
        "panto.time_to_first_token_ms=",
        "gen_ai.usage.input_tokens=",
        "gen_ai.usage.output_tokens=",
        "gen_ai.response.finish_reasons=\"end_turn\"",
    ] {
        assert!(chats[1].contains(want), "{want} missing from {}", chats[1]);
    }
    assert!(chats[0].contains("error.type=\"http_429\""), "{}", chats[0]);
    let retry: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("retrying the provider request"))
        .collect();
    assert_eq!(retry.len(), 1, "{log}");
    assert!(
        retry[0].contains("WARN") && retry[0].contains("panto.retry.attempt=2") && retry[0].contains("429"),
        "{}",
        retry[0]
    );
    assert_eq!(closing("invoke_agent").len(), 1, "{log}");
    assert!(
        !closing("panto.store.append").is_empty(),
        "debug shows the store: {log}"
    );

    let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    for secret in [KEY, b64.as_str()] {
        assert!(!log.contains(secret), "the key is in the log:\n{log}");
    }
    assert!(!log.contains("Say hello"), "no content without log_content:\n{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_log_level_is_a_usage_error_naming_it() {
    let mut home = Home::new();
    home.set("PANTO_LOG", "panto_core=loud");
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("PANTO_LOG"), "{}", out.stderr);
    assert!(out.stderr.contains("panto_core=loud"), "{}", out.stderr);
}
