//! `panto sessions export` and `panto sessions import FILE` (issue 49): a session made by real
//! `panto -p` runs (a tool call, a branch) exported as JSON and imported into another session
//! directory and into PostgreSQL resumes in each with the very request the original sends; and
//! the HTML export of a hostile transcript, opened in a real headless Chromium, runs no script
//! and makes no request.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use panto_testkit::postgres as pg_server;
use panto_testkit::script::AnthropicScript;
use panto_testkit::{script, MockServer, Reply};
use serde_json::Value;

use super::support::{Home, Talk};

fn database() -> (pg_server::Server, String) {
    let server = pg_server::start(pg_server::Durability::Fast)
        .unwrap_or_else(|e| panic!("these tests need PostgreSQL (.ci/run installs it): {e}"));
    server.createdb("panto_export").expect("create the test database");
    let url = server.url("panto_export");
    (server, url)
}

/// The session id of a `--output-format json` run.
fn session_of(run: &super::support::Run) -> String {
    serde_json::from_str::<Value>(run.ok().trim()).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_json_export_resumes_with_the_same_request_in_another_directory_and_in_postgres() {
    let (_db, url) = database();
    let mock = MockServer::start().await;
    let usage = panto_core::Usage {
        input_tokens: 1200,
        output_tokens: 40,
        ..Default::default()
    };
    mock.push(Reply::sse(
        AnthropicScript::new()
            .thinking("the notes will say", "sig-0123456789")
            .tool_use("toolu_01", "read", r#"{"path":"notes.txt"}"#)
            .stop_reason("tool_use")
            .usage(usage)
            .build(),
    ));
    for answer in ["the notes say hello", "second answer", "third answer, on a new branch"] {
        mock.push(Reply::sse(AnthropicScript::new().text(answer).usage(usage).build()));
    }
    for _ in 0..3 {
        mock.push(Reply::sse(script::anthropic_text("next answer")));
    }
    let mut home = Home::new();
    home.anthropic(&mock);
    std::fs::write(home.work().join("notes.txt"), "hello\n").unwrap();

    let id = session_of(
        &home
            .run(&["-p", "read notes.txt", "--output-format", "json"], None)
            .await,
    );
    home.run(&["-r", &id, "-p", "second question"], None).await.ok();
    // Back to before the second question: the third starts a branch beside it.
    home.run(&["-r", &id, "--rewind", "1", "-p", "third question"], None)
        .await
        .ok();
    assert_eq!(mock.requests().len(), 4);

    let exported = home.dir.path().join("session.json");
    let out = home
        .run(
            &[
                "sessions",
                "export",
                &id[..13],
                "--format",
                "json",
                "--all-branches",
                "-o",
                exported.to_str().unwrap(),
            ],
            None,
        )
        .await;
    out.ok();
    let document: Value = serde_json::from_slice(&std::fs::read(&exported).unwrap()).unwrap();
    assert_eq!(document["session"]["id"], id.as_str());
    let entries = document["entries"].as_array().unwrap();
    let texts: Vec<String> = entries.iter().map(|e| e["message"].to_string()).collect();
    assert!(
        texts.iter().any(|t| t.contains("second answer")) && texts.iter().any(|t| t.contains("third answer")),
        "every branch: {texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("sig-0123456789") && t.contains("toolu_01")),
        "{texts:?}"
    );
    assert!(
        !document.to_string().contains(super::support::KEY),
        "no key in an export"
    );

    // Into another session directory and into PostgreSQL; a second import is refused.
    let other = home.dir.path().join("other-sessions");
    let other = other.to_str().unwrap();
    let file = exported.to_str().unwrap();
    let into_dir = home
        .run(&["--session-dir", other, "sessions", "import", file], None)
        .await;
    assert!(
        into_dir.ok().contains(&format!("imported session {id}")),
        "{}",
        into_dir.stdout
    );
    let into_pg = home.run(&["--store", &url, "sessions", "import", file], None).await;
    into_pg.ok();
    let again = home.run(&["--store", &url, "sessions", "import", file], None).await;
    assert_eq!(again.code, Some(2), "{}", again.stderr);
    assert!(
        again.stderr.contains("already in") && again.stderr.contains("nothing imported"),
        "{}",
        again.stderr
    );

    // Exported again from PostgreSQL (its own history reader): the same messages in the same tree.
    let from_pg = home
        .run(
            &[
                "--store",
                &url,
                "sessions",
                "export",
                &id,
                "--format",
                "json",
                "--all-branches",
            ],
            None,
        )
        .await;
    let from_pg: Value = serde_json::from_str(from_pg.ok()).unwrap();
    let shape = |d: &Value| -> Vec<(Value, Option<usize>)> {
        let entries = d["entries"].as_array().unwrap();
        let index = |id: &Value| entries.iter().position(|e| &e["id"] == id);
        entries
            .iter()
            .map(|e| (e["message"].clone(), index(&e["parent"])))
            .collect()
    };
    assert_eq!(shape(&from_pg), shape(&document), "PostgreSQL holds what was exported");

    // Each resumes with the bytes the original sends.
    let mut bodies = Vec::new();
    for store in [vec![], vec!["--session-dir", other], vec!["--store", url.as_str()]] {
        let mut args = store.clone();
        args.extend(["-r", id.as_str(), "-p", "next"]);
        home.run(&args, None).await.ok();
        bodies.push(mock.requests().last().unwrap().body.clone());
    }
    let original = String::from_utf8_lossy(&bodies[0]).into_owned();
    assert!(
        original.contains("third question")
            && !original.contains("second question")
            && original.contains("sig-0123456789"),
        "the active branch, as stored: {original}"
    );
    assert_eq!(
        String::from_utf8_lossy(&bodies[1]),
        original,
        "the session imported into a directory"
    );
    assert_eq!(
        String::from_utf8_lossy(&bodies[2]),
        original,
        "the session imported into PostgreSQL"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_document_is_refused_naming_the_entry_and_nothing_is_written() {
    let mock = MockServer::start().await;
    mock.push(Reply::sse(script::anthropic_text("an answer")));
    let mut home = Home::new();
    home.anthropic(&mock);
    let id = session_of(&home.run(&["-p", "a question", "--output-format", "json"], None).await);
    let out = home.run(&["sessions", "export", &id, "--format", "json"], None).await;
    let mut document: Value = serde_json::from_str(out.ok()).unwrap();
    document["entries"][1]["parent"] = "no-such-entry".into();
    let file = home.dir.path().join("bad.json");
    std::fs::write(&file, document.to_string()).unwrap();
    let other = home.dir.path().join("other");
    let out = home
        .run(
            &[
                "--session-dir",
                other.to_str().unwrap(),
                "sessions",
                "import",
                file.to_str().unwrap(),
            ],
            None,
        )
        .await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("$.entries[1].parent") && out.stderr.contains("nothing imported"),
        "{}",
        out.stderr
    );
    let left: Vec<_> = std::fs::read_dir(&other)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "nothing written: {left:?}");
}

/// A loopback HTTP server that counts every connection made to it.
fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut stream) = stream {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = std::io::Write::write_all(
                    &mut stream,
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        }
    });
    (port, hits)
}

/// Chromium's DOM of `page` once loaded (one headless launch), failing clearly when it is not
/// installed.
fn dump_dom(page: &Path, profile: &Path) -> String {
    let mut child = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
            &format!("file://{}", page.display()),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "this test opens the HTML export in a real browser and needs `chromium` on PATH \
                 (.ci/run installs it; apt-get install chromium): {e}"
            )
        });
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut dom = String::new();
        let _ = stdout.read_to_string(&mut dom);
        dom
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_transcript_exported_as_html_runs_nothing_and_loads_nothing_in_chromium() {
    let (port, hits) = counting_server();
    let origin = format!("http://127.0.0.1:{port}");
    let marker = "document.body.appendChild(document.createElement('pwned-marker'))";
    let hostile = format!(
        "<script>document.title='pwned';{marker};fetch('{origin}/script')</script>\n\n\
         <img src=\"{origin}/img\" onerror=\"document.title='pwned';{marker}\">\n\n\
         <svg onload=\"{marker}\"></svg> <iframe src=\"{origin}/frame\"></iframe>\n\n\
         <link rel=stylesheet href=\"{origin}/css\"><style>body{{background:url({origin}/bg)}}</style>\n\n\
         ![tracker]({origin}/md-image) [click me](javascript:{marker})\n\n\
         \u{1b}[31mred\u{1b}[0m bell\u{7} \u{1b}]8;;{origin}/osc\u{1b}\\hyperlink\u{1b}]8;;\u{1b}\\ done"
    );
    let mock = MockServer::start().await;
    mock.push(Reply::sse(script::anthropic_text(&hostile)));
    let mut home = Home::new();
    home.anthropic(&mock);
    let prompt = format!("<script>{marker}</script> <img src={origin}/prompt-img>");
    let id = session_of(&home.run(&["-p", &prompt, "--output-format", "json"], None).await);
    let page = home.dir.path().join("session.html");
    home.run(
        &[
            "sessions",
            "export",
            &id,
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ],
        None,
    )
    .await
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("\u{1b}"),
        "escaped in the file"
    );

    let profile = tempfile::tempdir().unwrap();
    let dom = super::support::blocking({
        let page = page.clone();
        let profile = profile.path().to_owned();
        move || dump_dom(&page, &profile)
    })
    .await;
    assert!(!dom.contains("<pwned-marker"), "a payload changed the DOM: {dom}");
    assert!(!dom.contains("<title>pwned"), "a payload set the title: {dom}");
    assert!(dom.contains("<h1>Session "), "the page loaded: {dom}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the page made requests to {origin}");
    // The payloads are there, as text.
    for shown in [
        "&lt;script&gt;document.title='pwned'",
        "&lt;img src=\"",
        "onerror=\"document.title",
        "\\u{1b}</span>[31mred",
        "bell<span class=\"ctl\">\\u{7}</span>",
        "click me</span> <code>(javascript:document.body",
        "&lt;script&gt;document.body.appendChild",
    ] {
        assert!(dom.contains(shown), "{shown:?} is not shown as text: {dom}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_export_writes_the_session_to_a_file_and_says_where() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("exported answer")));
    let mut home = Home::new();
    home.anthropic(&server);
    home.in_repl(&[], |p| {
        p.type_line("a question to export");
        p.expect("exported answer");
        p.type_line("/export html transcript.html");
        p.expect("exported this session to ");
        p.expect("transcript.html");
        p.type_line("/export nonsense-format-but-a-file");
        p.expect("nonsense-format-but-a-file");
        p.quit();
    })
    .await;
    let html = std::fs::read_to_string(home.work().join("transcript.html")).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>")
            && html.contains("a question to export")
            && html.contains("exported answer")
    );
    let md = std::fs::read_to_string(home.work().join("nonsense-format-but-a-file")).unwrap();
    assert!(md.starts_with("# Session ") && md.contains("exported answer"), "{md}");
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_and_home_paths_stay_out_of_an_export_unless_paths_are_kept() {
    let server = MockServer::start().await;
    let mut home = Home::new();
    let home_dir = home.home().display().to_string();
    let said = format!(
        "the key is {} and the file is {home_dir}/notes.txt",
        super::support::KEY
    );
    server.push(Reply::sse(script::anthropic_text(&said)));
    home.anthropic(&server);
    let id = session_of(&home.run(&["-p", &said, "--output-format", "json"], None).await);
    for format in ["md", "html", "json"] {
        let out = home.run(&["sessions", "export", &id, "--format", format], None).await;
        let text = out.ok();
        assert!(!text.contains(super::support::KEY), "{format}: the key got out: {text}");
        assert!(
            !text.contains(&home_dir),
            "{format}: the home directory got out: {text}"
        );
        assert!(
            text.contains("the key is [redacted] and the file is ~/notes.txt"),
            "{format}: {text}"
        );
    }
    let kept = home
        .run(&["sessions", "export", &id, "--format", "json", "--keep-paths"], None)
        .await;
    assert!(kept.ok().contains(&format!("{home_dir}/notes.txt")) && !kept.stdout.contains(super::support::KEY));
}
