//! Helpers shared by the file store tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panto_core::{Error, Result, SessionStore};
use panto_store_fs::{Durability, JsonlStore};
use serde_json::Value;

/// A store over `dir` that does not fsync: these tests are about content, not power loss.
pub fn fast_store(dir: &Path) -> Arc<JsonlStore> {
    JsonlStore::with_durability(dir, Durability::None)
}

/// The store as the agent holds it.
pub fn as_dyn(store: &Arc<JsonlStore>) -> Arc<dyn SessionStore> {
    store.clone()
}

/// The texts of session `id`'s messages as `store` loads them.
pub async fn loaded_texts(store: &Arc<JsonlStore>, id: &str) -> Vec<String> {
    let conversation = as_dyn(store).load(id).await.unwrap().expect("the session loads");
    conversation.messages.iter().map(|m| m.text()).collect()
}

/// The file of session `id`.
pub fn session_file(store: &JsonlStore, id: &str) -> PathBuf {
    store.session_path(id).expect("a valid id")
}

/// Every line of the file, parsed; panics naming the line when one is not JSON or the file does
/// not end with a line end.
pub fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read the session file");
    assert!(text.ends_with('\n'), "{} does not end with a line end", path.display());
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{}:{}: {e}: {line}", path.display(), i + 1))
        })
        .collect()
}

/// Checks a session file is valid: a header, then entries with unique ids, each the child of
/// the entry before it. Returns the entries.
pub fn check_valid(path: &Path) -> Vec<Value> {
    let mut all = lines(path);
    assert!(!all.is_empty(), "{} is empty", path.display());
    let header = all.remove(0);
    assert_eq!(header["type"], "session", "{}: header {header}", path.display());
    assert!(
        header["version"] == 1 || header["version"] == 2,
        "{}: version {}",
        path.display(),
        header["version"]
    );
    let mut parent = Value::Null;
    let mut seen = std::collections::HashSet::new();
    for (i, entry) in all.iter().enumerate() {
        assert_eq!(entry["type"], "message", "line {}", i + 2);
        assert_eq!(entry["parent_id"], parent, "line {}: the chain is broken", i + 2);
        let id = entry["id"].as_str().expect("an entry id").to_owned();
        assert!(seen.insert(id.clone()), "line {}: duplicate id {id}", i + 2);
        parent = Value::String(id);
    }
    all
}

/// The location and message of a `CorruptSession` error; panics on anything else.
pub fn corrupt_parts(result: Result<impl std::fmt::Debug>) -> (String, String) {
    match result {
        Err(Error::CorruptSession { location, message }) => (location, message),
        other => panic!("expected CorruptSession, got {other:?}"),
    }
}
