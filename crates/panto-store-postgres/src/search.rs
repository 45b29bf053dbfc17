//! Search: the trigram indexes of schema version 4 find the entries that can hold the text, and
//! each is confirmed on its decoded message with the matcher every store shares.
//!
//! A literal text query asks `panto.entry_text(message) ilike '%…%'` (and
//! `panto.entry_tool_text` with `tools`), which `entries_text_trgm_idx` and
//! `entries_tool_text_trgm_idx` serve. The pattern is the longest run of the text whose
//! characters PostgreSQL's `ilike` folds as the matcher does (ASCII, and characters that have no
//! other case); a text of none (a word of cased non-ASCII letters only) and a regular
//! expression (whose syntax PostgreSQL's does not share) read every message row instead.
//! Entries held as text (`message_raw`) are always candidates.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use panto_core::store::{finish_hits, SearchHit, SearchMatcher, SearchQuery};
use panto_core::{Result, Role};
use tokio_postgres::types::ToSql;

use crate::db::pg;
use crate::pool::Pool;
use crate::read::{entry_location, info_from_row, parse_message, snapshot, BY_ID};
use crate::tree::{last_switch, Tree, TreeReads};

/// The columns of a candidate entry.
const CANDIDATE: &str = "select session_id, id, ts, coalesce(message_raw, message::text), seq from panto.entries";

/// The longest run of `text` that `ilike` (or, `case_sensitive`, `like`) matches exactly as the
/// matcher does, escaped as a `like` pattern with `%` around it; `None` when there is none.
fn like_pattern(text: &str, case_sensitive: bool) -> Option<String> {
    let plain = |c: char| {
        case_sensitive
            || c.is_ascii()
            || (c.to_lowercase().eq(std::iter::once(c)) && c.to_uppercase().eq(std::iter::once(c)))
    };
    let run = text
        .split(|c: char| !plain(c))
        .max_by_key(|run| run.chars().count())
        .filter(|run| !run.is_empty())?;
    let mut pattern = String::from("%");
    for c in run.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    Some(pattern)
}

/// The query that reads the candidate entries for `query`, and whether it takes the `like`
/// pattern as `$1`. The directory, when the query keeps to one, is the last parameter.
fn candidates_sql(query: &SearchQuery, pattern: bool) -> String {
    let mut sql = format!("{CANDIDATE} where role <> 'system'");
    if pattern {
        let op = if query.case_sensitive { "like" } else { "ilike" };
        sql.push_str(&format!(" and (panto.entry_text(message) {op} $1"));
        if query.tools {
            sql.push_str(&format!(" or panto.entry_tool_text(message) {op} $1"));
        }
        sql.push_str(" or message_raw is not null)");
    }
    if query.cwd.is_some() {
        let n = if pattern { 2 } else { 1 };
        sql.push_str(&format!(
            " and session_id in (select id from panto.sessions where cwd = ${n})"
        ));
    }
    sql
}

/// The SQL that [`SessionStore::search`](panto_core::SessionStore::search) runs to find the
/// candidate entries for `query`, and the `like` pattern it binds as `$1` (`None`: it reads
/// every message row, for a regular expression or a text without a run `ilike` folds as the
/// matcher does). The directory of a query kept to one is the last parameter. For `EXPLAIN`.
pub fn search_sql(query: &SearchQuery) -> (String, Option<String>) {
    let pattern = if query.regex {
        None
    } else {
        like_pattern(&query.pattern, query.case_sensitive)
    };
    (candidates_sql(query, pattern.is_some()), pattern)
}

/// One confirmed hit before its session is read.
struct Found {
    entry: String,
    role: Role,
    at: DateTime<Utc>,
    seq: i64,
    matched: panto_core::store::MessageMatch,
}

/// The hits for `query` in the store at `pool`.
pub(crate) async fn search(pool: &Pool, query: &SearchQuery) -> Result<Vec<SearchHit>> {
    let matcher: SearchMatcher = query.matcher()?;
    let context = format!("searching the sessions for {:?}", query.pattern);
    let (sql, pattern) = search_sql(query);
    let dir = query.cwd.as_ref().map(|d| d.to_string_lossy().into_owned());
    let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
    if let Some(p) = &pattern {
        params.push(p);
    }
    if let Some(d) = &dir {
        params.push(d);
    }
    let mut conn = pool.get().await?;
    // Sent as text, not a cached statement: each search is planned for its own pattern.
    let rows = conn
        .client
        .query(sql.as_str(), &params)
        .await
        .map_err(|e| pg(context.clone(), e))?;
    let mut confirmed: Vec<(String, Found)> = Vec::new();
    for row in &rows {
        let session: String = row.get(0);
        let entry: String = row.get(1);
        let message = parse_message(|| entry_location(&session, &entry, row.get(4)), row.get(3))?;
        if let Some(matched) = matcher.match_message(&message) {
            let found = Found {
                entry,
                role: message.role,
                at: row.get(2),
                seq: row.get(4),
                matched,
            };
            confirmed.push((session, found));
        }
    }
    // Only the sessions of the hits kept are read further: the newest, in `finish_hits`'s order.
    confirmed.sort_by(|(sa, a), (sb, b)| b.at.cmp(&a.at).then_with(|| sb.cmp(sa)).then_with(|| b.seq.cmp(&a.seq)));
    if let Some(limit) = query.limit {
        confirmed.truncate(limit);
    }
    let mut by_session: BTreeMap<String, Vec<Found>> = BTreeMap::new();
    for (session, found) in confirmed {
        by_session.entry(session).or_default().push(found);
    }
    let mut hits = Vec::new();
    if by_session.is_empty() {
        return Ok(hits);
    }
    let reads = TreeReads::prepare(&mut conn, &context).await?;
    let by_id = conn.statement(BY_ID).await.map_err(|e| pg(context.clone(), e))?;
    for (session, found) in by_session {
        let txn = snapshot(&mut conn.client, &context).await?;
        let Some(row) = txn
            .query_opt(&by_id, &[&session])
            .await
            .map_err(|e| pg(context.clone(), e))?
        else {
            continue;
        };
        let info = info_from_row(&row)?;
        let tree = Tree::read(&txn, &reads, &context, &session).await?;
        let switch = last_switch(&txn, &reads, &context, &session).await?;
        txn.commit().await.map_err(|e| pg(context.clone(), e))?;
        let active: HashSet<&str> = tree
            .path(tree.tip(switch.as_ref())?)
            .into_iter()
            .map(|i| tree.nodes[i].id.as_str())
            .collect();
        // Newest entry first within the session (the order `confirmed` was sorted in).
        for f in found {
            let on_active = active.contains(f.entry.as_str());
            hits.push(SearchHit::new(
                info.clone(),
                f.entry,
                f.role,
                on_active,
                f.at,
                f.matched,
            ));
        }
    }
    finish_hits(&mut hits, query.limit);
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_like_pattern_is_the_longest_run_ilike_folds_as_the_matcher_does() {
        assert_eq!(like_pattern("100%_a\\b", false).as_deref(), Some("%100\\%\\_a\\\\b%"));
        assert_eq!(like_pattern("Éléphant rose", false).as_deref(), Some("%phant rose%"));
        assert_eq!(like_pattern("ÉÉ", false), None);
        assert_eq!(like_pattern("ÉÉ", true).as_deref(), Some("%ÉÉ%"));
        assert_eq!(like_pattern("日本語", false).as_deref(), Some("%日本語%"), "no case");
    }
}
