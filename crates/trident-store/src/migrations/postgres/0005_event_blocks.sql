-- The event log in blocks: one row per task per commit, holding every event that commit
-- appended, instead of one row per event. A writer lane's transaction carries the events of
-- many tasks, several of each (a streaming task's chunks committed behind its agent); a row
-- and an index entry per event were most of PostgreSQL's work per streamed event.
--
-- `body` is the block's events in order, each a 4-byte big-endian length and the
-- prost-encoded pb::StreamResponse; they are numbered first_seq..=last_seq. A read after
-- sequence number N takes the blocks whose last_seq > N, in order, and skips what it has.
CREATE TABLE event_blocks (
    tenant    TEXT COLLATE "C" NOT NULL,
    owner     TEXT COLLATE "C" NOT NULL,
    task_id   TEXT COLLATE "C" NOT NULL,
    last_seq  BIGINT NOT NULL,
    first_seq BIGINT NOT NULL,
    body      BYTEA NOT NULL,
    PRIMARY KEY (tenant, owner, task_id, last_seq),
    CHECK (first_seq <= last_seq)
);
INSERT INTO event_blocks (tenant, owner, task_id, last_seq, first_seq, body)
    SELECT tenant, owner, task_id, seq, seq, int4send(length(body)) || body FROM events;
DROP TABLE events;
