//! Group commit: the appends of many sessions written by one statement.
//!
//! A statement's fixed cost (its round trip, executor start-up, the commit and its WAL flush)
//! is most of what a one-message append costs the server: about 0.3 ms of a 2-core machine's
//! CPU, where the same statement carrying ten sessions' appends costs about 0.08 ms a session.
//! A service with a thousand agents appends a few thousand times a second, so that fixed cost is
//! what its database spends. Every append is therefore handed to one task per store (the
//! *batcher*), which writes whatever appends are waiting as one statement (`append_sql.rs`),
//! with at most a few such statements in flight. A lone append is written at once; appends that
//! arrive while statements are in flight wait for a free one and go together. The busier the
//! database, the bigger the batches, and the cheaper each append.
//!
//! Each append keeps its own outcome: a session another store claimed is left out by the
//! statement and only its append fails, and a statement that fails as a whole (a session whose
//! entries the database refuses) is retried one session at a time, so that only the appends at
//! fault fail. An append's session stays locked for writing (its slot) until its outcome is known,
//! even when the caller has stopped waiting, so the session's next append never races it.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_postgres::types::ToSql;

use crate::append_sql::APPEND;
use crate::db::{pg, pg_text};
use crate::pool::Pool;
use crate::store::SlotGuard;
use crate::tools::{canonical_json, ToolHash};
use crate::writer::{metadata_json, not_written, CommitError, EntryRow, Listing, NewSession, OpenSession, Staged};

/// The most sessions one statement writes.
const MAX_BATCH: usize = 64;

/// What the batcher hands back: the session's slot, and how its append ended.
type Outcome = (SlotGuard, Result<(), CommitError>);

/// One session's append, owned, ready to be written with others.
#[derive(Debug)]
pub(crate) struct Append {
    /// Names the append in errors ("appending to session …").
    context: String,
    id: String,
    /// Whether the session row is created (else updated under the fencing token).
    new: bool,
    created: DateTime<Utc>,
    modified: DateTime<Utc>,
    last_prompt_at: Option<DateTime<Utc>>,
    message_count: i64,
    preview: Option<String>,
    wire: (
        Option<&'static str>,
        Option<String>,
        Option<String>,
        Option<&'static str>,
    ),
    metadata: Option<String>,
    metadata_json: Option<String>,
    cwd: Option<String>,
    rows: Vec<EntryRow>,
    /// The tools of the batch this store has not seen stored: hash, name, description, schema.
    tools: Vec<(ToolHash, String, String, String)>,
}

impl Append {
    /// The append of `staged` onto `open` (the state after staging); tools for which `known`
    /// says the store has seen them committed are not sent again. An error names a value
    /// PostgreSQL cannot hold.
    pub(crate) fn new(
        context: String,
        open: &OpenSession,
        staged: Staged<'_>,
        known: impl Fn(&ToolHash) -> bool,
    ) -> panto_core::Result<Append> {
        let info = &open.info;
        if let Some(m) = staged.metadata {
            pg_text(&context, "the conversation metadata", m)?;
        }
        let Listing {
            count, preview, wire, ..
        } = Listing::of(&context, info)?;
        let (style, url, model, reasoning) = wire;
        let new = !open.exists;
        Ok(Append {
            id: info.id.clone(),
            new,
            created: info.created,
            modified: info.modified,
            last_prompt_at: info.last_prompt_at,
            message_count: count,
            preview,
            wire: (style, url.map(str::to_owned), model.map(str::to_owned), reasoning),
            metadata: staged.metadata.filter(|_| new).map(str::to_owned),
            metadata_json: metadata_json(staged.metadata).filter(|_| new).map(str::to_owned),
            cwd: if new { NewSession::this_cwd() } else { None },
            rows: staged.rows,
            tools: staged
                .tools
                .iter()
                .filter(|(hash, _)| !known(hash))
                .map(|(hash, tool)| {
                    (
                        *hash,
                        tool.name.clone(),
                        tool.description.clone(),
                        canonical_json(&tool.input_schema),
                    )
                })
                .collect(),
            context,
        })
    }
}

/// A queued append, with the slot it holds and where its outcome goes.
#[derive(Debug)]
struct Job {
    append: Append,
    slot: SlotGuard,
    reply: oneshot::Sender<Outcome>,
}

/// The handle appends are submitted through; the batcher task ends when it is dropped.
#[derive(Debug)]
pub(crate) struct Batcher {
    queue: mpsc::UnboundedSender<Job>,
}

impl Batcher {
    /// Starts the batcher on the current Tokio runtime: it writes with connections of `pool`,
    /// under the fencing token `token`, at most `in_flight` statements at a time.
    pub(crate) fn start(pool: Arc<Pool>, token: String, in_flight: usize) -> Batcher {
        let (queue, jobs) = mpsc::unbounded_channel();
        tokio::spawn(run(
            jobs,
            pool,
            Arc::from(token),
            Arc::new(Semaphore::new(in_flight.max(1))),
        ));
        Batcher { queue }
    }

    /// Writes `append`, with others waiting, and returns `slot` with the outcome. `slot` stays
    /// held until the outcome is known, even if this future is dropped first. An error without
    /// the slot when the batcher's task was dropped with the job (its runtime shut down).
    pub(crate) async fn write(&self, append: Append, slot: SlotGuard) -> panto_core::Result<Outcome> {
        let (reply, outcome) = oneshot::channel();
        let context = append.context.clone();
        if let Err(mpsc::error::SendError(job)) = self.queue.send(Job { append, slot, reply }) {
            return Ok((job.slot, Err(CommitError::Failed(stopped(&context)))));
        }
        outcome.await.map_err(|_| stopped(&context))
    }
}

/// The error of an append the batcher cannot take or answer: its task ended with the runtime
/// it ran on. Whether a job it held was written is then unknown.
fn stopped(context: &str) -> panto_core::Error {
    panto_core::Error::store(
        format!("{context}: writing the batch"),
        std::io::Error::other("the store's writer task has stopped (its Tokio runtime shut down)"),
    )
}

/// The batcher: takes the appends waiting whenever a statement may start.
async fn run(mut jobs: mpsc::UnboundedReceiver<Job>, pool: Arc<Pool>, token: Arc<str>, in_flight: Arc<Semaphore>) {
    while let Some(first) = jobs.recv().await {
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        tokio::spawn(write_batch(pool.clone(), token.clone(), batch, permit));
    }
}

/// Writes `batch` and answers each job. When the statement fails as a whole, the appends are
/// written again one at a time, so that only those at fault fail.
async fn write_batch(pool: Arc<Pool>, token: Arc<str>, batch: Vec<Job>, _permit: OwnedSemaphorePermit) {
    let appends: Vec<&Append> = batch.iter().map(|job| &job.append).collect();
    let outcomes = match write(&pool, &token, &appends).await {
        Ok(outcomes) => outcomes,
        Err(e) if appends.len() == 1 => vec![Err(e)],
        Err(_) => {
            let mut outcomes = Vec::with_capacity(appends.len());
            for append in &appends {
                outcomes.push(match write(&pool, &token, &[append]).await {
                    Ok(one) => one
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| unreachable!("`write` answers every append")),
                    Err(e) => Err(e),
                });
            }
            outcomes
        }
    };
    drop(appends);
    for (job, outcome) in batch.into_iter().zip(outcomes) {
        // A caller that stopped waiting drops its outcome; its slot is released here.
        let _ = job.reply.send((job.slot, outcome));
    }
}

/// Writes `appends` with one statement: each append's outcome, in order, or the statement's
/// error (named after the first append when it is the only one).
async fn write(pool: &Pool, token: &str, appends: &[&Append]) -> Result<Vec<Result<(), CommitError>>, CommitError> {
    let context = match appends {
        [one] => one.context.clone(),
        _ => format!("appending to {} sessions", appends.len()),
    };
    let failed = |what: &str, e| CommitError::Failed(pg(format!("{context}: {what}"), e));
    let mut conn = pool.get().await?;
    let statement = conn.statement(APPEND).await.map_err(|e| failed("preparing", e))?;

    // The sessions.
    let ids: Vec<&str> = appends.iter().map(|a| a.id.as_str()).collect();
    let created: Vec<DateTime<Utc>> = appends.iter().map(|a| a.created).collect();
    let modified: Vec<DateTime<Utc>> = appends.iter().map(|a| a.modified).collect();
    let prompted: Vec<Option<DateTime<Utc>>> = appends.iter().map(|a| a.last_prompt_at).collect();
    let counts: Vec<i64> = appends.iter().map(|a| a.message_count).collect();
    let previews: Vec<Option<&str>> = appends.iter().map(|a| a.preview.as_deref()).collect();
    let styles: Vec<Option<&str>> = appends.iter().map(|a| a.wire.0).collect();
    let urls: Vec<Option<&str>> = appends.iter().map(|a| a.wire.1.as_deref()).collect();
    let models: Vec<Option<&str>> = appends.iter().map(|a| a.wire.2.as_deref()).collect();
    let efforts: Vec<Option<&str>> = appends.iter().map(|a| a.wire.3).collect();
    let metadata: Vec<Option<&str>> = appends.iter().map(|a| a.metadata.as_deref()).collect();
    let metadata_json: Vec<Option<&str>> = appends.iter().map(|a| a.metadata_json.as_deref()).collect();
    let cwds: Vec<Option<&str>> = appends.iter().map(|a| a.cwd.as_deref()).collect();
    let new: Vec<bool> = appends.iter().map(|a| a.new).collect();

    // The tools, each once, sorted by hash so that concurrent statements inserting the same new
    // tools take their locks in one order and cannot deadlock.
    let tools: BTreeMap<&ToolHash, &(ToolHash, String, String, String)> =
        appends.iter().flat_map(|a| &a.tools).map(|t| (&t.0, t)).collect();
    let hashes: Vec<&[u8]> = tools.keys().map(|h| h.0.as_slice()).collect();
    let names: Vec<&str> = tools.values().map(|t| t.1.as_str()).collect();
    let descriptions: Vec<&str> = tools.values().map(|t| t.2.as_str()).collect();
    let schemas: Vec<&str> = tools.values().map(|t| t.3.as_str()).collect();

    // The entries.
    let rows = || {
        appends
            .iter()
            .flat_map(|a| a.rows.iter().map(move |r| (a.id.as_str(), r)))
    };
    let sessions: Vec<&str> = rows().map(|(id, _)| id).collect();
    let times: Vec<DateTime<Utc>> = rows().map(|(_, r)| r.ts).collect();
    let seqs: Vec<i64> = rows().map(|(_, r)| r.seq).collect();
    let entry_ids: Vec<&str> = rows().map(|(_, r)| r.id.as_str()).collect();
    let parents: Vec<Option<&str>> = rows().map(|(_, r)| r.parent_id.as_deref()).collect();
    let roles: Vec<&str> = rows().map(|(_, r)| r.role).collect();
    let messages: Vec<Option<&str>> = rows().map(|(_, r)| r.message.as_deref()).collect();
    let raws: Vec<Option<&str>> = rows().map(|(_, r)| r.message_raw.as_deref()).collect();
    let usages: Vec<Option<&str>> = rows().map(|(_, r)| r.usage.as_deref()).collect();
    let row_styles: Vec<Option<&str>> = rows().map(|(_, r)| r.wire.0).collect();
    let row_urls: Vec<Option<&str>> = rows().map(|(_, r)| r.wire.1.as_deref()).collect();
    let row_models: Vec<Option<&str>> = rows().map(|(_, r)| r.wire.2.as_deref()).collect();
    let row_efforts: Vec<Option<&str>> = rows().map(|(_, r)| r.wire.3).collect();
    let kept: Vec<Option<&str>> = rows().map(|(_, r)| r.compaction_first_kept.as_deref()).collect();
    let before: Vec<Option<i64>> = rows().map(|(_, r)| r.compaction_tokens.map(|t| t.0)).collect();
    let after: Vec<Option<i64>> = rows().map(|(_, r)| r.compaction_tokens.map(|t| t.1)).collect();
    let offered: Vec<Vec<u8>> = rows()
        .map(|(_, r)| r.tool_hashes.iter().flatten().flatten().copied().collect())
        .collect();

    let params: [&(dyn ToSql + Sync); 36] = [
        &token,
        &ids,
        &created,
        &modified,
        &prompted,
        &counts,
        &previews,
        &styles,
        &urls,
        &models,
        &efforts,
        &metadata,
        &metadata_json,
        &cwds,
        &new,
        &hashes,
        &names,
        &descriptions,
        &schemas,
        &sessions,
        &times,
        &seqs,
        &entry_ids,
        &parents,
        &roles,
        &messages,
        &raws,
        &usages,
        &row_styles,
        &row_urls,
        &row_models,
        &row_efforts,
        &kept,
        &before,
        &after,
        &offered,
    ];
    let rows_written = conn
        .client
        .query(&statement, &params)
        .await
        .map_err(|e| failed("writing the batch", e))?;
    let written: HashSet<&str> = rows_written.iter().map(|row| row.get::<_, &str>(0)).collect();

    // The entries are written exactly when their session's row is (see `append_sql.rs`), so a
    // session the statement returns has its whole append stored.
    let mut outcomes = Vec::with_capacity(appends.len());
    for append in appends {
        outcomes.push(if written.contains(append.id.as_str()) {
            Ok(())
        } else if append.new {
            // Someone created the session while this store believed it held the lock.
            Err(CommitError::Fenced)
        } else {
            // Not ours any more: taken over or deleted.
            Err(not_written(&conn.client, &append.context, &append.id).await)
        });
    }
    Ok(outcomes)
}
