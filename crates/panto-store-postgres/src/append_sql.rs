//! The statement an append is: one round trip. The session row (created, or updated under the
//! fencing token), the tools not yet stored and the batch's entries are written by one
//! statement of data-modifying CTEs, atomic as a statement is; the tools and entries only when
//! the session row was written, so a fenced store writes nothing.

use std::sync::OnceLock;

/// The statement's first CTE, `session`, for a session that exists: updates its listing columns
/// under the fencing token and yields its id; nothing when another store claimed it (or it is
/// gone). Parameters `$1`..`$10`.
const UPDATE_HEAD: &str = "with session as ( \
     update panto.sessions set modified = $2, last_prompt_at = $3, message_count = $4, \
     last_user_message = $5, wire_api_style = $6, wire_base_url = $7, wire_model = $8, wire_reasoning = $9 \
     where id = $1 and writer = $10 returning id)";

/// The first CTE for a new session: creates its row, nothing when a row with that id exists.
/// Parameters `$1`..`$14`.
const INSERT_HEAD: &str = "with session as ( \
     insert into panto.sessions (id, created, modified, last_prompt_at, message_count, \
     last_user_message, wire_api_style, wire_base_url, wire_model, wire_reasoning, metadata, metadata_json, cwd, writer) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::text::jsonb, $13, $14) \
     on conflict (id) do nothing returning id)";

/// How many parameters [`tail`] takes.
pub(crate) const TAIL_PARAMS: usize = 20;

/// The rest of the statement, its parameters numbered from `$first + 1`: the tools (hash, name,
/// description, schema arrays), the entries' time, and the entries as parallel arrays (each
/// entry's tool hashes concatenated, 32 bytes each).
fn tail(first: usize) -> String {
    let p = |n: usize| format!("${}", first + n);
    format!(
        ", tools as ( \
         insert into panto.tools (hash, name, description, schema) \
         select h, n, d, s::jsonb from unnest({t1}::bytea[], {t2}::text[], {t3}::text[], {t4}::text[]) as t(h, n, d, s) \
         where exists (select 1 from session) order by h \
         on conflict (hash) do nothing), \
         entries as ( \
         insert into panto.entries (session_id, seq, id, parent_id, ts, role, message, message_raw, usage, \
         wire_api_style, wire_base_url, wire_model, wire_reasoning, compaction_first_kept, \
         compaction_tokens_before, compaction_tokens_after, tool_hashes) \
         select $1, r.seq, r.id, r.parent_id, {ts}::timestamptz, r.role, r.message::jsonb, \
         r.message_raw, r.usage::jsonb, r.api_style, r.base_url, r.model, r.reasoning, r.first_kept, \
         r.tokens_before, r.tokens_after, \
         array(select substring(r.tools from i * 32 + 1 for 32) \
               from generate_series(0, length(r.tools) / 32 - 1) as i order by i) \
         from unnest({e1}::bigint[], {e2}::text[], {e3}::text[], {e4}::text[], {e5}::text[], {e6}::text[], \
         {e7}::text[], {e8}::text[], {e9}::text[], {e10}::text[], {e11}::text[], {e12}::text[], \
         {e13}::bigint[], {e14}::bigint[], {e15}::bytea[]) \
         as r(seq, id, parent_id, role, message, message_raw, usage, api_style, base_url, model, reasoning, \
         first_kept, tokens_before, tokens_after, tools) \
         where exists (select 1 from session) \
         returning 1) \
         select (select count(*) from session), (select count(*) from entries)",
        t1 = p(1),
        t2 = p(2),
        t3 = p(3),
        t4 = p(4),
        ts = p(5),
        e1 = p(6),
        e2 = p(7),
        e3 = p(8),
        e4 = p(9),
        e5 = p(10),
        e6 = p(11),
        e7 = p(12),
        e8 = p(13),
        e9 = p(14),
        e10 = p(15),
        e11 = p(16),
        e12 = p(17),
        e13 = p(18),
        e14 = p(19),
        e15 = p(20),
    )
}

/// The append statement for a session that exists (parameters: [`UPDATE_HEAD`]'s, then the
/// tail's).
pub(crate) fn append_existing() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| format!("{UPDATE_HEAD}{}", tail(10)))
}

/// The append statement for a new session (parameters: [`INSERT_HEAD`]'s, then the tail's).
pub(crate) fn append_new() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| format!("{INSERT_HEAD}{}", tail(14)))
}
