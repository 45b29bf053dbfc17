//! Writing the session tree: branch switches and file-change records (rows appended to
//! `panto.branch_events` under the session's lock and fencing token, like an append), and forks
//! (a new session holding the path to an entry, with the file changes recorded on that path).

use panto_core::store::{CheckpointRecord, ForkOrigin};
use panto_core::{Error, Result};

use crate::db::{now, pg, pg_text};
use crate::pool::Pool;
use crate::tree::{path_info, Tree, TreeReads};
use crate::writer::{insert_session, update_row, CommitError, NewSession, OpenSession, UPDATE_SESSION};

/// What a branch event does.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event<'a> {
    /// Makes entry `.0` (`None`: the empty start) the tip.
    Switch(Option<&'a str>),
    /// Records a file change at the current tip.
    Checkpoint(&'a CheckpointRecord),
}

/// Appends one branch event (a switch, or a file change when `$6` is set).
pub(crate) const INSERT_EVENT: &str = "insert into panto.branch_events (session_id, seq, entries_before, ts, tip, \
     checkpoint_path, checkpoint_before, checkpoint_after, checkpoint_restore) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Copies the entries at positions `$3` (in that order) of session `$2` into session `$1`, at
/// positions 0, 1, …: ids, parents, times, messages, provenance and compactions as they are.
const COPY_PATH: &str = "insert into panto.entries (session_id, seq, id, parent_id, ts, role, message, \
     message_raw, usage, wire_api_style, wire_base_url, wire_model, wire_reasoning, compaction_first_kept, \
     compaction_tokens_before, compaction_tokens_after, tool_hashes) \
     select $1, p.n - 1, e.id, e.parent_id, e.ts, e.role, e.message, e.message_raw, e.usage, e.wire_api_style, \
     e.wire_base_url, e.wire_model, e.wire_reasoning, e.compaction_first_kept, e.compaction_tokens_before, \
     e.compaction_tokens_after, e.tool_hashes \
     from unnest($3::bigint[]) with ordinality as p(seq, n) \
     join panto.entries e on e.session_id = $2 and e.seq = p.seq \
     order by p.n";

/// Copies the file changes of session `$2` that belong to an entry in `$3` (or to the empty
/// start, which every path begins at) into session `$1`, in their order, as recorded when the
/// fork holds `$4` entries.
const COPY_CHECKPOINTS: &str = "insert into panto.branch_events (session_id, seq, entries_before, ts, tip, \
     checkpoint_path, checkpoint_before, checkpoint_after, checkpoint_restore) \
     select $1, row_number() over (order by b.seq) - 1, $4, b.ts, b.tip, b.checkpoint_path, \
     b.checkpoint_before, b.checkpoint_after, b.checkpoint_restore \
     from panto.branch_events b \
     where b.session_id = $2 and b.checkpoint_path is not null and (b.tip is null or b.tip = any($3::text[]))";

/// Lets session `$1` read the checkpoints of session `$2` that its file changes name.
const SHARE_BLOBS: &str = "insert into panto.session_checkpoints (session_id, address) \
     select $1, s.address from panto.session_checkpoints s \
     where s.session_id = $2 and s.address in ( \
         select checkpoint_before from panto.branch_events where session_id = $1 \
         union select checkpoint_after from panto.branch_events where session_id = $1) \
     on conflict do nothing";

const FORK_SOURCE: &str = "select metadata from panto.sessions where id = $1";

fn unknown_entry(session: &str, entry: &str) -> Error {
    Error::UnknownEntry {
        session: session.to_owned(),
        message: format!("it holds no message entry {entry:?}"),
    }
}

/// Checks a file change before it is stored: the database's checks would refuse it too, but
/// with a message that names no field.
fn check_record(context: &str, record: &CheckpointRecord) -> Result<()> {
    let bad = |message: String| Error::store(context.to_owned(), message);
    if !record.path.starts_with('/') {
        return Err(bad(format!("the file path {:?} is not absolute", record.path)));
    }
    pg_text(context, "the file path", &record.path)?;
    for address in record.before.iter().chain(&record.after) {
        panto_core::store::validate_checkpoint_address(address)?;
    }
    Ok(())
}

/// Appends `event` to the open session `open` in one transaction with the session row's update
/// (under the fencing token), and brings `open` up to date. The caller holds the session's lock
/// and discards `open` on error.
pub(crate) async fn commit_event(
    pool: &Pool,
    context: &str,
    open: &mut OpenSession,
    token: &str,
    event: Event<'_>,
) -> Result<(), CommitError> {
    let id = open.info.id.clone();
    let id = id.as_str();
    if let Event::Checkpoint(record) = event {
        check_record(context, record)?;
    }
    let failed = |what: &str, e| CommitError::Failed(pg(format!("{context}: {what}"), e));
    let mut conn = pool.get().await?;
    let update = conn
        .statement(UPDATE_SESSION)
        .await
        .map_err(|e| failed("preparing", e))?;
    let reads = TreeReads::prepare(&mut conn, context).await?;
    let txn = conn
        .client
        .transaction()
        .await
        .map_err(|e| failed("starting the transaction", e))?;
    let at = now();
    let (tip, change, switched) = match event {
        Event::Switch(tip) => {
            let tree = Tree::read(&txn, &reads, context, id).await?;
            let target = match tip {
                None => None,
                Some(entry) => Some(tree.find(entry).ok_or_else(|| unknown_entry(id, entry))?),
            };
            let path = tree.path(target);
            let view = tree.view(&path)?;
            let mut info = path_info(&txn, context, id, &tree, &path, open.info.created).await?;
            info.forked_from = open.info.forked_from.clone();
            info.cwd = open.info.cwd.clone();
            info.modified = at;
            (tip.map(str::to_owned), None, Some((info, view)))
        }
        Event::Checkpoint(record) => (open.last_id.clone(), Some(record), None),
    };
    txn.execute(
        INSERT_EVENT,
        &[
            &id,
            &open.next_event,
            &open.next_seq,
            &at,
            &tip,
            &change.map(|c| c.path.as_str()),
            &change.and_then(|c| c.before.as_deref()),
            &change.and_then(|c| c.after.as_deref()),
            &change.map(|c| c.restore),
        ],
    )
    .await
    .map_err(|e| failed("recording the branch event", e))?;
    let info = match &switched {
        Some((info, _)) => info.clone(),
        None => {
            let mut info = open.info.clone();
            info.modified = at;
            info
        }
    };
    update_row(&txn, context, &update, &info, token).await?;
    txn.commit().await.map_err(|e| failed("committing", e))?;
    open.info = info;
    open.next_event += 1;
    if let Some((_, view)) = switched {
        open.view = view;
        open.last_id = tip;
    }
    Ok(())
}

/// Makes session `new_id` a fork of session `from` at entry `at`: its history is the path to
/// `at` (entry ids kept), with the file changes recorded on that path and the checkpoints they
/// name; its origin is recorded. One transaction on one snapshot of the source.
pub(crate) async fn fork(pool: &Pool, from: &str, at: &str, new_id: &str) -> Result<()> {
    let context = format!("forking session {from} at entry {at} into {new_id}");
    let failed = |what: &str, e| pg(format!("{context}: {what}"), e);
    let mut conn = pool.get().await?;
    let reads = TreeReads::prepare(&mut conn, &context).await?;
    // A read-write transaction on one snapshot: the source's entries and events agree even while
    // its writer appends.
    let txn = conn
        .client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await
        .map_err(|e| failed("starting the transaction", e))?;
    let Some(source) = txn
        .query_opt(FORK_SOURCE, &[&from])
        .await
        .map_err(|e| failed("reading the source", e))?
    else {
        return Err(Error::SessionNotFound(from.to_owned()));
    };
    let metadata: Option<String> = source.get(0);
    let tree = Tree::read(&txn, &reads, &context, from).await?;
    let end = tree.find(at).ok_or_else(|| unknown_entry(from, at))?;
    let path = tree.path(Some(end));
    // The source's view on the path must be sound before it is copied.
    tree.view(&path)?;
    let created = now();
    let mut info = path_info(&txn, &context, from, &tree, &path, created).await?;
    info.id = new_id.to_owned();
    info.forked_from = Some(ForkOrigin {
        session: from.to_owned(),
        entry: at.to_owned(),
    });
    let cwd = NewSession::this_cwd();
    let new = NewSession {
        info: &info,
        metadata: metadata.as_deref(),
        cwd: cwd.as_deref(),
        writer: None,
    };
    if !insert_session(&txn, &context, &new).await? {
        return Err(Error::store(context, "a session with the new id already exists"));
    }
    let seqs: Vec<i64> = path.iter().map(|&i| tree.nodes[i].seq).collect();
    let ids: Vec<&str> = path.iter().map(|&i| tree.nodes[i].id.as_str()).collect();
    let count = seqs.len() as i64;
    txn.execute(COPY_PATH, &[&new_id, &from, &seqs])
        .await
        .map_err(|e| failed("copying the entries", e))?;
    txn.execute(COPY_CHECKPOINTS, &[&new_id, &from, &ids, &count])
        .await
        .map_err(|e| failed("copying the file changes", e))?;
    txn.execute(SHARE_BLOBS, &[&new_id, &from])
        .await
        .map_err(|e| failed("sharing the file checkpoints", e))?;
    txn.commit().await.map_err(|e| failed("committing", e))?;
    Ok(())
}
