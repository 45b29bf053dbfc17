//! Moving sessions from the file store: `import_fs` copies every readable session with its full
//! history, reports the files it cannot read, and can be run again.

use std::io::Write;
use std::sync::Arc;

use panto_core::{Error, Session, SessionStore, SystemMode};
use panto_store_fs::{Durability, JsonlStore};
use panto_store_postgres::{import_fs, ToolManifest};
use panto_testkit::store_contract::{assistant, local_openai_wire, reply, system, tick, tool_result, user, Driver};

use super::common::{fresh_store, same_info, texts};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_move_from_the_file_store_with_their_whole_history() {
    let dir = tempfile::tempdir().unwrap();
    let fs = JsonlStore::with_durability(dir.path(), Durability::None);
    let fs_dyn: Arc<dyn SessionStore> = fs.clone();

    // A session with system prompts, a tool call, a provider switch and a compaction.
    let mut a = Driver::new(&fs_dyn, Some(r#"{"ticket":"PAN-8"}"#));
    a.append(vec![system("Be brief.", SystemMode::Append), user("list the files")])
        .await;
    a.append(vec![assistant(
        vec![panto_core::ContentBlock::ToolUse {
            id: "toolu_1".to_owned(),
            name: "bash".to_owned(),
            input: serde_json::json!({"command": "ls"}),
        }],
        panto_core::StopReason::ToolUse,
    )])
    .await;
    a.append(vec![tool_result("toolu_1", "a\nb\n", false), reply("two files")])
        .await;
    a.wire = local_openai_wire();
    a.append(vec![user("and now?"), reply("still two")]).await;
    a.compact(5, "The user listed two files.").await;
    tick().await;
    // A plain session, whose file ends in a torn line (a crash mid-write).
    let mut b = Driver::new(&fs_dyn, None);
    b.append(vec![user("hello"), reply("hi")]).await;
    let b_path = fs.session_path(&b.id()).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&b_path)
        .unwrap()
        .write_all(br#"{"type":"message","id":"torn"#)
        .unwrap();
    // A corrupt session and a file whose name is not a session id.
    let corrupt_id = panto_core::store::new_session_id();
    let corrupt_path = dir.path().join(format!("{corrupt_id}.jsonl"));
    std::fs::copy(&b_path, &corrupt_path).unwrap();
    let mut text = std::fs::read_to_string(&corrupt_path).unwrap();
    text = text.replacen(&b.id(), &corrupt_id, 1);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "{not json";
    std::fs::write(&corrupt_path, lines.join("\n") + "\n").unwrap();
    std::fs::write(dir.path().join("notes.jsonl"), "{}\n").unwrap();

    let (pg, _) = fresh_store().await;
    let report = import_fs(dir.path(), &pg).await.unwrap();
    let mut want = vec![a.id(), b.id()];
    want.sort();
    assert_eq!(report.imported, want);
    assert!(report.skipped.is_empty());
    let problems: Vec<(String, String)> = report
        .problems
        .iter()
        .map(|(path, e)| match e {
            Error::CorruptSession { location, .. } => (path.display().to_string(), location.clone()),
            other => panic!("{}: expected CorruptSession, got {other:?}", path.display()),
        })
        .collect();
    let notes = dir.path().join("notes.jsonl").display().to_string();
    let corrupt = corrupt_path.display().to_string();
    let mut expected = vec![(corrupt.clone(), format!("{corrupt}:2")), (notes.clone(), notes)];
    expected.sort();
    assert_eq!(problems, expected);

    // The sessions list and load as they did from the files.
    let (fs_list, _) = fs.list_with_problems().await.unwrap();
    let pg_list = pg.list().await.unwrap();
    assert_eq!(
        pg_list.iter().map(|i| &i.id).collect::<Vec<_>>(),
        fs_list
            .iter()
            .filter(|i| i.id != corrupt_id)
            .map(|i| &i.id)
            .collect::<Vec<_>>()
    );
    for info in &pg_list {
        let fs_info = fs_list.iter().find(|i| i.id == info.id).unwrap();
        same_info(info, fs_info);
        assert_eq!(
            pg.load(&info.id).await.unwrap(),
            fs.load(&info.id).await.unwrap(),
            "session {}",
            info.id
        );
    }

    // The whole history came along: entry ids, usage, and the compaction's first kept entry.
    let fs_lines: Vec<serde_json::Value> = std::fs::read_to_string(fs.session_path(&a.id()).unwrap())
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let history = pg.history(&a.id()).await.unwrap().unwrap();
    assert_eq!(history.len(), fs_lines.len());
    for (entry, line) in history.iter().zip(&fs_lines) {
        assert_eq!(entry.id, line["id"].as_str().unwrap());
        assert_eq!(entry.usage, serde_json::from_value(line["usage"].clone()).unwrap());
        assert_eq!(entry.tools, None, "the file store records no tools");
    }
    let compaction = history.last().unwrap().compaction.as_ref().unwrap();
    assert_eq!(
        compaction.first_kept.as_deref(),
        fs_lines.last().unwrap()["compaction"]["first_kept"].as_str()
    );
    assert_eq!(
        pg.tools_offered(&a.id(), &history[0].id).await.unwrap(),
        Some(ToolManifest::NotRecorded)
    );

    // Running it again changes nothing.
    let again = import_fs(dir.path(), &pg).await.unwrap();
    assert!(again.imported.is_empty());
    assert_eq!(again.skipped, want);
    assert_eq!(pg.history(&a.id()).await.unwrap().unwrap().len(), history.len());

    // The imported session goes on in PostgreSQL, compacted view and chain included.
    let mut resumed = Session::resolve(pg.clone(), &a.id()).await.unwrap().unwrap();
    let more = user("one more");
    let conversation = panto_core::Conversation::new();
    resumed
        .append(&[panto_core::store::PersistentMessage {
            message: &more,
            usage: None,
            wire: Some(&a.wire),
            conversation: &conversation,
            tools_available: &[],
            compaction: None,
        }])
        .await
        .unwrap();
    let mut want_texts: Vec<String> = fs
        .load(&a.id())
        .await
        .unwrap()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    want_texts.push("one more".to_owned());
    assert_eq!(texts(&pg, &a.id()).await, want_texts);
    let history = pg.history(&a.id()).await.unwrap().unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.parent_id.as_deref(), Some(history[history.len() - 2].id.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn importing_a_directory_that_does_not_exist_is_an_error_naming_it() {
    let (pg, _) = fresh_store().await;
    let missing = std::env::temp_dir().join("panto-no-such-directory-for-import");
    let e = import_fs(&missing, &pg).await.unwrap_err();
    assert!(e.to_string().contains(&missing.display().to_string()), "{e}");
}

/// The import reads the file store through its own reader: a FIFO named like a session is
/// refused at once, naming it (reading it whole waited for a writer forever), and a line over
/// the file store's maximum line size is refused naming the file and line, without being held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_or_an_oversized_line_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fs = JsonlStore::with_durability(dir.path(), Durability::None);
    let fs_dyn: Arc<dyn SessionStore> = fs.clone();
    let mut good = Driver::new(&fs_dyn, None);
    good.append(vec![user("fine"), reply("ok")]).await;

    let fifo_id = panto_core::store::new_session_id();
    let fifo = dir.path().join(format!("{fifo_id}.jsonl"));
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());

    // A valid entry, but one line over the maximum: the file store never writes one, and the
    // import holds none. It sits between two good lines, so the listing's tail read is fine.
    let mut big = Driver::new(&fs_dyn, None);
    big.append(vec![user("small"), reply("a")]).await;
    big.append(vec![reply("b")]).await;
    let big_path = fs.session_path(&big.id()).unwrap();
    let text = std::fs::read_to_string(&big_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (before, after) = lines[1].split_once("small").unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&big_path).unwrap());
    writeln!(out, "{}", lines[0]).unwrap();
    out.write_all(before.as_bytes()).unwrap();
    let mib = vec![b'x'; 1 << 20];
    for _ in 0..panto_store_fs::MAX_LINE >> 20 {
        out.write_all(&mib).unwrap();
    }
    writeln!(out, "{after}").unwrap();
    writeln!(out, "{}", lines[2]).unwrap();
    out.flush().unwrap();

    let (pg, _) = fresh_store().await;
    let imported = tokio::time::timeout(std::time::Duration::from_secs(20), import_fs(dir.path(), &pg)).await;
    let Ok(report) = imported else {
        // Let a reader stuck opening the FIFO go (opening its other end), so the test fails
        // rather than hangs.
        let _writer = std::fs::OpenOptions::new().write(true).open(&fifo);
        panic!("the import waited on the FIFO {}", fifo.display());
    };
    let report = report.unwrap();
    assert_eq!(report.imported, [good.id()]);
    let problems: Vec<(String, String)> = report
        .problems
        .iter()
        .map(|(path, e)| (path.display().to_string(), e.to_string()))
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    let fifo_problem = problems.iter().find(|(p, _)| *p == fifo.display().to_string()).unwrap();
    assert!(
        fifo_problem.1.contains(&fifo.display().to_string()) && fifo_problem.1.contains("FIFO"),
        "{fifo_problem:?}"
    );
    let big_problem = problems
        .iter()
        .find(|(p, _)| *p == big_path.display().to_string())
        .unwrap();
    assert!(
        big_problem.1.contains(&format!("{}:2", big_path.display())) && big_problem.1.contains("maximum line size"),
        "{big_problem:?}"
    );
}

/// Bad input is still refused as the file store refuses it: an error naming the file and line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_is_refused_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let fs = JsonlStore::with_durability(dir.path(), Durability::None);
    let fs_dyn: Arc<dyn SessionStore> = fs.clone();
    let mut bad = Driver::new(&fs_dyn, None);
    let ids = bad.append(vec![user("one"), reply("1"), user("two")]).await;
    let path = fs.session_path(&bad.id()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // Line 3 names a parent the file does not hold.
    std::fs::write(
        &path,
        text.replace(&format!(r#""parent_id":"{}""#, ids[0]), r#""parent_id":"ffffffff""#),
    )
    .unwrap();
    let (pg, _) = fresh_store().await;
    let report = import_fs(dir.path(), &pg).await.unwrap();
    assert!(report.imported.is_empty());
    match &report.problems[..] {
        [(p, Error::CorruptSession { location, message })] => {
            assert_eq!(p, &path);
            assert_eq!(location, &format!("{}:3", path.display()));
            assert_eq!(message, "parent_id \"ffffffff\" names no earlier entry");
        }
        other => panic!("expected one CorruptSession, got {other:?}"),
    }
}
