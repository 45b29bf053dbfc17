//! Bad lines: anywhere but a torn end, a bad line is an error naming the file and line and what
//! was wrong, and nothing is silently skipped or overwritten.

use std::path::Path;

use panto_core::{Error, Session};
use panto_testkit::store_contract::{append_one, reply, user, Driver};

use super::common::{as_dyn, corrupt_parts, fast_store, session_file};

/// A session of four entries (lines 2..=5); returns its id and file.
async fn four_entries(dir: &Path) -> (String, std::path::PathBuf) {
    let store = fast_store(dir);
    let mut d = Driver::new(&as_dyn(&store), None);
    d.append(vec![user("q1"), reply("a1")]).await;
    d.append(vec![user("q2"), reply("a2")]).await;
    (d.id(), session_file(&store, &d.id()))
}

/// Replaces line `n` (1-based) of the file.
fn replace_line(path: &Path, n: usize, with: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[n - 1] = with;
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Line `n` of the file, parsed.
fn line(path: &Path, n: usize) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().nth(n - 1).unwrap()).unwrap()
}

#[tokio::test]
async fn invalid_json_in_a_middle_line_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (id, path) = four_entries(dir.path()).await;
    replace_line(&path, 3, r#"{"type":"message","id":"abc","#);
    let before = std::fs::read(&path).unwrap();

    let store = as_dyn(&fast_store(dir.path()));
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:3", path.display()));
    // The exact text docs/session-format.md shows as its first example.
    assert_eq!(message, "invalid JSON at column 29: EOF while parsing a value");

    // A writer cannot rebuild its view from a corrupt log either: the append fails the same way
    // and the file is untouched.
    let (location, _) = corrupt_parts(append_one(&*fast_store(dir.path()), &id, &user("more")).await);
    assert_eq!(location, format!("{}:3", path.display()));
    assert_eq!(std::fs::read(&path).unwrap(), before, "a failed open must not write");

    // The error reads well on its own.
    let shown = store.load(&id).await.unwrap_err().to_string();
    assert!(
        shown.contains(&format!("{}:3", path.display())) && shown.contains("invalid JSON"),
        "{shown}"
    );
}

#[tokio::test]
async fn unknown_entry_types_and_missing_fields_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (id, path) = four_entries(dir.path()).await;
    let store = as_dyn(&fast_store(dir.path()));
    let original = std::fs::read(&path).unwrap();

    replace_line(&path, 2, r#"{"type":"bookmark","id":"0badf00d","label":"here"}"#);
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:2", path.display()));
    assert!(message.contains("unknown entry type \"bookmark\""), "{message}");

    std::fs::write(&path, &original).unwrap();
    let mut entry = line(&path, 4);
    entry.as_object_mut().unwrap().remove("timestamp");
    replace_line(&path, 4, &entry.to_string());
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:4", path.display()));
    assert!(message.contains("missing field `timestamp`"), "{message}");

    std::fs::write(&path, &original).unwrap();
    let mut entry = line(&path, 3);
    entry["message"]["content"][0]["type"] = "hologram".into();
    replace_line(&path, 3, &entry.to_string());
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:3", path.display()));
    assert!(message.contains("hologram"), "{message}");
}

#[tokio::test]
async fn a_complete_bad_last_line_is_an_error_not_a_torn_line() {
    // Only a line without its line end is torn; a whole bad line is never skipped.
    let dir = tempfile::tempdir().unwrap();
    let (id, path) = four_entries(dir.path()).await;
    replace_line(&path, 5, "not json at all");
    let store = as_dyn(&fast_store(dir.path()));
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:5", path.display()));
    assert!(message.starts_with("invalid JSON"), "{message}");
    // The listing reads this line, so it reports the session as a problem, naming the line.
    let (good, problems) = fast_store(dir.path()).list_with_problems().await.unwrap();
    assert!(good.is_empty());
    assert_eq!(problems.len(), 1);
    assert!(problems[0].1.to_string().contains("last line"), "{}", problems[0].1);
}

#[tokio::test]
async fn a_broken_chain_duplicate_ids_and_a_wrong_header_id_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (id, path) = four_entries(dir.path()).await;
    let store = as_dyn(&fast_store(dir.path()));
    let original = std::fs::read(&path).unwrap();

    let mut entry = line(&path, 4);
    entry["parent_id"] = "ffffffff".into();
    replace_line(&path, 4, &entry.to_string());
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:4", path.display()));
    assert!(message.contains("\"ffffffff\" names no earlier entry"), "{message}");

    std::fs::write(&path, &original).unwrap();
    let mut entry = line(&path, 4);
    entry["id"] = line(&path, 2)["id"].clone();
    replace_line(&path, 4, &entry.to_string());
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:4", path.display()));
    assert!(
        message.contains("duplicate entry id") && message.contains("line 2"),
        "{message}"
    );

    std::fs::write(&path, &original).unwrap();
    let mut header = line(&path, 1);
    header["id"] = panto_core::store::new_session_id().into();
    replace_line(&path, 1, &header.to_string());
    let (location, message) = corrupt_parts(store.load(&id).await);
    assert_eq!(location, format!("{}:1", path.display()));
    assert!(message.contains("the file is named for"), "{message}");
    assert!(matches!(
        Session::resolve(store.clone(), &id).await,
        Err(Error::CorruptSession { .. })
    ));
}
