//! A diagnostic store that keeps no task and no event, to separate the engine's own cost from
//! the cost of storing (and growing) the in-memory store during a benchmark.
//!
//! Only blocking SendMessage on new tasks works with it: the engine keeps a task in memory for
//! the length of its turn, and nothing can read it back afterwards (GetTask answers
//! `TaskNotFound`). It is not a store anyone should serve with.

use std::sync::Arc;

use trident_core::store::{
    EventLog, LoggedEvent, Scope, StoreError, Stores, TaskPage, TaskQuery, TaskRecord, TaskStore,
};
use trident_engine::store::MemoryStore;

/// Accepts every write and forgets it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

/// Stores whose tasks and events are [`Discard`]ed (push configurations in memory).
pub fn stores() -> Stores {
    Stores {
        tasks: Arc::new(Discard),
        events: Arc::new(Discard),
        push: Arc::new(MemoryStore::new()),
    }
}

#[async_trait::async_trait]
impl TaskStore for Discard {
    async fn commit(
        &self,
        _scope: &Scope,
        _record: &TaskRecord,
        _expected_seq: Option<u64>,
        _events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn append(
        &self,
        _scope: &Scope,
        _record: &TaskRecord,
        _expected_seq: u64,
        _events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn append_final(
        &self,
        _scope: &Scope,
        _task_id: &str,
        _event: &trident_proto::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    async fn get(&self, _scope: &Scope, _id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(None)
    }

    async fn list(&self, _scope: &Scope, _query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(TaskPage::default())
    }

    async fn renew_leases(&self, _node: &str, _until_ms: i64) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn lapsed_leases(
        &self,
        _before_ms: i64,
        _limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        Ok(Vec::new())
    }
}

#[async_trait::async_trait]
impl EventLog for Discard {
    async fn read(
        &self,
        _scope: &Scope,
        _task_id: &str,
        _after: u64,
        _limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        Ok(Vec::new())
    }
}
