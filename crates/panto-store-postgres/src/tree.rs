//! The session tree as the database holds it: every entry with its parent, and the branch
//! events (`panto.branch_events`) that move the active branch's tip. From them: which entry is
//! the tip, the path to it, the view the model sees on that path, and the listing of the path.
//!
//! The rules are `MemoryStore`'s and the file store's: a branch switch is an appended row and
//! committed entries are never rewritten; the tip is the newest switch's when no entry was
//! appended since, else the newest entry; a session without branch events (every session
//! written before schema version 2) is one chain whose tip is its newest entry.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use panto_core::{Error, Message, Result, SessionInfo};
use tokio_postgres::{GenericClient, Row, Statement};

use crate::db::{pg, wire_from_columns};
use crate::pool::Conn;
use crate::read::{entry_location, parse_message};
use crate::view::{compact_recorded, ViewEntry};

/// The skeleton of every entry of session `$1`, oldest first: what the tree, the path and the
/// view are built from, without the messages.
const TREE_ENTRIES: &str = "select seq, id, parent_id, role = 'system', compaction_first_kept, \
     compaction_tokens_before is not null from panto.entries where session_id = $1 order by seq";

/// The newest branch switch of session `$1` (served by `branch_events_switch_idx`).
const LAST_SWITCH: &str = "select tip, entries_before from panto.branch_events \
     where session_id = $1 and checkpoint_path is null order by seq desc limit 1";

/// The position the next branch event of session `$1` takes.
pub(crate) const NEXT_EVENT: &str = "select coalesce(max(seq) + 1, 0) from panto.branch_events where session_id = $1";

/// What the listing folds of each entry on a path: its time, message and provider identity.
const PATH_MESSAGES: &str = "select seq, ts, coalesce(message_raw, message::text), wire_api_style, \
     wire_base_url, wire_model, wire_reasoning from panto.entries where session_id = $1 and seq = any($2)";

/// The statements that read a session's tree ([`Tree::read`], [`last_switch`]), prepared on the
/// connection that runs them: a statement sent as text costs a round trip to prepare each time.
pub(crate) struct TreeReads {
    entries: Statement,
    last_switch: Statement,
}

impl TreeReads {
    /// The statements, prepared on `conn` (once per connection).
    pub(crate) async fn prepare(conn: &mut Conn, context: &str) -> Result<TreeReads> {
        Ok(TreeReads {
            entries: conn
                .statement(TREE_ENTRIES)
                .await
                .map_err(|e| pg(context.to_owned(), e))?,
            last_switch: conn
                .statement(LAST_SWITCH)
                .await
                .map_err(|e| pg(context.to_owned(), e))?,
        })
    }
}

/// A branch switch as its row records it.
#[derive(Debug, Clone)]
pub(crate) struct Switch {
    /// The entry it made the tip; `None`: the empty start.
    pub tip: Option<String>,
    /// How many entries the session held then.
    pub entries_before: i64,
}

/// The newest switch of session `id`, if it has any.
pub(crate) async fn last_switch<C: GenericClient + Sync>(
    client: &C,
    reads: &TreeReads,
    context: &str,
    id: &str,
) -> Result<Option<Switch>> {
    let row = client
        .query_opt(&reads.last_switch, &[&id])
        .await
        .map_err(|e| pg(context.to_owned(), e))?;
    Ok(row.map(|r| Switch {
        tip: r.get(0),
        entries_before: r.get(1),
    }))
}

/// One entry of the tree.
#[derive(Debug)]
pub(crate) struct Node {
    pub seq: i64,
    pub id: String,
    /// The parent's index in [`Tree::nodes`].
    pub parent: Option<usize>,
    pub system: bool,
    /// Set on a compaction summary: the entry id of the first message it kept.
    pub compaction: Option<Option<String>>,
}

/// Every entry of one session, oldest first.
#[derive(Debug)]
pub(crate) struct Tree {
    session: String,
    pub nodes: Vec<Node>,
    by_id: HashMap<String, usize>,
}

impl Tree {
    /// The tree of session `session` from its [`TREE_ENTRIES`] rows. A parent that is not an
    /// earlier entry is corrupt data, named by the entry.
    pub(crate) fn from_rows(session: &str, rows: &[Row]) -> Result<Tree> {
        let mut tree = Tree {
            session: session.to_owned(),
            nodes: Vec::with_capacity(rows.len()),
            by_id: HashMap::with_capacity(rows.len()),
        };
        for row in rows {
            let seq: i64 = row.get(0);
            let id: String = row.get(1);
            let parent = match row.get::<_, Option<&str>>(2) {
                None => None,
                Some(p) => Some(tree.by_id.get(p).copied().ok_or_else(|| Error::CorruptSession {
                    location: entry_location(session, &id, seq),
                    message: format!("its parent_id \"{p}\" names no earlier entry"),
                })?),
            };
            let compaction = row.get::<_, bool>(5).then(|| row.get::<_, Option<String>>(4));
            tree.by_id.insert(id.clone(), tree.nodes.len());
            tree.nodes.push(Node {
                seq,
                id,
                parent,
                system: row.get(3),
                compaction,
            });
        }
        Ok(tree)
    }

    /// Reads the tree of session `id`.
    pub(crate) async fn read<C: GenericClient + Sync>(
        client: &C,
        reads: &TreeReads,
        context: &str,
        id: &str,
    ) -> Result<Tree> {
        let rows = client
            .query(&reads.entries, &[&id])
            .await
            .map_err(|e| pg(context.to_owned(), e))?;
        Tree::from_rows(id, &rows)
    }

    /// The position the next entry takes.
    pub(crate) fn next_seq(&self) -> i64 {
        self.nodes.last().map_or(0, |n| n.seq + 1)
    }

    /// The index of entry `id`.
    pub(crate) fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// Every entry id.
    pub(crate) fn ids(&self) -> HashSet<String> {
        self.by_id.keys().cloned().collect()
    }

    /// The id of the parent of entry `i`.
    pub(crate) fn parent_id(&self, i: usize) -> Option<String> {
        self.nodes[i].parent.map(|p| self.nodes[p].id.clone())
    }

    /// The tip of the active branch, given the session's newest switch: the switch's tip when no
    /// entry was appended since, else the newest entry.
    pub(crate) fn tip(&self, switch: Option<&Switch>) -> Result<Option<usize>> {
        match switch {
            Some(s) if s.entries_before >= self.next_seq() => match &s.tip {
                None => Ok(None),
                Some(tip) => self.find(tip).map(Some).ok_or_else(|| Error::CorruptSession {
                    location: format!("panto.branch_events of session {}", self.session),
                    message: format!("the newest branch switch names entry \"{tip}\", which the session does not hold"),
                }),
            },
            _ => Ok(self.nodes.len().checked_sub(1)),
        }
    }

    /// The entries from the first to `tip`, oldest first.
    pub(crate) fn path(&self, tip: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut next = tip;
        while let Some(i) = next {
            path.push(i);
            // Parents are earlier entries (checked when the tree was read), so this ends.
            next = self.nodes[i].parent;
        }
        path.reverse();
        path
    }

    /// What the model sees on `path`: its entries, compactions on it applied.
    pub(crate) fn view(&self, path: &[usize]) -> Result<Vec<ViewEntry>> {
        let mut view = Vec::with_capacity(path.len());
        for &i in path {
            let node = &self.nodes[i];
            let entry = ViewEntry {
                id: node.id.clone(),
                system: node.system,
                seq: node.seq,
            };
            match &node.compaction {
                Some(first_kept) => compact_recorded(&mut view, first_kept.as_deref(), entry).map_err(|message| {
                    Error::CorruptSession {
                        location: entry_location(&self.session, &node.id, node.seq),
                        message,
                    }
                })?,
                None => view.push(entry),
            }
        }
        Ok(view)
    }
}

/// The listing of `path` in session `id` (created at `created`): every message on it folded
/// with [`SessionInfo::record`] at the time it was appended, as every store does. `modified`
/// is left at `created`; the caller sets it.
pub(crate) async fn path_info<C: GenericClient + Sync>(
    client: &C,
    context: &str,
    id: &str,
    tree: &Tree,
    path: &[usize],
    created: DateTime<Utc>,
) -> Result<SessionInfo> {
    let mut info = SessionInfo::new(id, created);
    if path.is_empty() {
        return Ok(info);
    }
    let seqs: Vec<i64> = path.iter().map(|&i| tree.nodes[i].seq).collect();
    let rows = client
        .query(PATH_MESSAGES, &[&id, &seqs])
        .await
        .map_err(|e| pg(context.to_owned(), e))?;
    let by_seq: HashMap<i64, &Row> = rows.iter().map(|r| (r.get(0), r)).collect();
    for &i in path {
        let node = &tree.nodes[i];
        let location = || entry_location(id, &node.id, node.seq);
        let row = by_seq.get(&node.seq).ok_or_else(|| Error::CorruptSession {
            location: location(),
            message: "the entry vanished while the session was read".to_owned(),
        })?;
        let message: Message = parse_message(location, row.get(2))?;
        let wire = wire_from_columns(&location, row.get(3), row.get(4), row.get(5), row.get(6))?;
        info.record(&message, wire.as_ref(), row.get(1));
    }
    info.modified = created;
    Ok(info)
}
