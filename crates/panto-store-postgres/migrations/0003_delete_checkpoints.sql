-- panto-store-postgres schema, version 3: deleting a session deletes its file checkpoints.
--
-- panto.session_checkpoints has no foreign key to panto.sessions (a tool keeps a checkpoint
-- before the session's first append), so `delete from panto.sessions` left the session's
-- checkpoint rows, and the content no session could read any more, behind. This trigger
-- removes them in the deleting transaction: the session's rows of panto.session_checkpoints,
-- then every blob among them that no other session keeps.
--
-- A blob another transaction is about to keep (a put_checkpoint or a fork locks the blob row
-- first, see src/checkpoint.rs) is skipped rather than waited for: it is kept, and the delete
-- never fails on it.

create function panto.forget_deleted_sessions_checkpoints() returns trigger
language plpgsql as $$
declare
    released text[];
begin
    with forgotten as (
        delete from panto.session_checkpoints s
        using deleted_sessions d
        where s.session_id = d.id
        returning s.address
    )
    select array_agg(distinct address) into released from forgotten;
    if released is null then
        return null;
    end if;
    -- A new statement: it sees the rows deleted above as gone.
    delete from panto.checkpoint_blobs b
    where b.address in (
        select c.address from panto.checkpoint_blobs c
        where c.address = any (released)
          and not exists (select 1 from panto.session_checkpoints s where s.address = c.address)
        for update skip locked);
    return null;
end
$$;

-- Once per statement, so deleting many sessions at once is two statements, not two per session.
create trigger sessions_forget_checkpoints
    after delete on panto.sessions
    referencing old table as deleted_sessions
    for each statement
    execute function panto.forget_deleted_sessions_checkpoints();
