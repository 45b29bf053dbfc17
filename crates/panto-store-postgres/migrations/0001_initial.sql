-- panto-store-postgres schema, version 1.
--
-- Everything lives in the `panto` schema so that a database shared with an application (which
-- may well have its own `sessions` table) is not disturbed. Ids are `collate "C"` so that their
-- order and prefix matching are byte order, as in every other store.

-- One row per session: what a listing shows, kept current by every append, so that `list` and
-- `latest` never read entries.
create table panto.sessions (
    id                text collate "C" primary key,
    created           timestamptz not null,
    -- When the session was last written.
    modified          timestamptz not null,
    -- When a person last prompted (Message::is_human_prompt); recency is this, else `created`.
    last_prompt_at    timestamptz,
    message_count     bigint not null check (message_count >= 0),
    -- The first 200 characters of the last human prompt.
    last_user_message text,
    -- The wire identity of the last non-system message: all four set, or none.
    wire_api_style    text,
    wire_base_url     text,
    wire_model        text,
    wire_reasoning    text,
    -- The conversation's opaque metadata bag, verbatim (what `load` returns), and the same bag
    -- as jsonb for queries when it is valid JSON that jsonb can hold (NULL otherwise).
    metadata          text,
    metadata_json     jsonb,
    -- The working directory of the process that created the session; informational.
    cwd               text,
    -- The fencing token of the store that currently writes this session (see docs/stores.md).
    writer            text,
    check ((wire_api_style is null) = (wire_base_url is null)
       and (wire_api_style is null) = (wire_model is null)
       and (wire_api_style is null) = (wire_reasoning is null))
);

-- Recency order: newest first, ties broken by the newer id. `latest` is one index probe.
create index sessions_recency_idx
    on panto.sessions ((coalesce(last_prompt_at, created)) desc, id desc);

-- Every message ever appended, in order: the full history, compactions included.
create table panto.entries (
    session_id               text collate "C" not null references panto.sessions (id) on delete cascade,
    -- 0-based position in the session's history.
    seq                      bigint not null check (seq >= 0),
    -- 8 lowercase hex digits, unique within the session (the file store's entry ids).
    id                       text collate "C" not null,
    parent_id                text collate "C",
    -- When the batch holding this entry was appended.
    ts                       timestamptz not null,
    role                     text not null check (role in ('user', 'assistant', 'system')),
    -- The panto_core::Message as JSON. `message_raw` holds it instead, as JSON text, in the rare
    -- case jsonb cannot (a U+0000 character in the message).
    message                  jsonb,
    message_raw              text,
    usage                    jsonb,
    wire_api_style           text,
    wire_base_url            text,
    wire_model               text,
    wire_reasoning           text,
    -- Set on the summary message of a compaction: the entry id of the first message kept
    -- verbatim (NULL when nothing was kept), and the estimated context sizes around it.
    compaction_first_kept    text collate "C",
    compaction_tokens_before bigint,
    compaction_tokens_after  bigint,
    -- The tools offered with this message, in order, as content addresses into panto.tools.
    -- NULL when not recorded (sessions imported from the file store); '{}' when none were offered.
    tool_hashes              bytea[],
    primary key (session_id, seq),
    unique (session_id, id),
    check (num_nonnulls(message, message_raw) = 1),
    check ((compaction_tokens_before is null) = (compaction_tokens_after is null)),
    check (compaction_first_kept is null or compaction_tokens_before is not null),
    check ((wire_api_style is null) = (wire_base_url is null)
       and (wire_api_style is null) = (wire_model is null)
       and (wire_api_style is null) = (wire_reasoning is null))
);

-- Content-addressed tool declarations: one row per distinct (name, description, schema), so a
-- full audit trail costs one row per distinct tool, however many entries offered it.
create table panto.tools (
    -- SHA-256 of the canonical encoding of (name, description, schema); see src/tools.rs.
    hash        bytea primary key check (length(hash) = 32),
    name        text not null,
    description text not null,
    schema      jsonb not null,
    first_seen  timestamptz not null default now()
);
