//! The bytes on disk, field by field, as docs/session-format.md specifies them; and the refusal
//! of a format version this build does not know.

use panto_core::{Error, SystemMode};
use panto_testkit::store_contract::{anthropic_wire, append_one, reply, system, user, Driver};
use serde_json::{json, Value};

use super::common::{as_dyn, check_valid, corrupt_parts, fast_store, lines, session_file};

#[tokio::test]
async fn header_and_entries_hold_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let mut d = Driver::new(&as_dyn(&store), Some(r#"{"ticket":"PAN-1"}"#));
    let prompt = user("hello there");
    let answer = reply("hi");
    d.append(vec![system("Be brief.", SystemMode::Append), prompt.clone()])
        .await;
    d.append(vec![answer.clone()]).await;

    let path = session_file(&store, &d.id());
    let all = lines(&path);
    assert_eq!(all.len(), 4);
    let header = &all[0];
    let mut keys: Vec<&str> = header.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["created", "cwd", "id", "metadata", "type", "version"]);
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 2);
    assert_eq!(header["id"], d.id());
    assert_eq!(
        header["metadata"], r#"{"ticket":"PAN-1"}"#,
        "metadata is kept as the string it is"
    );
    assert_eq!(
        header["cwd"],
        std::env::current_dir().unwrap().to_str().unwrap(),
        "cwd is where the session was started"
    );

    let entries = check_valid(&path);
    for entry in &entries {
        let id = entry["id"].as_str().unwrap();
        assert!(
            id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "entry id {id}"
        );
        assert!(entry["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    let (sys, first, second) = (&entries[0], &entries[1], &entries[2]);
    assert_eq!(sys["wire"], Value::Null, "system messages have no provider identity");
    assert_eq!(first["wire"], serde_json::to_value(anthropic_wire()).unwrap());
    assert_eq!(first["message"], serde_json::to_value(&prompt).unwrap());
    assert_eq!(second["message"], serde_json::to_value(&answer).unwrap());
    assert_eq!(second["usage"], serde_json::to_value(answer.usage).unwrap());
    assert_eq!(first["usage"], Value::Null);
    assert_eq!(
        first["timestamp"], sys["timestamp"],
        "one batch is stamped with one time"
    );
    assert_eq!(
        sys["activity"],
        json!({"message_count": 1, "last_prompt_at": null, "last_user_message": null, "wire": null})
    );
    assert_eq!(
        first["activity"],
        json!({
            "message_count": 2,
            "last_prompt_at": first["timestamp"],
            "last_user_message": "hello there",
            "wire": serde_json::to_value(anthropic_wire()).unwrap(),
        })
    );
    assert_eq!(second["activity"]["message_count"], 3);
    assert_eq!(
        second["activity"]["last_prompt_at"], first["timestamp"],
        "a reply is not a prompt"
    );
}

#[tokio::test]
async fn an_unknown_future_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let id = panto_core::store::new_session_id();
    let path = session_file(&store, &id);
    std::fs::write(
        &path,
        format!(
            "{}\n{}\n",
            json!({"type": "session", "version": 3, "id": id, "created": "2031-01-01T00:00:00Z", "layout": "v3"}),
            json!({"type": "message", "id": "00000001", "something": "new"})
        ),
    )
    .unwrap();
    let before = std::fs::read(&path).unwrap();

    let (location, message) = corrupt_parts(as_dyn(&store).load(&id).await);
    assert_eq!(location, format!("{}:1", path.display()));
    assert!(
        message.contains("unsupported session format version 3") && message.contains("reads versions 1 to 2"),
        "{message}"
    );

    let (good, problems) = store.list_with_problems().await.unwrap();
    assert!(good.is_empty());
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].0, path);
    assert!(problems[0].1.to_string().contains("version 3"));

    // Appending would mix versions in one file: refused, and the file is untouched.
    let appended = append_one(&*store, &id, &user("hi")).await;
    assert!(matches!(&appended, Err(Error::CorruptSession { message, .. }) if message.contains("version 3")));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[tokio::test]
async fn the_documented_example_file_reads_as_documented() {
    // docs/session-format.md promises what this file loads and lists as; hold it to that.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/session-format.md")).unwrap();
    let example = doc
        .split("```jsonl\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```jsonl block in docs/session-format.md");
    let header: Value = serde_json::from_str(example.lines().next().unwrap()).unwrap();
    let id = header["id"].as_str().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    std::fs::write(session_file(&store, &id), example).unwrap();
    let loaded = as_dyn(&store).load(&id).await.unwrap().unwrap();
    let shown: Vec<String> = loaded
        .messages
        .iter()
        .map(|m| match &m.content[0] {
            panto_core::ContentBlock::System { text, .. } => text.clone(),
            panto_core::ContentBlock::CompactionSummary { .. } => "<summary>".to_owned(),
            _ => m.text(),
        })
        .collect();
    assert_eq!(
        shown,
        [
            "You are a coding assistant.",
            "<summary>",
            "And in tests?",
            "tests holds 2 files."
        ]
    );
    assert_eq!(loaded.metadata.as_deref(), Some(r#"{"ticket":"PAN-7"}"#));

    let info = &as_dyn(&store).list().await.unwrap()[0];
    assert_eq!(info.message_count, 8);
    assert_eq!(info.last_user_message.as_deref(), Some("And in tests?"));
    assert_eq!(
        info.last_prompt_at
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
            .as_deref(),
        Some("2026-11-29T21:11:39.111105398Z")
    );
    assert_eq!(info.wire, Some(anthropic_wire()));

    // And the store can go on writing it.
    append_one(&*store, &id, &user("one more")).await.unwrap();
    assert_eq!(check_valid(&session_file(&store, &id)).len(), 9);
}

#[tokio::test]
async fn version_1_files_still_load_and_reasoning_items_round_trip_in_version_2() {
    use panto_core::{ContentBlock, StopReason};
    use panto_testkit::store_contract::{assistant, must_load};

    let dir = tempfile::tempdir().unwrap();
    let store = fast_store(dir.path());
    let d = Driver::new(&as_dyn(&store), None);
    let id = d.id();
    // A Responses API reasoning item, which version 2 added: kept byte for byte, since the API
    // needs it back unchanged.
    let reasoning = ContentBlock::Reasoning {
        id: "rs_68c1f0a4d1f4".into(),
        summary: vec!["**Checking**".into(), "Then \"quoted\"\n".into()],
        encrypted_content: "gAAAAABowQ3k+/=".into(),
    };
    let answer = assistant(vec![reasoning, ContentBlock::text("Done.")], StopReason::EndTurn);
    {
        let mut d = d;
        d.append(vec![user("go"), answer.clone()]).await;
    }
    let loaded = must_load(&as_dyn(&store), &id, "version 2").await;
    assert_eq!(loaded.messages[1].content, answer.content);
    drop(store);

    // The same session as a version 1 file (what panto wrote before the bump) loads the same,
    // and takes appends.
    let store = fast_store(dir.path());
    let path = session_file(&store, &id);
    drop(store);
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    assert!(header.contains(r#""version":2"#), "{header}");
    std::fs::write(
        &path,
        format!("{}\n{rest}", header.replace(r#""version":2"#, r#""version":1"#)),
    )
    .unwrap();
    let store = fast_store(dir.path());
    let loaded = must_load(&as_dyn(&store), &id, "version 1").await;
    assert_eq!(loaded.messages[1].content, answer.content);
    append_one(&*store, &id, &user("more")).await.unwrap();
    assert_eq!(must_load(&as_dyn(&store), &id, "appended").await.messages.len(), 3);
}
