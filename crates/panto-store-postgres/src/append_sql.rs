//! The statement an append is: one round trip that writes the appends of one or more sessions
//! (a group commit: see `batch.rs`). Each session's row (created, or updated under the fencing
//! token), the tools not yet stored and the entries are written by one statement of
//! data-modifying CTEs, atomic as a statement is; a session's entries only when its row was
//! written, so a session another store claimed gets nothing written, and the statement returns
//! the ids of the sessions it wrote.
//!
//! Every parameter is an array (one element per session, per tool or per entry), so the
//! statement is prepared once per connection whatever the batch holds.

/// The statement. Parameters:
///
/// - `$1`: the fencing token of the writing store;
/// - `$2`..`$15`, one element per session: id, created, modified, last prompt, message count,
///   last prompt's preview, the four wire columns, metadata (verbatim and as jsonb text),
///   working directory, and whether the row is new (created) or exists (updated under `$1`);
/// - `$16`..`$19`, one element per tool not yet stored: hash, name, description, schema;
/// - `$20`..`$36`, one element per entry: session id, time, position, id, parent, role,
///   message (jsonb text, or raw text), usage, the four wire columns, the compaction's first
///   kept entry and token counts, and its tool hashes concatenated (32 bytes each).
pub(crate) const APPEND: &str = "with batch as ( \
     select * from unnest($2::text[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[], $6::bigint[], \
     $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::bool[]) \
     as u(id, created, modified, last_prompt_at, message_count, preview, api_style, base_url, model, reasoning, \
     metadata, metadata_json, cwd, new)), \
     updated as ( \
     update panto.sessions s set modified = u.modified, last_prompt_at = u.last_prompt_at, \
     message_count = u.message_count, last_user_message = u.preview, wire_api_style = u.api_style, \
     wire_base_url = u.base_url, wire_model = u.model, wire_reasoning = u.reasoning \
     from batch u where not u.new and s.id = u.id and s.writer = $1 returning s.id), \
     created as ( \
     insert into panto.sessions (id, created, modified, last_prompt_at, message_count, \
     last_user_message, wire_api_style, wire_base_url, wire_model, wire_reasoning, metadata, metadata_json, cwd, writer) \
     select u.id, u.created, u.modified, u.last_prompt_at, u.message_count, u.preview, u.api_style, u.base_url, \
     u.model, u.reasoning, u.metadata, u.metadata_json::jsonb, u.cwd, $1 from batch u where u.new order by u.id \
     on conflict (id) do nothing returning id), \
     session as (select id from updated union all select id from created), \
     tools as ( \
     insert into panto.tools (hash, name, description, schema) \
     select h, n, d, s::jsonb from unnest($16::bytea[], $17::text[], $18::text[], $19::text[]) as t(h, n, d, s) \
     where exists (select 1 from session) order by h \
     on conflict (hash) do nothing), \
     entries as ( \
     insert into panto.entries (session_id, seq, id, parent_id, ts, role, message, message_raw, usage, \
     wire_api_style, wire_base_url, wire_model, wire_reasoning, compaction_first_kept, \
     compaction_tokens_before, compaction_tokens_after, tool_hashes) \
     select r.session_id, r.seq, r.id, r.parent_id, r.ts, r.role, r.message::jsonb, \
     r.message_raw, r.usage::jsonb, r.api_style, r.base_url, r.model, r.reasoning, r.first_kept, \
     r.tokens_before, r.tokens_after, \
     array(select substring(r.tools from i * 32 + 1 for 32) \
           from generate_series(0, length(r.tools) / 32 - 1) as i order by i) \
     from unnest($20::text[], $21::timestamptz[], $22::bigint[], $23::text[], $24::text[], $25::text[], \
     $26::text[], $27::text[], $28::text[], $29::text[], $30::text[], $31::text[], $32::text[], $33::text[], \
     $34::bigint[], $35::bigint[], $36::bytea[]) \
     as r(session_id, ts, seq, id, parent_id, role, message, message_raw, usage, api_style, base_url, model, \
     reasoning, first_kept, tokens_before, tokens_after, tools) \
     where r.session_id in (select id from session)) \
     select id from session";
