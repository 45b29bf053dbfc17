//! Files 0600, directories 0700, and ids that could escape the directory never reach a path.

use std::os::unix::fs::PermissionsExt;

use panto_core::{Error, Session};
use panto_store_fs::JsonlStore;
use panto_testkit::store_contract::{append_one, user, Driver};

use super::common::{as_dyn, session_file};

#[tokio::test]
async fn the_directory_is_created_on_the_first_append_with_private_modes() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("state").join("sessions");
    let store = JsonlStore::new(&dir);
    let dyn_store = as_dyn(&store);

    // Nothing is created by reading, or by creating a session.
    let session = Session::create(dyn_store.clone());
    assert!(dyn_store.list().await.unwrap().is_empty());
    assert!(dyn_store.load(session.id()).await.unwrap().is_none());
    assert!(Session::resolve(dyn_store.clone(), session.id())
        .await
        .unwrap()
        .is_none());
    assert!(Session::latest(dyn_store.clone()).await.unwrap().is_none());
    assert!(!root.path().join("state").exists(), "a read created the directory");

    let mut d = Driver::new(&dyn_store, None);
    d.append(vec![user("hi")]).await;
    let dir_mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(dir_mode, 0o700, "directory mode {dir_mode:o}");
    let file_mode = std::fs::metadata(session_file(&store, &d.id()))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(file_mode, 0o600, "file mode {file_mode:o}");
}

#[tokio::test]
async fn invalid_ids_never_touch_the_filesystem() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sessions");
    let store = JsonlStore::new(&dir);
    let dyn_store = as_dyn(&store);
    for bad in [
        "../x",
        "../../etc/passwd",
        "a/b",
        "/tmp/x",
        "..",
        "",
        "ABC",
        "x.jsonl",
        &"a".repeat(37),
    ] {
        let is_invalid = |r: &Result<_, Error>| matches!(r, Err(Error::InvalidSessionId(id)) if id == bad);
        assert!(
            is_invalid(&append_one(&*store, bad, &user("escape")).await.map(|_| ())),
            "append {bad:?}"
        );
        assert!(is_invalid(&dyn_store.load(bad).await.map(|_| ())), "load {bad:?}");
        assert!(
            is_invalid(&Session::resolve(dyn_store.clone(), bad).await.map(|_| ())),
            "resolve {bad:?}"
        );
        assert!(is_invalid(&store.session_path(bad).map(|_| ())), "session_path {bad:?}");
    }
    assert!(!dir.exists(), "an invalid id created the directory");
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "an invalid id wrote next to the directory"
    );
}

#[tokio::test]
async fn a_file_where_the_directory_should_be_is_reported_and_left_alone() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sessions");
    std::fs::write(&dir, "not a directory").unwrap();
    let store = JsonlStore::new(&dir);
    let session = Session::create(as_dyn(&store));
    let error = append_one(&*store, session.id(), &user("hi")).await.unwrap_err();
    let shown = error.to_string();
    assert!(shown.contains(&dir.display().to_string()), "{shown}");
    assert_eq!(std::fs::read_to_string(&dir).unwrap(), "not a directory");
}
