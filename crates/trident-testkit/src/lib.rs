//! Test support for Trident, and the agents the `trident` command serves for trying it out.
//!
//! - [`agents`]: demo agents (echo, reply, stream, input, slow, and `Demo`, which picks one by
//!   the message's first word) and `Script`, the conformance script in front of any agent.
//!   Tests, benchmarks and `trident serve --agent demo|echo|…` use the same ones, so what the
//!   behaviour suite checks is what a user can try.
//! - [`bus`]: [`bus::LocalHub`], an `EventBus` connecting engines in one process (cluster
//!   tests without a broker; it can lose messages on purpose).
//! - [`contract`]: the suite every store implementation must pass (memory in
//!   `trident-engine`, SQLite and PostgreSQL in `trident-store`), and
//!   [`contract::test_postgres_url`], how tests find the PostgreSQL server (required when `CI`
//!   is set).
//!
//! Depends on the vocabulary (`trident-core`) only: no engine, no store, no transport.

pub mod agents;
pub mod bus;
pub mod contract;
