-- panto-store-postgres schema, version 4: indexes for session search.
--
-- Search (SessionStore::search) looks for text in what was said: the text blocks of prompts and
-- answers and, when asked, the strings of tool calls' inputs and the text of tool results. The
-- two functions below extract each from a message, and a trigram index (pg_trgm) over each
-- serves `ilike '%text%'`, so a search reads the few entries that can match, not every row. The
-- store confirms each candidate on the decoded message, so these only have to find a superset.
-- Nothing here rewrites a row.

-- The text blocks of a message, joined by line breaks (NULL when it has none).
create function panto.entry_text(message jsonb) returns text
language sql immutable strict parallel safe as $$
    select string_agg(b ->> 'text', E'\n')
    from jsonb_array_elements(
        case when jsonb_typeof(message -> 'content') = 'array' then message -> 'content' else '[]'::jsonb end) b
    where b ->> 'type' = 'text'
$$;

-- Every string of its tool calls' inputs and the text of its tool results, joined by line
-- breaks (NULL when it has none).
create function panto.entry_tool_text(message jsonb) returns text
language sql immutable strict parallel safe as $$
    select string_agg(v #>> '{}', E'\n')
    from jsonb_array_elements(
        case when jsonb_typeof(message -> 'content') = 'array' then message -> 'content' else '[]'::jsonb end) b
    cross join lateral (
        select jsonb_path_query(b -> 'input', 'strict $.** ? (@.type() == "string")') as v
        where b ->> 'type' = 'tool_use'
        union all
        select jsonb_path_query(b -> 'content', 'lax $[*] ? (@.type == "text").text')
        where b ->> 'type' = 'tool_result'
    ) found
$$;

-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: a role that may create
-- objects in the database may create it. It is used from whichever schema holds it already,
-- else installed into `panto`; where it cannot be, the indexes are left out and search reads
-- every message row.
do $$
declare
    trgm text;
begin
    select n.nspname into trgm
    from pg_extension e join pg_namespace n on n.oid = e.extnamespace
    where e.extname = 'pg_trgm';
    if trgm is null then
        begin
            create extension pg_trgm with schema panto;
        exception when insufficient_privilege or undefined_file then
            -- A role that may not create it, or a server without contrib: search still works,
            -- reading every message row, until an administrator creates the extension and the
            -- indexes (docs/stores.md, "Search").
            raise warning 'pg_trgm is not available (%): panto''s session search will read every message row', sqlerrm;
            return;
        end;
        trgm := 'panto';
    end if;
    execute format(
        'create index entries_text_trgm_idx on panto.entries using gin (panto.entry_text(message) %I.gin_trgm_ops)',
        trgm);
    execute format(
        'create index entries_tool_text_trgm_idx on panto.entries using gin (panto.entry_tool_text(message) %I.gin_trgm_ops)',
        trgm);
end
$$;

-- The rare entry kept as text (`message_raw`, a message jsonb cannot hold) is always a
-- candidate: this finds them without a scan.
create index entries_raw_idx on panto.entries (session_id) where message_raw is not null;
