//! The write side of one session: the state a store keeps while it has the session open and
//! the rows an append writes (written, with other sessions' appends, by `batch.rs`).
//!
//! # Fencing
//! The advisory lock (see `lock.rs`) keeps a second writer out, but it lives on a connection
//! that can die, and with it the lock, while this store still believes it writes. So the
//! session row also carries a *fencing token*: the writer column names the store that opened
//! the session last. Opening a session claims the row; every append updates the row only
//! `where writer = <this store's token>`, in the same statement as its entries. A store that
//! lost its lock to another writer therefore fails its next append with `SessionInUse` instead
//! of interleaving with the other writer.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use panto_core::store::EntryIds;
use panto_core::store::PersistentMessage;
use panto_core::{Error, Message, Result, Role, SessionInfo, ToolDecl};
use tokio_postgres::types::ToSql;
use tokio_postgres::{GenericClient, Statement};

use crate::db::{bigint, invalid, pg, pg_text, preview_text, wire_columns, WireColumns};
use crate::pool::Pool;
use crate::read::info_from_row;
use crate::tools::{canonical_json, ToolHash};
use crate::tree::{last_switch, Tree, TreeReads, NEXT_EVENT};
use crate::view::{compact_at, ViewEntry};

/// What a store knows of a session it has open for writing. Valid only while the store holds
/// the session's lock; dropped (and rebuilt from the database) after any failed append.
#[derive(Debug)]
pub(crate) struct OpenSession {
    /// Whether the session row exists yet.
    pub exists: bool,
    /// The listing info, as the row holds it after the last append.
    pub info: SessionInfo,
    /// The entries the model sees.
    pub view: Vec<ViewEntry>,
    /// The newest entry's id.
    pub last_id: Option<String>,
    /// Every entry id in the session.
    pub ids: HashSet<String>,
    /// Where new entry ids are drawn from.
    pub id_source: EntryIds,
    /// The next entry's position.
    pub next_seq: i64,
    /// The next branch event's position.
    pub next_event: i64,
}

impl OpenSession {
    /// A session that is not stored yet.
    fn new(id: &str) -> OpenSession {
        OpenSession {
            exists: false,
            info: SessionInfo::new(id, crate::db::now()),
            view: Vec::new(),
            last_id: None,
            ids: HashSet::new(),
            id_source: EntryIds::new(),
            next_seq: 0,
            next_event: 0,
        }
    }
}

/// One entry row, as written by an append or an import.
#[derive(Debug)]
pub(crate) struct EntryRow {
    pub seq: i64,
    pub id: String,
    pub parent_id: Option<String>,
    pub ts: DateTime<Utc>,
    pub role: &'static str,
    /// The message as JSON for the jsonb column, or `None` when it goes to `message_raw`.
    pub message: Option<String>,
    pub message_raw: Option<String>,
    pub usage: Option<String>,
    pub wire: (
        Option<&'static str>,
        Option<String>,
        Option<String>,
        Option<&'static str>,
    ),
    pub compaction_first_kept: Option<String>,
    pub compaction_tokens: Option<(i64, i64)>,
    /// `None` when the tools offered are not known (imports).
    pub tool_hashes: Option<Vec<Vec<u8>>>,
}

/// The session row's columns, as written when a session is created.
#[derive(Debug)]
pub(crate) struct NewSession<'a> {
    pub info: &'a SessionInfo,
    pub metadata: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub writer: Option<&'a str>,
}

impl NewSession<'_> {
    /// The working directory of this process, when PostgreSQL text can hold it.
    pub(crate) fn this_cwd() -> Option<String> {
        let cwd = std::env::current_dir().ok()?;
        cwd.to_str().filter(|p| !p.contains('\0')).map(str::to_owned)
    }
}

/// The role column's value.
pub(crate) fn role_str(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    }
}

/// The message columns: JSON for jsonb, or the raw text when jsonb cannot hold it (jsonb
/// refuses `\u0000`; a false alarm on a literal backslash-u only moves the message to the raw
/// column, which round-trips just as exactly).
pub(crate) fn message_columns(context: &str, message: &Message) -> Result<(Option<String>, Option<String>)> {
    let json =
        serde_json::to_string(message).map_err(|e| Error::store(format!("{context}: serialising a message"), e))?;
    Ok(if json.contains("\\u0000") {
        (None, Some(json))
    } else {
        (Some(json), None)
    })
}

/// The metadata bag as jsonb, when it is JSON that jsonb can hold; `None` otherwise (it is
/// still kept verbatim in the text column).
pub(crate) fn metadata_json(metadata: Option<&str>) -> Option<&str> {
    metadata.filter(|m| !m.contains("\\u0000") && serde_json::from_str::<serde::de::IgnoredAny>(m).is_ok())
}

/// Its first nine parameters are the [`Listing::params`], as [`UPDATE_SESSION`]'s.
const INSERT_SESSION: &str = "insert into panto.sessions (id, modified, last_prompt_at, message_count, \
     last_user_message, wire_api_style, wire_base_url, wire_model, wire_reasoning, created, metadata, metadata_json, \
     cwd, writer, forked_from_session, forked_from_entry) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb, $13, $14, $15, $16) \
     on conflict (id) do nothing";

/// Its first nine parameters are the [`Listing::params`], as [`INSERT_SESSION`]'s.
pub(crate) const UPDATE_SESSION: &str =
    "update panto.sessions set modified = $2, last_prompt_at = $3, message_count = $4, \
     last_user_message = $5, wire_api_style = $6, wire_base_url = $7, wire_model = $8, wire_reasoning = $9 \
     where id = $1 and writer = $10";

/// The session's writer column, to tell a session another store claimed from a deleted one.
const WRITER_OF: &str = "select writer from panto.sessions where id = $1";

pub(crate) const INSERT_ENTRY: &str =
    "insert into panto.entries (session_id, seq, id, parent_id, ts, role, message, message_raw, \
     usage, wire_api_style, wire_base_url, wire_model, wire_reasoning, compaction_first_kept, \
     compaction_tokens_before, compaction_tokens_after, tool_hashes) \
     values ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8, $9::text::jsonb, $10, $11, $12, $13, $14, $15, $16, $17)";

const OPEN_SESSION: &str = concat!(
    "select ",
    info_columns!(),
    " from panto.sessions where id = $1 for update"
);

const CLAIM_SESSION: &str = "update panto.sessions set writer = $2 where id = $1";

/// The listing columns of a session row, from its [`SessionInfo`]: what both creating the row
/// and every append's update write.
pub(crate) struct Listing<'a> {
    info: &'a SessionInfo,
    pub count: i64,
    pub preview: Option<String>,
    pub wire: WireColumns<'a>,
}

impl<'a> Listing<'a> {
    /// The columns of `info`; an error names what PostgreSQL cannot hold.
    pub(crate) fn of(context: &str, info: &'a SessionInfo) -> Result<Listing<'a>> {
        Ok(Listing {
            info,
            count: bigint(context, "the message count", info.message_count as u64)?,
            preview: info.last_user_message.as_deref().map(preview_text),
            wire: wire_columns(context, info.wire.as_ref())?,
        })
    }

    /// The parameters `$1` to `$9` of [`INSERT_SESSION`] and [`UPDATE_SESSION`]: the id, the
    /// time modified and of the last prompt, the message count, the prompt's preview and the
    /// provider identity.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.info.id,
            &self.info.modified,
            &self.info.last_prompt_at,
            &self.count,
            &self.preview,
            &self.wire.0,
            &self.wire.1,
            &self.wire.2,
            &self.wire.3,
        ]
    }
}

/// Why session `id`'s row was not written under this store's fencing token: another store
/// claimed it ([`CommitError::Fenced`]) or it was deleted ([`CommitError::Gone`]).
pub(crate) async fn not_written<C: GenericClient + Sync>(client: &C, context: &str, id: &str) -> CommitError {
    match client.query_opt(WRITER_OF, &[&id]).await {
        Ok(Some(_)) => CommitError::Fenced,
        Ok(None) => CommitError::Gone,
        Err(e) => CommitError::Failed(pg(format!("{context}: checking the session's writer"), e)),
    }
}

/// Inserts a new session row; `false` when a row with that id already exists.
pub(crate) async fn insert_session<C: GenericClient + Sync>(
    client: &C,
    context: &str,
    new: &NewSession<'_>,
) -> Result<bool> {
    let info = new.info;
    if let Some(m) = new.metadata {
        pg_text(context, "the conversation metadata", m)?;
    }
    let listing = Listing::of(context, info)?;
    let json = metadata_json(new.metadata);
    let fork_session = info.forked_from.as_ref().map(|f| f.session.as_str());
    let fork_entry = info.forked_from.as_ref().map(|f| f.entry.as_str());
    let mut params = listing.params().to_vec();
    params.extend_from_slice(&[
        &info.created,
        &new.metadata,
        &json,
        &new.cwd,
        &new.writer,
        &fork_session,
        &fork_entry,
    ]);
    let n = client
        .execute(INSERT_SESSION, &params)
        .await
        .map_err(|e| pg(format!("{context}: creating the session row"), e))?;
    Ok(n == 1)
}

/// Inserts entry rows for session `id` with the prepared [`INSERT_ENTRY`] statement, one
/// execution each, on one connection.
pub(crate) async fn insert_entries<C: GenericClient + Sync>(
    client: &C,
    statement: &Statement,
    context: &str,
    id: &str,
    rows: &[EntryRow],
) -> Result<()> {
    for row in rows {
        let (before, after) = row.compaction_tokens.unzip();
        client
            .execute(
                statement,
                &[
                    &id,
                    &row.seq,
                    &row.id,
                    &row.parent_id,
                    &row.ts,
                    &row.role,
                    &row.message,
                    &row.message_raw,
                    &row.usage,
                    &row.wire.0,
                    &row.wire.1,
                    &row.wire.2,
                    &row.wire.3,
                    &row.compaction_first_kept,
                    &before,
                    &after,
                    &row.tool_hashes,
                ],
            )
            .await
            .map_err(|e| {
                pg(
                    format!("{context}: inserting entry {} (position {})", row.id, row.seq),
                    e,
                )
            })?;
    }
    Ok(())
}

/// Opens session `id` for writing: claims its row for `token` (if it exists) and rebuilds the
/// view, ids and position from its entries. The caller holds the session's lock; `stored` is
/// whether the session was stored when the lock was taken, if the caller just took it (see
/// [`Locker::try_lock`](crate::lock::Locker::try_lock)); otherwise the reads below find out.
pub(crate) async fn open(pool: &Pool, id: &str, token: &str, stored: Option<bool>) -> Result<OpenSession> {
    // A new session (most sessions a service opens) costs nothing more: nothing to claim or
    // read. One created meanwhile by another writer makes the first append's insert find it,
    // and fail as fenced.
    if stored == Some(false) {
        return Ok(OpenSession::new(id));
    }
    let context = format!("opening session {id} for writing");
    let mut conn = pool.get().await?;
    let reads = TreeReads::prepare(&mut conn, &context).await?;
    let prepare_failed = |e| pg(context.clone(), e);
    let open_session = conn.statement(OPEN_SESSION).await.map_err(prepare_failed)?;
    let claim = conn.statement(CLAIM_SESSION).await.map_err(prepare_failed)?;
    let next_event = conn.statement(NEXT_EVENT).await.map_err(prepare_failed)?;
    let txn = conn.client.transaction().await.map_err(|e| pg(context.clone(), e))?;
    // Sent together, run in this order: the row is locked (`for update`) and claimed before the
    // entries are read. For a row deleted since, the claim and the reads find nothing.
    let by_id: [&(dyn ToSql + Sync); 1] = [&id];
    let claim_params: [&(dyn ToSql + Sync); 2] = [&id, &token];
    let (row, claimed, tree, switch, next_event) = tokio::join!(
        txn.query_opt(&open_session, &by_id),
        txn.execute(&claim, &claim_params),
        Tree::read(&txn, &reads, &context, id),
        last_switch(&txn, &reads, &context, id),
        txn.query_one(&next_event, &by_id),
    );
    let Some(row) = row.map_err(|e| pg(context.clone(), e))? else {
        // Not stored, or deleted since.
        txn.commit().await.map_err(|e| pg(context.clone(), e))?;
        return Ok(OpenSession::new(id));
    };
    let info = info_from_row(&row)?;
    claimed.map_err(|e| pg(context.clone(), e))?;
    let (tree, switch) = (tree?, switch?);
    let next_event: i64 = next_event.map_err(|e| pg(context.clone(), e))?.get(0);
    txn.commit().await.map_err(|e| pg(context.clone(), e))?;
    let tip = tree.tip(switch.as_ref())?;
    Ok(OpenSession {
        exists: true,
        info,
        view: tree.view(&tree.path(tip))?,
        next_seq: tree.next_seq(),
        last_id: tip.map(|i| tree.nodes[i].id.clone()),
        ids: tree.ids(),
        id_source: EntryIds::new(),
        next_event,
    })
}

/// A batch, staged: the rows to write and the tools to record.
#[derive(Debug)]
pub(crate) struct Staged<'a> {
    pub rows: Vec<EntryRow>,
    /// Every distinct tool offered in the batch, by address (sorted, so that concurrent appends
    /// insert shared tools in the same order and cannot deadlock).
    pub tools: BTreeMap<ToolHash, &'a ToolDecl>,
    /// The conversation metadata, for a session's first append.
    pub metadata: Option<&'a str>,
}

impl Staged<'_> {
    /// The bytes the batch writes besides ids and tools: its messages' and usages' JSON
    /// (the `panto.store.bytes` of its span).
    pub(crate) fn bytes(&self) -> usize {
        self.rows
            .iter()
            .map(|row| {
                row.message.as_ref().or(row.message_raw.as_ref()).map_or(0, String::len)
                    + row.usage.as_ref().map_or(0, String::len)
            })
            .sum()
    }
}

/// Stages `messages` onto `open`: mints entry ids, applies compactions to the view and folds
/// the listing info, exactly as the file store does. Mutates `open`; the caller discards it if
/// the batch does not commit.
pub(crate) fn stage<'a>(
    open: &mut OpenSession,
    context: &str,
    messages: &[PersistentMessage<'a>],
    now: DateTime<Utc>,
) -> Result<Staged<'a>> {
    if !open.exists {
        open.info = SessionInfo::new(open.info.id.clone(), now);
    }
    let mut rows = Vec::with_capacity(messages.len());
    let mut tools = BTreeMap::new();
    let mut last_tools: Option<(&[ToolDecl], Vec<Vec<u8>>)> = None;
    for m in messages {
        let id = open.id_source.next_unused(|id| open.ids.contains(id));
        let seq = open.next_seq;
        let entry = ViewEntry {
            id: id.clone(),
            system: m.message.role == Role::System,
            seq,
        };
        let (compaction_first_kept, compaction_tokens) = match m.compaction {
            Some(c) => {
                let tokens = (
                    bigint(context, "the compaction's tokens_before", c.tokens_before)?,
                    bigint(context, "the compaction's tokens_after", c.tokens_after)?,
                );
                (compact_at(&mut open.view, c.first_kept, entry), Some(tokens))
            }
            None => {
                open.view.push(entry);
                (None, None)
            }
        };
        // The agent hands every message of a batch the same tools, so they are hashed once.
        let hashes = match &last_tools {
            Some((slice, hashes)) if std::ptr::eq(*slice, m.tools_available) => hashes.clone(),
            _ => {
                let mut hashes = Vec::with_capacity(m.tools_available.len());
                for tool in m.tools_available {
                    let hash = ToolHash::of(tool);
                    hashes.push(hash.0.to_vec());
                    tools.entry(hash).or_insert(tool);
                }
                last_tools = Some((m.tools_available, hashes.clone()));
                hashes
            }
        };
        let (message, message_raw) = message_columns(context, m.message)?;
        let usage = m
            .usage
            .map(|u| serde_json::to_string(&u))
            .transpose()
            .map_err(|e| Error::store(format!("{context}: serialising usage"), e))?;
        let (a, b, c, d) = wire_columns(context, m.wire)?;
        rows.push(EntryRow {
            seq,
            id: id.clone(),
            parent_id: open.last_id.clone(),
            ts: now,
            role: role_str(m.message.role),
            message,
            message_raw,
            usage,
            wire: (a, b.map(str::to_owned), c.map(str::to_owned), d),
            compaction_first_kept,
            compaction_tokens,
            tool_hashes: Some(hashes),
        });
        open.info.record(m.message, m.wire, now);
        open.ids.insert(id.clone());
        open.last_id = Some(id);
        open.next_seq += 1;
    }
    for tool in tools.values() {
        pg_text(context, &format!("the name of tool {:?}", tool.name), &tool.name)?;
        pg_text(
            context,
            &format!("the description of tool {:?}", tool.name),
            &tool.description,
        )?;
        if canonical_json(&tool.input_schema).contains("\\u0000") {
            return Err(invalid(
                context,
                format!(
                    "the input schema of tool {:?} contains a NUL character (U+0000), which PostgreSQL jsonb cannot store",
                    tool.name
                ),
            ));
        }
    }
    let metadata = messages.first().and_then(|m| m.conversation.metadata.as_deref());
    Ok(Staged { rows, tools, metadata })
}

/// Why an append's transaction did not commit.
#[derive(Debug)]
pub(crate) enum CommitError {
    /// Another store claimed the session: this store's lock was lost.
    Fenced,
    /// The session row is gone: deleted while this store had it open.
    Gone,
    /// Anything else.
    Failed(Error),
}

impl From<Error> for CommitError {
    fn from(e: Error) -> Self {
        CommitError::Failed(e)
    }
}

/// Updates the listing columns of the session row to `info`, under the fencing token:
/// [`CommitError::Fenced`] when another store claimed the session, [`CommitError::Gone`] when
/// the row was deleted.
pub(crate) async fn update_row<C: GenericClient + Sync>(
    txn: &C,
    context: &str,
    update: &Statement,
    info: &SessionInfo,
    token: &str,
) -> Result<(), CommitError> {
    let listing = Listing::of(context, info)?;
    let mut params = listing.params().to_vec();
    params.push(&token);
    let n = txn
        .execute(update, &params)
        .await
        .map_err(|e| CommitError::Failed(pg(format!("{context}: updating the session row"), e)))?;
    if n == 0 {
        return Err(not_written(txn, context, &info.id).await);
    }
    Ok(())
}
