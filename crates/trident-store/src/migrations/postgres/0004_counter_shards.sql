-- ListTasks totals are sums over shards. Each writer (a lane of a store, which claims a shard
-- no other live lane holds when it connects) adds to its own shard of a counter, so task
-- creations and state changes by several writers of one owner no longer queue on one row lock. A shard's
-- count may be negative (a task created through one shard and finished through another); the
-- sum over the shards is exact. Existing rows become shard 0.
ALTER TABLE task_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_counts DROP CONSTRAINT task_counts_pkey,
    ADD PRIMARY KEY (tenant, owner, state, shard);
ALTER TABLE context_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE context_counts DROP CONSTRAINT context_counts_pkey,
    ADD PRIMARY KEY (tenant, owner, context_id, state, shard);
