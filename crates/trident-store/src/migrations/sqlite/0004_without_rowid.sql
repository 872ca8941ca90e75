-- The tables a commit writes become WITHOUT ROWID: a rowid table keyed by a PRIMARY KEY of
-- text columns is two B-trees (the rows by rowid, and the key's index pointing at them), so a
-- commit inserted or updated each row twice. Clustered on the key, it is one B-tree, and
-- one write. (The secondary indexes of `tasks` already end with the whole key, so their
-- entries do not grow.) SQLite cannot change a table's kind in place: each is copied.
CREATE TABLE tasks_v4 (
    tenant      TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    context_id  TEXT    NOT NULL,
    state       INTEGER NOT NULL,
    status_ts   INTEGER NOT NULL, -- status timestamp, ns since the epoch (0 if none)
    last_seq    INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    lease_node  TEXT,
    lease_until INTEGER,
    PRIMARY KEY (tenant, owner, id)
) WITHOUT ROWID;
INSERT INTO tasks_v4 (tenant, owner, id, context_id, state, status_ts, last_seq, turn,
                      lease_node, lease_until)
    SELECT tenant, owner, id, context_id, state, status_ts, last_seq, turn, lease_node,
           lease_until FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_v4 RENAME TO tasks;
CREATE INDEX tasks_by_time    ON tasks (tenant, owner, status_ts DESC, id);
CREATE INDEX tasks_by_context ON tasks (tenant, owner, context_id, status_ts DESC, id);
CREATE INDEX tasks_by_state   ON tasks (tenant, owner, state, status_ts DESC, id);
CREATE INDEX tasks_lease_until ON tasks (lease_until) WHERE lease_node IS NOT NULL;
CREATE INDEX tasks_lease_node  ON tasks (lease_node)  WHERE lease_node IS NOT NULL;

CREATE TABLE snapshots_v4 (
    tenant TEXT    NOT NULL,
    owner  TEXT    NOT NULL,
    id     TEXT    NOT NULL,
    seq    INTEGER NOT NULL, -- the last event the snapshot includes
    body   BLOB    NOT NULL, -- prost-encoded pb::Task
    PRIMARY KEY (tenant, owner, id)
) WITHOUT ROWID;
INSERT INTO snapshots_v4 (tenant, owner, id, seq, body)
    SELECT tenant, owner, id, seq, body FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_v4 RENAME TO snapshots;

CREATE TABLE events_v4 (
    tenant  TEXT    NOT NULL,
    owner   TEXT    NOT NULL,
    task_id TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    body    BLOB    NOT NULL, -- prost-encoded pb::StreamResponse
    PRIMARY KEY (tenant, owner, task_id, seq)
) WITHOUT ROWID;
INSERT INTO events_v4 (tenant, owner, task_id, seq, body)
    SELECT tenant, owner, task_id, seq, body FROM events;
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;

CREATE TABLE task_counts_v4 (
    tenant TEXT    NOT NULL,
    owner  TEXT    NOT NULL,
    state  INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (tenant, owner, state)
) WITHOUT ROWID;
INSERT INTO task_counts_v4 (tenant, owner, state, n)
    SELECT tenant, owner, state, n FROM task_counts;
DROP TABLE task_counts;
ALTER TABLE task_counts_v4 RENAME TO task_counts;

CREATE TABLE context_counts_v4 (
    tenant     TEXT    NOT NULL,
    owner      TEXT    NOT NULL,
    context_id TEXT    NOT NULL,
    state      INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (tenant, owner, context_id, state)
) WITHOUT ROWID;
INSERT INTO context_counts_v4 (tenant, owner, context_id, state, n)
    SELECT tenant, owner, context_id, state, n FROM context_counts;
DROP TABLE context_counts;
ALTER TABLE context_counts_v4 RENAME TO context_counts;
