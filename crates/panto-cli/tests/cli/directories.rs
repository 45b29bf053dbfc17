//! Sessions per working directory: `-c` continues the latest session of the directory panto
//! runs in, `panto sessions` and the pickers show that directory's sessions (`--all`: every
//! one), and a session resumed from another directory says where it was started.

use std::path::{Path, PathBuf};

use panto_testkit::{script, MockServer, Reply};

use super::screen::Terminal;
use super::support::{blocking, panto_bin, Home};

/// A directory beside `work/` (made if needed), as the process sees it (`getcwd` resolves
/// links, and the store records what it returns).
fn sibling(home: &Home, name: &str) -> PathBuf {
    let dir = home.work().with_file_name(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// `panto args` in `dir` on a 40×100 terminal.
fn terminal_in(home: &Home, dir: &Path, args: &[&str]) -> Terminal {
    let mut cmd = home.command_of("sh");
    cmd.current_dir(dir)
        .arg("-c")
        .arg("stty rows 40 cols 100 && exec \"$@\"")
        .arg("sh")
        .arg(panto_bin())
        .args(args)
        .env("TERM", "xterm-256color");
    Terminal::start_command(cmd, 40, 100)
}

/// The id of the session whose last prompt is `prompt`, from the listing of every directory.
async fn id_of(home: &Home, prompt: &str) -> String {
    let out = home.run(&["sessions", "--json", "--all"], None).await;
    let list: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["last_user_message"] == prompt)
        .unwrap_or_else(|| panic!("no session of {prompt:?} in {list}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A session in `work/` and, later, one in `other/`: `-c` in `work/` continues `work/`'s (the
/// later one, of another project, is not taken), and `-c` in a third directory says there is
/// nothing to continue there and how to see the others. Resuming `other/`'s session from
/// `work/`, by id and with `/resume`, says where it was started.
#[tokio::test(flavor = "multi_thread")]
async fn continue_takes_this_directorys_session_and_resuming_another_says_where_it_was_started() {
    let server = MockServer::start().await;
    for answer in ["work answer", "other answer", "continued here"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work().canonicalize().unwrap();
    let other = sibling(&home, "other");
    home.run(&["-p", "work topic"], None).await.ok();
    home.run_in(&other, &["-p", "other topic"]).await.ok();
    let other_id = id_of(&home, "other topic").await;

    let (shown, home) = blocking(move || {
        let mut t = terminal_in(&home, &home.work(), &["-c"]);
        t.wait_for_prompt();
        let shown = t.wait_for("resumed session");
        t.send_line("next in work");
        t.wait_for("continued here");
        t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        (shown, home)
    })
    .await;
    assert!(
        shown.contains("you: work topic"),
        "-c took another directory's session:\n{shown}"
    );
    assert!(!shown.contains("other topic"), "{shown}");
    assert!(
        !shown.contains("was started in"),
        "a session of this directory needs no note:\n{shown}"
    );
    let history = super::support::all_text(&super::support::body(&server.requests()[2])["messages"]);
    assert!(
        history.contains("work topic") && !history.contains("other topic"),
        "{history}"
    );

    // Nothing was started in a third directory: -c says so, and how to see the others.
    let third = sibling(&home, "third");
    let out = home.run_in(&third, &["-c", "-p", "x"]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("no session to continue in {}", third.display()))
            && out.stderr.contains("2 sessions were started in other directories")
            && out.stderr.contains("panto sessions --all"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 3, "nothing was sent");

    // Resumed by id from work/, other/'s session says where it was started; /resume of it too.
    let work_id = id_of(&home, "next in work").await;
    let work_shown = work.clone();
    let (by_id, by_command) = blocking(move || {
        let mut t = terminal_in(&home, &work, &["-r", other_id.as_str()]);
        t.wait_for_prompt();
        let by_id = t.wait_for("resumed session");
        t.send_line(&format!("/resume {work_id}"));
        t.wait_for("you: next in work");
        t.wait_for_prompt();
        t.send_line(&format!("/resume {other_id}"));
        let by_command = t.wait_until("the second notice", |shown| {
            shown.matches("this session was started in").count() >= 2
        });
        t.wait_for_prompt();
        t.send_line("/quit");
        t.wait_exit();
        (by_id, by_command)
    })
    .await;
    let notice = format!(
        "note: this session was started in {}; its tools now work in {}",
        other.display(),
        work_shown.display()
    );
    for shown in [&by_id, &by_command] {
        assert!(flat(shown).contains(&notice), "no {notice:?} in:\n{shown}");
    }
    assert!(by_id.contains("you: other topic"), "{by_id}");
}

/// `text` with every run of whitespace one space: a line the terminal or panto wrapped reads
/// as one.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `panto sessions` lists this directory's sessions and says how many others there are;
/// `--all` lists every one under its directory, this one's first; `--json` gives each
/// session's directory.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_lists_this_directory_and_all_lists_every_one_under_its_directory() {
    let server = MockServer::start().await;
    for answer in ["one", "two", "three", "four"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let work = home.work().canonicalize().unwrap();
    let other = sibling(&home, "other");
    home.run(&["-p", "work question"], None).await.ok();
    home.run_in(&other, &["-p", "other question"]).await.ok();
    home.run_in(&other, &["-p", "other again"]).await.ok();

    let out = home.run(&["sessions"], None).await;
    let rows: Vec<&str> = out.ok().lines().collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].contains("work question"), "{rows:?}");
    assert!(
        out.stderr
            .contains("2 sessions from other directories not shown (--all lists every one)"),
        "{}",
        out.stderr
    );

    let out = home.run_in(&other, &["sessions"]).await;
    assert_eq!(out.ok().lines().count(), 2, "{}", out.stdout);
    assert!(
        out.stderr.contains("1 session from another directory not shown"),
        "{}",
        out.stderr
    );

    let out = home.run(&["sessions", "--all"], None).await;
    let lines: Vec<&str> = out.ok().lines().collect();
    assert_eq!(lines.len(), 5, "two directories and three sessions: {lines:?}");
    assert_eq!(lines[0], format!("{} (this directory)", work.display()), "{lines:?}");
    assert!(
        lines[1].starts_with("  ") && lines[1].contains("work question"),
        "{lines:?}"
    );
    assert_eq!(lines[2], other.display().to_string(), "{lines:?}");
    assert!(
        lines[3].contains("other again") && lines[4].contains("other question"),
        "{lines:?}"
    );
    assert!(!out.stderr.contains("not shown"), "{}", out.stderr);

    let out = home.run(&["sessions", "--json"], None).await;
    let list: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["cwd"], work.to_str().unwrap());
    let out = home.run(&["sessions", "--json", "--all"], None).await;
    let list: serde_json::Value = serde_json::from_str(out.ok()).unwrap();
    let dirs: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["cwd"].as_str().unwrap())
        .collect();
    assert_eq!(
        dirs,
        [other.to_str().unwrap(), other.to_str().unwrap(), work.to_str().unwrap()]
    );

    // `-c --all` continues the latest of any directory; --all alone asks what it goes with.
    let out = home
        .run(&["-c", "--all", "-p", "more", "--output-format", "json"], None)
        .await;
    let result: serde_json::Value = serde_json::from_str(out.ok().trim()).unwrap();
    assert_eq!(result["session_id"], list[0]["id"], "{result}");
    let out = home.run(&["--all", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("--all goes with -c"), "{}", out.stderr);

    let help = home.run(&["sessions", "--help"], None).await;
    assert!(help.ok().contains("--all"), "{}", help.stdout);
    let help = home.run(&["--help"], None).await;
    assert!(
        flat(help.ok()).contains("Continue the most recent session started in this directory"),
        "{}",
        help.stdout
    );

    // The -r picker offers this directory's sessions and says how many others there are.
    let shown = blocking(move || {
        let t = terminal_in(&home, &work, &["-r"]);
        t.wait_for("other directories not shown");
        t.wait_for("work question");
        // The whole list is drawn at once; give a stray row the time to show.
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.wait_for("work question")
    })
    .await;
    assert!(
        flat(&shown).contains("2 sessions from other directories not shown (--all lists every one)"),
        "{shown}"
    );
    assert!(
        !shown.contains("other question") && !shown.contains("other again"),
        "{shown}"
    );
}

/// Tab after `/resume ` offers this directory's sessions first, though another directory's is
/// newer.
#[tokio::test(flavor = "multi_thread")]
async fn resume_completion_offers_this_directorys_ids_first() {
    let server = MockServer::start().await;
    for answer in ["one", "two"] {
        server.push(Reply::sse(script::anthropic_text(answer)));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let other = sibling(&home, "other");
    home.run(&["-p", "work topic"], None).await.ok();
    home.run_in(&other, &["-p", "other topic"]).await.ok();
    let (work_id, other_id) = (id_of(&home, "work topic").await, id_of(&home, "other topic").await);
    blocking(move || {
        let mut t = terminal_in(&home, &home.work(), &[]);
        t.wait_for_prompt();
        // Tab puts in the candidates in turn: this directory's id first, though the other
        // directory's session is newer, then the other's.
        t.send("/resume ");
        t.send("\t");
        t.wait_until("this directory's id put in first", |shown| {
            shown.lines().any(|l| l.contains(&format!("/resume {work_id}")))
        });
        t.send("\t");
        t.wait_until("the other directory's id put in next", |shown| {
            shown.lines().any(|l| l.contains(&format!("/resume {other_id}")))
        });
    })
    .await;
}

#[tokio::test]
async fn a_listed_id_tells_apart_the_sessions_other_directories_hold() {
    let server = MockServer::start().await;
    for _ in 0..4 {
        server.push(Reply::sse(script::anthropic_text("ok")));
    }
    let mut home = Home::new();
    home.anthropic(&server);
    let other = sibling(&home, "other");
    home.run(&["-p", "work topic"], None).await.ok();
    let work_id = id_of(&home, "work topic").await;
    // UUIDv7 ids made within the same minute share their first 8 characters; the other
    // directory's session is made again in the rare case a minute's boundary fell between.
    let mut other_id = String::new();
    for attempt in 0..3 {
        let prompt = format!("other topic {attempt}");
        home.run_in(&other, &["-p", &prompt]).await.ok();
        other_id = id_of(&home, &prompt).await;
        if other_id[..8] == work_id[..8] {
            break;
        }
    }
    assert_eq!(other_id[..8], work_id[..8], "no two sessions made within a minute");
    let listing = home.run(&["sessions"], None).await;
    let row = listing.ok().lines().next().unwrap_or_default().to_owned();
    let printed = row.split_whitespace().next().unwrap_or_default();
    assert!(work_id.starts_with(printed), "{row}");
    assert!(
        !other_id.starts_with(printed),
        "{printed} is also the start of the other directory's {other_id}, so `panto -r {printed}` is ambiguous"
    );
}
