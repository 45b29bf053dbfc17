//! `panto sessions import FILE`: a `panto-session` JSON document (sessions/json.rs) into the
//! store in use, whichever it is.
//!
//! The document is checked whole first. Then the session is written, through the file store's
//! own `append`, `switch_branch` (the same calls a live session makes) into a private temporary
//! directory, and only the finished session is moved in: into a session directory by a hard
//! link (which fails, changing nothing, if the id is taken), into PostgreSQL by the directory
//! import (one transaction). So a failure at any point leaves the store as it was.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use panto_core::store::{CompactionRecord, PersistentMessage};
use panto_core::{Conversation, SessionStore};
use panto_store_fs::{Durability, JsonlStore};

use super::history::History;
use crate::exit::Failure;
use crate::store::StoreLocation;

/// Reads at most this much: far above any session a provider could have produced.
const MAX_DOCUMENT: u64 = 1 << 30;

/// `panto sessions import FILE` into `into`.
pub async fn import_file(into: &StoreLocation, file: &Path) -> Result<ExitCode, Failure> {
    let history = read_document(file)?;
    let id = history.id.clone();
    // Refused early with the clearest message; the move below refuses a race all the same.
    let open = into.open().await?;
    if open.store.info(&id).await?.is_some() {
        return Err(already_there(&id, &open.place));
    }
    let messages = history.entries.len();
    match into {
        StoreLocation::Nowhere => return Err(Failure::usage("--no-session keeps no sessions to import into")),
        StoreLocation::Directory(dir) => {
            crate::store::ensure_session_dir(dir)?;
            let staging = Staging::new(dir.join(format!(".panto-import-{}", uuid_like())))?;
            let written = stage(&staging.0, &history).await?;
            sync(&written)?;
            let target = dir.join(format!("{id}.jsonl"));
            match std::fs::hard_link(&written, &target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(already_there(&id, &open.place));
                }
                Err(e) => {
                    return Err(Failure::runtime(format!(
                        "cannot move the imported session into {}: {e}",
                        dir.display()
                    )))
                }
            }
            // The new name is durable once the directory is.
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| Failure::runtime(format!("cannot sync {}: {e}", dir.display())))?;
        }
        StoreLocation::Postgres(url) => {
            let staging = Staging::new(std::env::temp_dir().join(format!("panto-import-{}", uuid_like())))?;
            stage(&staging.0, &history).await?;
            let pg = crate::store::connect_postgres(url).await?;
            let report = panto_store_postgres::import_fs(&staging.0, &pg).await?;
            if report.skipped.contains(&id) {
                return Err(already_there(&id, &open.place));
            }
            if let Some((_, e)) = report.problems.first() {
                return Err(Failure::runtime(format!(
                    "{}: the database refused session {id}: {e}",
                    file.display()
                )));
            }
        }
    }
    println!("imported session {id} ({messages} messages) into {}", open.place);
    Ok(ExitCode::SUCCESS)
}

fn already_there(id: &str, place: &str) -> Failure {
    Failure::usage(format!(
        "session {id} is already in {place}; nothing imported (to keep both, import into another store)"
    ))
}

/// The document at `file`, checked.
fn read_document(file: &Path) -> Result<History, Failure> {
    use std::io::Read;
    let cannot = |e: std::io::Error| Failure::usage(format!("cannot read {}: {e}", file.display()));
    let opened = std::fs::File::open(file).map_err(cannot)?;
    let mut text = Vec::new();
    opened.take(MAX_DOCUMENT + 1).read_to_end(&mut text).map_err(cannot)?;
    if text.len() as u64 > MAX_DOCUMENT {
        return Err(Failure::usage(format!(
            "{} is larger than {} GiB: not a session panto exported",
            file.display(),
            MAX_DOCUMENT >> 30
        )));
    }
    super::json::read(&text).map_err(|e| Failure::usage(format!("{}: {e}; nothing imported", file.display())))
}

/// A private directory removed when dropped.
struct Staging(PathBuf);

impl Staging {
    fn new(path: PathBuf) -> Result<Staging, Failure> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", path.display())))?;
        Ok(Staging(path))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A name no other import uses at the same time.
fn uuid_like() -> String {
    panto_core::store::new_session_id()
}

fn sync(path: &Path) -> Result<(), Failure> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Failure::runtime(format!("cannot sync {}: {e}", path.display())))
}

/// Writes `history` into a file store at `dir` as a live session would have been written: each
/// message appended after its parent (switching the branch first where the parent is not the
/// tip), compactions recorded against the view they compacted, the tip set last. Returns the
/// session file.
async fn stage(dir: &Path, history: &History) -> Result<PathBuf, Failure> {
    let store = JsonlStore::with_durability(dir, Durability::None);
    let result = replay(&*store, history).await;
    // The file's lock goes with the store's writer.
    let _ = store.release_all().await;
    result?;
    Ok(store.session_path(&history.id)?)
}

/// Replays `history` (checked by `json::read`: every entry id it names is an earlier entry's)
/// into `store` through the trait.
async fn replay(store: &dyn SessionStore, history: &History) -> Result<(), Failure> {
    let id = history.id.as_str();
    let mut new_ids: HashMap<&str, String> = HashMap::new();
    // An entry a checked document names is always replayed before it is named.
    let new_id = |new_ids: &HashMap<&str, String>, old: &str| {
        new_ids
            .get(old)
            .cloned()
            .ok_or_else(|| Failure::usage(format!("entry {old:?} is named before it is defined; nothing imported")))
    };
    let mut tip: Option<String> = None;
    let mut started = false;
    for (i, entry) in history.entries.iter().enumerate() {
        let parent = entry.parent.as_deref().map(|p| new_id(&new_ids, p)).transpose()?;
        if started && parent != tip {
            store.switch_branch(id, parent.as_deref()).await?;
        }
        let compaction = match &entry.compaction {
            None => None,
            Some(c) => {
                let view = if started {
                    store.load_branch(id).await?.map(|b| b.entries).unwrap_or_default()
                } else {
                    Vec::new()
                };
                let first_kept = match &c.first_kept {
                    None => view.len(),
                    Some(kept) => {
                        let kept_now = new_id(&new_ids, kept)?;
                        view.iter().position(|e| e.id == kept_now).ok_or_else(|| {
                            Failure::usage(format!(
                                "$.entries[{i}].compaction.first_kept: {kept:?} is not in the view it compacts \
                                 (an earlier compaction hid it); nothing imported"
                            ))
                        })?
                    }
                };
                Some(CompactionRecord {
                    first_kept,
                    tokens_before: c.tokens_before,
                    tokens_after: c.tokens_after,
                })
            }
        };
        let mut conversation = Conversation {
            messages: Vec::new(),
            metadata: history.metadata.clone(),
        };
        conversation.messages.push(entry.message.clone());
        let persistent = PersistentMessage {
            message: &conversation.messages[0],
            usage: entry.usage,
            wire: entry.wire.as_ref(),
            conversation: &conversation,
            tools_available: &[],
            compaction,
        };
        let ids = store.append(id, &[persistent]).await?;
        let new = ids
            .into_iter()
            .next()
            .ok_or_else(|| Failure::runtime("the store returned no entry id for an append"))?;
        new_ids.insert(entry.id.as_str(), new.clone());
        tip = Some(new);
        started = true;
    }
    let wanted = history.tip.as_deref().map(|t| new_id(&new_ids, t)).transpose()?;
    if wanted != tip {
        store.switch_branch(id, wanted.as_deref()).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use panto_core::{ContentBlock, Message, Role, SystemMode};

    use super::*;
    use crate::sessions::export::tests::{entry, history};
    use crate::sessions::history::Compaction;

    fn text(role: Role, t: &str) -> Message {
        Message::new(role, vec![ContentBlock::text(t)])
    }

    /// A session with a system prompt, two exchanges, a compaction keeping the second, and a
    /// branch left behind from after the first answer; the active tip is the summary.
    fn compacted_with_a_branch() -> History {
        let mut summary = entry(
            "f",
            Some("e"),
            Message::new(
                Role::User,
                vec![ContentBlock::CompactionSummary {
                    summary: "they talked".into(),
                }],
            ),
        );
        summary.compaction = Some(Compaction {
            first_kept: Some("d".into()),
            tokens_before: 100,
            tokens_after: 10,
        });
        let mut h = history(vec![
            entry(
                "a",
                None,
                Message::new(
                    Role::System,
                    vec![ContentBlock::System {
                        text: "be brief".into(),
                        mode: SystemMode::Append,
                    }],
                ),
            ),
            entry("b", Some("a"), text(Role::User, "q1")),
            entry("c", Some("b"), text(Role::Assistant, "a1")),
            entry("d", Some("c"), text(Role::User, "q2")),
            entry("e", Some("d"), text(Role::Assistant, "a2")),
            summary,
            entry("g", Some("c"), text(Role::User, "abandoned")),
        ]);
        h.tip = Some("f".into());
        h
    }

    #[tokio::test]
    async fn a_replayed_history_loads_the_same_view_and_reads_back_the_same_tree() {
        let dir = tempfile::tempdir().unwrap();
        let original = compacted_with_a_branch();
        let file = stage(dir.path(), &original).await.unwrap();
        assert!(file.ends_with(format!("{}.jsonl", original.id)));

        let open = StoreLocation::Directory(dir.path().to_owned()).open().await.unwrap();
        let session = open.resolve(&original.id).await.unwrap();
        let view: Vec<String> = session
            .load()
            .await
            .unwrap()
            .messages
            .iter()
            .map(|m| match &m.content[0] {
                ContentBlock::CompactionSummary { summary } => summary.clone(),
                ContentBlock::System { text, .. } => text.clone(),
                _ => m.text(),
            })
            .collect();
        assert_eq!(view, ["be brief", "they talked", "q2", "a2"], "the compacted view");

        let back = crate::sessions::history::read(&open, &session).await.unwrap();
        assert_eq!(back.entries.len(), original.entries.len());
        // The same messages in the same tree, under the store's new entry ids.
        let position = |h: &History, id: &Option<String>| {
            id.as_ref()
                .map(|id| h.entries.iter().position(|e| &e.id == id).unwrap())
        };
        for (a, b) in original.entries.iter().zip(&back.entries) {
            assert_eq!(a.message, b.message);
            assert_eq!(position(&original, &a.parent), position(&back, &b.parent));
            assert_eq!(
                a.compaction.as_ref().map(|c| position(&original, &c.first_kept)),
                b.compaction.as_ref().map(|c| position(&back, &c.first_kept))
            );
        }
        assert_eq!(
            position(&original, &original.tip),
            position(&back, &back.tip),
            "the tip"
        );
    }
}
