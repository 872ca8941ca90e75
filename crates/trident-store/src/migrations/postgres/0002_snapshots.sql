-- Snapshots move out of `tasks` into a table of their own. A commit that appends events
-- (a streamed artifact chunk, a status update) updates only the small `tasks` row (a new row
-- version without the blob). A snapshot is stored when a task is created, when a change is
-- not described by its events, when the task leaves SUBMITTED/WORKING, and once the events
-- logged after the last one outweigh it; a read applies those events to it.
CREATE TABLE snapshots (
    tenant TEXT COLLATE "C" NOT NULL,
    owner  TEXT COLLATE "C" NOT NULL,
    id     TEXT COLLATE "C" NOT NULL,
    seq    BIGINT NOT NULL, -- the last event the snapshot includes
    body   BYTEA  NOT NULL, -- prost-encoded pb::Task
    PRIMARY KEY (tenant, owner, id)
);
INSERT INTO snapshots (tenant, owner, id, seq, body)
    SELECT tenant, owner, id, last_seq, snapshot FROM tasks;
ALTER TABLE tasks DROP COLUMN snapshot;
