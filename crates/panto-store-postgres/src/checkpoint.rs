//! File checkpoints: the previous content of files tools changed, content-addressed in
//! `panto.checkpoint_blobs` (one row per distinct content, whatever the session) and reachable
//! from a session through `panto.session_checkpoints`, so a session reads only what it kept (or
//! what the session it was forked from kept on the forked path).

use panto_core::store::{checkpoint_address, validate_checkpoint_address};
use panto_core::{Error, Result};

use crate::db::pg;
use crate::pool::Pool;

/// Stores the content once (a content already stored keeps its row) and lets the session read
/// it, in one statement: it is durable when the statement returns. A row already there is
/// locked (`do update ... where false` locks it and writes nothing), so a session being deleted
/// at the same time, whose trigger would remove a blob no other session keeps yet, skips this
/// one (migrations/0003); and if that delete locked it first, this waits for it and then stores
/// the content anew.
pub(crate) const PUT: &str = "with blob as ( \
         insert into panto.checkpoint_blobs (address, content) values ($2, $3) \
         on conflict (address) do update set content = excluded.content where false) \
     insert into panto.session_checkpoints (session_id, address) values ($1, $2) on conflict do nothing";

const GET: &str = "select b.content from panto.session_checkpoints s \
     join panto.checkpoint_blobs b on b.address = s.address where s.session_id = $1 and s.address = $2";

/// Keeps `content` for session `id`; returns its address.
pub(crate) async fn put(pool: &Pool, id: &str, content: &[u8]) -> Result<String> {
    let address = checkpoint_address(content);
    let conn = pool.get().await?;
    conn.client
        .execute(PUT, &[&id, &address, &content])
        .await
        .map_err(|e| pg(format!("keeping a file checkpoint of session {id}"), e))?;
    Ok(address)
}

/// The content session `id` keeps under `address`, checked against the address.
pub(crate) async fn get(pool: &Pool, id: &str, address: &str) -> Result<Option<Vec<u8>>> {
    validate_checkpoint_address(address)?;
    let conn = pool.get().await?;
    let row = conn
        .client
        .query_opt(GET, &[&id, &address])
        .await
        .map_err(|e| pg(format!("reading file checkpoint {address} of session {id}"), e))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let content: Vec<u8> = row.get(0);
    if checkpoint_address(&content) != address {
        return Err(Error::CorruptSession {
            location: format!("panto.checkpoint_blobs address {address}"),
            message: "the checkpoint's bytes do not match its address (the row was changed or damaged)".to_owned(),
        });
    }
    Ok(Some(content))
}
