-- Tasks: one row per task, its prost-encoded snapshot and the columns ListTasks filters on.
CREATE TABLE tasks (
    tenant      TEXT COLLATE "C" NOT NULL,
    owner       TEXT COLLATE "C" NOT NULL,
    id          TEXT COLLATE "C" NOT NULL,
    context_id  TEXT COLLATE "C" NOT NULL,
    state       INTEGER NOT NULL,
    status_ts   BIGINT NOT NULL, -- status timestamp, ns since the epoch (0 if none)
    last_seq    BIGINT NOT NULL,
    turn        BIGINT NOT NULL,
    lease_node  TEXT COLLATE "C",
    lease_until BIGINT,
    snapshot    BYTEA NOT NULL, -- prost-encoded pb::Task
    PRIMARY KEY (tenant, owner, id)
);
CREATE INDEX tasks_by_time    ON tasks (tenant, owner, status_ts DESC, id);
CREATE INDEX tasks_by_context ON tasks (tenant, owner, context_id, status_ts DESC, id);
CREATE INDEX tasks_by_state   ON tasks (tenant, owner, state, status_ts DESC, id);
CREATE INDEX tasks_lease_until ON tasks (lease_until) WHERE lease_node IS NOT NULL;
CREATE INDEX tasks_lease_node  ON tasks (lease_node)  WHERE lease_node IS NOT NULL;

-- Per-task event logs.
CREATE TABLE events (
    tenant  TEXT COLLATE "C" NOT NULL,
    owner   TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    seq     BIGINT NOT NULL,
    body    BYTEA NOT NULL, -- prost-encoded pb::StreamResponse
    PRIMARY KEY (tenant, owner, task_id, seq)
);

CREATE TABLE push_configs (
    tenant  TEXT COLLATE "C" NOT NULL,
    owner   TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    id      TEXT COLLATE "C" NOT NULL,
    body    BYTEA NOT NULL, -- prost-encoded pb::TaskPushNotificationConfig
    PRIMARY KEY (tenant, owner, task_id, id)
);

CREATE TABLE deliveries (
    tenant    TEXT COLLATE "C" NOT NULL,
    owner     TEXT COLLATE "C" NOT NULL,
    task_id   TEXT COLLATE "C" NOT NULL,
    delivered BIGINT NOT NULL,
    node      TEXT COLLATE "C",
    until_ms  BIGINT NOT NULL,
    PRIMARY KEY (tenant, owner, task_id)
);

-- ListTasks totals, kept up to date by every commit.
CREATE TABLE task_counts (
    tenant TEXT COLLATE "C" NOT NULL,
    owner  TEXT COLLATE "C" NOT NULL,
    state  INTEGER NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (tenant, owner, state)
);
CREATE TABLE context_counts (
    tenant     TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    context_id TEXT COLLATE "C" NOT NULL,
    state      INTEGER NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (tenant, owner, context_id, state)
);
