//! The read side: listings from the sessions table, the model's view and the full history from
//! the entries, and the audit of the tools offered with an entry.

use std::collections::HashMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use panto_core::store::validate_checkpoint_address;
use panto_core::store::{
    CheckpointRecord, EntryRef, ForkOrigin, LoadedBranch, SessionTree, StoredCheckpoint, TreeEntry,
};
use panto_core::wire::ProviderIdentity;
use panto_core::{Conversation, Error, Message, Result, SessionInfo, ToolDecl, Usage};
use tokio_postgres::types::ToSql;
use tokio_postgres::{IsolationLevel, Row, Statement, Transaction};

use crate::db::{pg, unsigned, wire_from_columns};
use crate::pool::Pool;
use crate::tools::ToolHash;
use crate::tree::{last_switch, Switch, Tree, TreeReads};

/// Every session, newest first by recency (the last human prompt, else creation), ties broken
/// by the newer id: the order of `SessionInfo::recency` and `sort_by_recency`, served by the
/// `sessions_recency_idx` index.
pub(crate) const LIST: &str = concat!(
    "select ",
    info_columns!(),
    " from panto.sessions order by coalesce(last_prompt_at, created) desc, id desc"
);

/// The first session of [`LIST`]: one probe of the recency index.
pub(crate) const LATEST: &str = concat!(
    "select ",
    info_columns!(),
    " from panto.sessions order by coalesce(last_prompt_at, created) desc, id desc limit 1"
);

/// One session by id.
pub(crate) const BY_ID: &str = concat!("select ", info_columns!(), " from panto.sessions where id = $1");

/// The id of every session whose id starts with `$1`. Ids are lowercase hex and `-`, all below
/// `~`, so the range is exactly the prefix and is served by the primary key.
pub(crate) const IDS_BY_PREFIX: &str =
    "select id from panto.sessions where id >= $1::text and id < $1::text || '~' order by id";

const MESSAGES_AT: &str = "select seq, coalesce(message_raw, message::text), parent_id from panto.entries \
     where session_id = $1 and seq = any($2)";

const METADATA: &str = "select metadata from panto.sessions where id = $1";

/// What a load reads of the session row besides the listing: the metadata bag and the origin.
const BRANCH_ROW: &str = "select metadata, forked_from_session, forked_from_entry from panto.sessions where id = $1";

/// Every file change recorded in session `$1`, in the order recorded.
const CHECKPOINTS: &str = "select seq, tip, checkpoint_path, checkpoint_before, checkpoint_after, checkpoint_restore \
     from panto.branch_events where session_id = $1 and checkpoint_path is not null order by seq";

/// Every message of session `$1`, oldest first, for the tree's previews.
const TREE_MESSAGES: &str = "select seq, coalesce(message_raw, message::text) from panto.entries \
     where session_id = $1 order by seq";

const HISTORY: &str = "select seq, id, parent_id, ts, coalesce(message_raw, message::text), usage::text, \
     wire_api_style, wire_base_url, wire_model, wire_reasoning, compaction_first_kept, \
     compaction_tokens_before, compaction_tokens_after, tool_hashes \
     from panto.entries where session_id = $1 order by seq";

const ENTRY_TOOLS: &str = "select cardinality(tool_hashes) from panto.entries where session_id = $1 and id = $2";

/// The audit query: the tools the model was offered with entry `$2` of session `$1`, in the
/// order they were offered. This exact text is in `docs/stores.md` and is what
/// [`PostgresStore::tools_offered`](crate::PostgresStore::tools_offered) runs.
pub const AUDIT_QUERY: &str = "select t.name, t.description, t.schema
from panto.entries e
cross join lateral unnest(e.tool_hashes) with ordinality as offered(hash, position)
join panto.tools t on t.hash = offered.hash
where e.session_id = $1 and e.id = $2
order by offered.position";

/// A listing row (the columns of `info_columns!`) as a [`SessionInfo`].
pub(crate) fn info_from_row(row: &Row) -> Result<SessionInfo> {
    let id: String = row.get(0);
    let location = || format!("panto.sessions row {id}");
    let count = unsigned(&location, "message_count", row.get(4))?;
    let wire = wire_from_columns(&location, row.get(6), row.get(7), row.get(8), row.get(9))?;
    let message_count = usize::try_from(count).map_err(|_| Error::CorruptSession {
        location: location(),
        message: format!("message_count {count} does not fit this machine's usize"),
    })?;
    let mut info = SessionInfo::new(id, row.get(1));
    info.modified = row.get(2);
    info.last_prompt_at = row.get(3);
    info.message_count = message_count;
    info.last_user_message = row.get(5);
    info.wire = wire;
    info.forked_from = fork_origin(row.get(10), row.get(11));
    info.cwd = row.get::<_, Option<String>>(12).map(PathBuf::from);
    Ok(info)
}

/// A fork origin from its two columns (both set, or neither: a check constraint).
pub(crate) fn fork_origin(session: Option<String>, entry: Option<String>) -> Option<ForkOrigin> {
    Some(ForkOrigin {
        session: session?,
        entry: entry?,
    })
}

/// Where an entry is, for errors.
pub(crate) fn entry_location(session: &str, id: &str, seq: i64) -> String {
    format!("panto.entries session {session} entry {id} (position {seq})")
}

/// Parses a stored message.
pub(crate) fn parse_message(location: impl Fn() -> String, text: &str) -> Result<Message> {
    serde_json::from_str(text).map_err(|e| Error::CorruptSession {
        location: location(),
        message: format!("the message is not a panto message: {e}"),
    })
}

/// A read-only transaction on one snapshot, so that a session's row and entries agree even
/// while its writer appends.
pub(crate) async fn snapshot<'a>(conn: &'a mut tokio_postgres::Client, context: &str) -> Result<Transaction<'a>> {
    conn.build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(|e| pg(context.to_owned(), e))
}

/// The row of session `id` that `row` reads (`None`: no such session), its tree and its newest
/// branch switch. The three reads are independent: sent together, they cost one round trip.
async fn row_and_tree(
    txn: &Transaction<'_>,
    row: &Statement,
    reads: &TreeReads,
    context: &str,
    id: &str,
) -> Result<Option<(Row, Tree, Option<Switch>)>> {
    let by_id: [&(dyn ToSql + Sync); 1] = [&id];
    let (row, tree, switch) = tokio::join!(
        txn.query_opt(row, &by_id),
        Tree::read(txn, reads, context, id),
        last_switch(txn, reads, context, id),
    );
    let Some(row) = row.map_err(|e| pg(context.to_owned(), e))? else {
        return Ok(None);
    };
    Ok(Some((row, tree?, switch?)))
}

/// The active branch of session `id`: the conversation the model sees on it, each message's
/// entry, and the fork origin.
pub(crate) async fn load(pool: &Pool, id: &str) -> Result<Option<LoadedBranch>> {
    let context = format!("loading session {id}");
    let mut conn = pool.get().await?;
    let reads = TreeReads::prepare(&mut conn, &context).await?;
    let branch_row = conn.statement(BRANCH_ROW).await.map_err(|e| pg(context.clone(), e))?;
    let messages_at = conn.statement(MESSAGES_AT).await.map_err(|e| pg(context.clone(), e))?;
    let txn = snapshot(&mut conn.client, &context).await?;
    let Some((row, tree, switch)) = row_and_tree(&txn, &branch_row, &reads, &context, id).await? else {
        return Ok(None);
    };
    let metadata: Option<String> = row.get(0);
    let forked_from = fork_origin(row.get(1), row.get(2));
    let path = tree.path(tree.tip(switch.as_ref())?);
    let view = tree.view(&path)?;
    let seqs: Vec<i64> = view.iter().map(|v| v.seq).collect();
    // Only the messages in the view are fetched: a long history that compaction hid, and the
    // other branches, are not read.
    let bodies = txn
        .query(&messages_at, &[&id, &seqs])
        .await
        .map_err(|e| pg(context.clone(), e))?;
    txn.commit().await.map_err(|e| pg(context.clone(), e))?;
    let mut by_seq: HashMap<i64, (String, Option<String>)> =
        bodies.iter().map(|r| (r.get(0), (r.get(1), r.get(2)))).collect();
    let mut messages = Vec::with_capacity(view.len());
    let mut entries = Vec::with_capacity(view.len());
    for v in &view {
        let (text, parent) = by_seq.remove(&v.seq).ok_or_else(|| Error::CorruptSession {
            location: entry_location(id, &v.id, v.seq),
            message: "the entry vanished while the session was read".to_owned(),
        })?;
        messages.push(parse_message(|| entry_location(id, &v.id, v.seq), &text)?);
        entries.push(EntryRef {
            id: v.id.clone(),
            parent,
        });
    }
    Ok(Some(LoadedBranch {
        conversation: Conversation { messages, metadata },
        entries,
        forked_from,
    }))
}

/// Every message entry of session `id`, all branches, in append order, and the active tip.
pub(crate) async fn tree(pool: &Pool, id: &str) -> Result<Option<SessionTree>> {
    let context = format!("reading the tree of session {id}");
    let mut conn = pool.get().await?;
    let reads = TreeReads::prepare(&mut conn, &context).await?;
    let metadata = conn.statement(METADATA).await.map_err(|e| pg(context.clone(), e))?;
    let tree_messages = conn
        .statement(TREE_MESSAGES)
        .await
        .map_err(|e| pg(context.clone(), e))?;
    let txn = snapshot(&mut conn.client, &context).await?;
    let Some((_, tree, switch)) = row_and_tree(&txn, &metadata, &reads, &context, id).await? else {
        return Ok(None);
    };
    let tip = tree.tip(switch.as_ref())?;
    let bodies = txn
        .query(&tree_messages, &[&id])
        .await
        .map_err(|e| pg(context.clone(), e))?;
    txn.commit().await.map_err(|e| pg(context.clone(), e))?;
    if bodies.len() != tree.nodes.len() {
        return Err(Error::CorruptSession {
            location: format!("panto.entries of session {id}"),
            message: "the entries changed while the session was read".to_owned(),
        });
    }
    let mut entries = Vec::with_capacity(tree.nodes.len());
    for (i, (node, row)) in tree.nodes.iter().zip(&bodies).enumerate() {
        let location = || entry_location(id, &node.id, node.seq);
        let message = parse_message(location, row.get(1))?;
        let entry = EntryRef {
            id: node.id.clone(),
            parent: tree.parent_id(i),
        };
        entries.push(TreeEntry::of(entry, &message));
    }
    Ok(Some(SessionTree {
        entries,
        tip: tip.map(|i| tree.nodes[i].id.clone()),
    }))
}

/// Every file change recorded in session `id`, in order, with the tip each belongs to. A row
/// whose path or addresses could not be one is corrupt data naming the row (the database's
/// checks keep them out; a rewind must never write where a damaged row points).
pub(crate) async fn checkpoints(pool: &Pool, id: &str) -> Result<Vec<StoredCheckpoint>> {
    let context = format!("reading the file checkpoints of session {id}");
    let conn = pool.get().await?;
    let rows = conn
        .client
        .query(CHECKPOINTS, &[&id])
        .await
        .map_err(|e| pg(context, e))?;
    rows.iter()
        .map(|row| {
            let seq: i64 = row.get(0);
            let bad = |message: String| Error::CorruptSession {
                location: format!("panto.branch_events session {id} position {seq}"),
                message,
            };
            let path: String = row.get(2);
            if !path.starts_with('/') {
                return Err(bad(format!("the checkpoint's path {path:?} is not absolute")));
            }
            let before: Option<String> = row.get(3);
            let after: Option<String> = row.get(4);
            for address in before.iter().chain(&after) {
                validate_checkpoint_address(address).map_err(|_| {
                    bad(format!(
                        "the checkpoint's address {address:?} is not 64 lowercase hex digits"
                    ))
                })?;
            }
            Ok(StoredCheckpoint {
                entry: row.get(1),
                record: CheckpointRecord {
                    path,
                    before,
                    after,
                    restore: row.get(5),
                },
            })
        })
        .collect()
}

/// A compaction as its summary entry records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedCompaction {
    /// The entry id of the first message kept verbatim after the summary; `None` when the
    /// compaction kept nothing.
    pub first_kept: Option<String>,
    /// Estimated context tokens before compaction.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
}

/// One entry of a session's full history: everything the store keeps of one appended message.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// The entry's position in the session, from 0.
    pub seq: u64,
    /// The entry id: 8 lowercase hex digits, unique within the session.
    pub id: String,
    /// The entry this one follows; `None` for the first.
    pub parent_id: Option<String>,
    /// When the batch holding the entry was appended (microsecond precision).
    pub timestamp: DateTime<Utc>,
    /// The message.
    pub message: Message,
    /// The usage the agent reported with it.
    pub usage: Option<Usage>,
    /// Who produced it on the wire; `None` for system messages.
    pub wire: Option<ProviderIdentity>,
    /// Set on compaction summaries.
    pub compaction: Option<RecordedCompaction>,
    /// The content addresses of the tools offered with it, in order; `None` when they were not
    /// recorded (entries imported from the file store).
    pub tools: Option<Vec<ToolHash>>,
}

/// The full history of session `id`, compactions included, oldest first.
pub(crate) async fn history(pool: &Pool, id: &str) -> Result<Option<Vec<HistoryEntry>>> {
    let context = format!("reading the history of session {id}");
    let mut conn = pool.get().await?;
    let txn = snapshot(&mut conn.client, &context).await?;
    if txn
        .query_opt(METADATA, &[&id])
        .await
        .map_err(|e| pg(context.clone(), e))?
        .is_none()
    {
        return Ok(None);
    }
    let rows = txn.query(HISTORY, &[&id]).await.map_err(|e| pg(context.clone(), e))?;
    txn.commit().await.map_err(|e| pg(context.clone(), e))?;
    rows.iter()
        .map(|row| history_entry(id, row))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

fn history_entry(session: &str, row: &Row) -> Result<HistoryEntry> {
    let seq: i64 = row.get(0);
    let id: String = row.get(1);
    let location = || entry_location(session, &id, seq);
    let corrupt = |message: String| Error::CorruptSession {
        location: location(),
        message,
    };
    let message = parse_message(location, row.get(4))?;
    let usage = row
        .get::<_, Option<&str>>(5)
        .map(serde_json::from_str::<Usage>)
        .transpose()
        .map_err(|e| corrupt(format!("the usage is not a panto usage: {e}")))?;
    let wire = wire_from_columns(&location, row.get(6), row.get(7), row.get(8), row.get(9))?;
    let compaction = match (row.get::<_, Option<i64>>(11), row.get::<_, Option<i64>>(12)) {
        (Some(before), Some(after)) => Some(RecordedCompaction {
            first_kept: row.get(10),
            tokens_before: unsigned(&location, "compaction_tokens_before", before)?,
            tokens_after: unsigned(&location, "compaction_tokens_after", after)?,
        }),
        _ => None,
    };
    let tools = row
        .get::<_, Option<Vec<Vec<u8>>>>(13)
        .map(|hashes| {
            hashes
                .into_iter()
                .map(|h| {
                    <[u8; 32]>::try_from(h.as_slice())
                        .map(ToolHash)
                        .map_err(|_| corrupt(format!("a tool hash is {} bytes, not 32", h.len())))
                })
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?;
    Ok(HistoryEntry {
        seq: unsigned(&location, "seq", seq)?,
        id,
        parent_id: row.get(2),
        timestamp: row.get(3),
        message,
        usage,
        wire,
        compaction,
        tools,
    })
}

/// The tools offered with one entry, as the audit trail recorded them.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolManifest {
    /// The tools offered, in the order they were offered (empty when none were).
    Recorded(Vec<ToolDecl>),
    /// The entry came from a store that did not record the tools offered (an import from the
    /// file store).
    NotRecorded,
}

/// The tools offered with entry `entry` of session `session`.
pub(crate) async fn tools_offered(pool: &Pool, session: &str, entry: &str) -> Result<Option<ToolManifest>> {
    let context = format!("auditing entry {entry} of session {session}");
    let mut conn = pool.get().await?;
    let txn = snapshot(&mut conn.client, &context).await?;
    let Some(row) = txn
        .query_opt(ENTRY_TOOLS, &[&session, &entry])
        .await
        .map_err(|e| pg(context.clone(), e))?
    else {
        return Ok(None);
    };
    let Some(expected) = row.get::<_, Option<i32>>(0) else {
        return Ok(Some(ToolManifest::NotRecorded));
    };
    let rows = txn
        .query(AUDIT_QUERY, &[&session, &entry])
        .await
        .map_err(|e| pg(context.clone(), e))?;
    txn.commit().await.map_err(|e| pg(context.clone(), e))?;
    // `cardinality` of an empty array is 0; a NULL array was handled above.
    if rows.len() != usize::try_from(expected).unwrap_or(usize::MAX) {
        return Err(Error::CorruptSession {
            location: format!("panto.entries session {session} entry {entry}"),
            message: format!(
                "the entry offers {expected} tools but panto.tools holds only {} of them",
                rows.len()
            ),
        });
    }
    Ok(Some(ToolManifest::Recorded(
        rows.iter()
            .map(|r| ToolDecl {
                name: r.get(0),
                description: r.get(1),
                input_schema: r.get(2),
            })
            .collect(),
    )))
}
