-- panto-store-postgres schema, version 2: the session tree (branches, forks, file checkpoints).
--
-- Committed rows are still never rewritten: a branch switch and a file change are rows appended
-- to panto.branch_events, and only the session row (the listing's cache, as in version 1) is
-- updated. A session written at version 1 has no branch events, so its tip is its newest entry
-- and it loads exactly as before; nothing here rewrites it.

-- Where a forked session came from: the session and the entry its history ends at, both or
-- neither. No foreign key: a fork outlives the session it came from.
alter table panto.sessions
    add column forked_from_session text collate "C",
    add column forked_from_entry   text collate "C",
    add constraint sessions_forked_from_check
        check ((forked_from_session is null) = (forked_from_entry is null));

-- Every branch switch and every recorded file change of a session, in order.
--
-- The tip of the active branch is the `tip` of the newest switch (a row without
-- checkpoint_path) when no entry was appended since (`entries_before` is the session's entry
-- count), else the newest entry. A file change belongs to the tip it was recorded at (`tip`)
-- and does not move it.
create table panto.branch_events (
    session_id         text collate "C" not null references panto.sessions (id) on delete cascade,
    -- 0-based position among the session's branch events.
    seq                bigint not null check (seq >= 0),
    -- How many entries the session held when the event was recorded (for a file change a fork
    -- copied: how many the fork holds).
    entries_before     bigint not null check (entries_before >= 0),
    ts                 timestamptz not null,
    -- A switch: the entry that becomes the tip. A file change: the tip it belongs to. NULL: the
    -- empty start before the first entry.
    tip                text collate "C",
    -- Set on a file change: the file (an absolute path), the content addresses (SHA-256, hex)
    -- of its content before and after (NULL: no file), and whether it was a rewind's restore.
    checkpoint_path    text check (checkpoint_path like '/%'),
    checkpoint_before  text collate "C" check (checkpoint_before ~ '^[0-9a-f]{64}$'),
    checkpoint_after   text collate "C" check (checkpoint_after ~ '^[0-9a-f]{64}$'),
    checkpoint_restore boolean,
    primary key (session_id, seq),
    foreign key (session_id, tip) references panto.entries (session_id, id),
    check ((checkpoint_path is null) = (checkpoint_restore is null)),
    check (checkpoint_path is not null or (checkpoint_before is null and checkpoint_after is null))
);

-- The newest switch of a session is one probe, however many file changes followed it.
create index branch_events_switch_idx
    on panto.branch_events (session_id, seq desc) where checkpoint_path is null;

-- File checkpoints (the previous content of files tools changed), content-addressed: one row
-- per distinct content, however many sessions (and forks) keep it.
create table panto.checkpoint_blobs (
    -- SHA-256 of the content, 64 lowercase hex digits (panto_core::store::checkpoint_address).
    address text collate "C" primary key check (address ~ '^[0-9a-f]{64}$'),
    content bytea not null
);

-- Which checkpoints each session keeps: a session reads only its own. No foreign key to
-- panto.sessions: a tool keeps a checkpoint before the session's first append.
create table panto.session_checkpoints (
    session_id text collate "C" not null,
    address    text collate "C" not null references panto.checkpoint_blobs (address),
    primary key (session_id, address)
);
