//! Engine settings: [`EngineConfig`] (with the request [`Limits`] of the vocabulary).

pub use trident_core::Limits;

use std::time::Duration;

use super::policy::WebhookPolicy;

/// How often and how patiently to retry a failed delivery.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts per event and webhook, including the first.
    pub attempts: u32,
    /// Wait before the first retry; doubles after each.
    pub initial_backoff: Duration,
    /// Upper bound of the wait.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// How many push configurations one task, and one principal's tasks in progress, may have:
/// each configuration is a delivery lane, every event a POST per lane. Creating one more is
/// refused with `ResourceExhausted`; replacing one (the same id) is not limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushLimits {
    /// Configurations per task (default 100, one page of ListTaskPushNotificationConfigs).
    pub per_task: usize,
    /// Configurations one principal (tenant and owner; every anonymous caller of a tenant is
    /// one principal) holds on its tasks that have not ended (default 10 000: a hundred
    /// tasks at the per-task limit). Configurations of ended tasks do not count.
    pub per_principal: usize,
}

impl Default for PushLimits {
    fn default() -> Self {
        Self {
            per_task: 100,
            per_principal: 10_000,
        }
    }
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Refuse requests without `A2A-Version` (the spec reads them as 0.3). Default: accept them
    /// as 1.0, since several clients omit the header.
    pub strict_version: bool,
    /// Request limits.
    pub limits: Limits,
    /// Recent events kept in memory per live task; slower readers read the log.
    pub tail_capacity: usize,
    /// Webhook retries.
    pub push_retry: RetryPolicy,
    /// How long a follow-up to an interrupted task waits for the previous turn's executor to
    /// return before it is refused as busy.
    pub turn_end_wait: std::time::Duration,
    /// How long a process's claim to execute a task lasts without renewal. On a shared store
    /// (cluster mode) a task whose process stopped ends `FAILED` within about
    /// `lease_ttl + lease_ttl / 2`; the lease is renewed every `lease_ttl / 3`.
    pub lease_ttl: std::time::Duration,
    /// This process's id in leases and delivery claims (default: a fresh UUIDv7 per start).
    pub node_id: Option<String>,
    /// Where webhooks may point (default: public addresses only).
    pub webhook_policy: WebhookPolicy,
    /// How many push configurations a task and a principal may have.
    pub push_limits: PushLimits,
    /// How many webhook calls may be in flight at once.
    pub push_concurrency: PushConcurrency,
    /// The A2A 1.1 preview, offered to callers that send `A2A-Version: 1.1` (task generation,
    /// long-polling GetTask, `ifGenerationMatch`). `None` (the default): `1.1` is refused with
    /// `VersionNotSupported`, as any version this server does not speak.
    pub preview: Option<Preview>,
}

/// Settings of the A2A 1.1 preview ([`EngineConfig::preview`]).
///
/// What the preview changes, for callers that ask for it only (everyone else sees exactly
/// what a 1.0 server answers):
/// - every task answered carries its `generation`, and every status and artifact event of a
///   stream the task's generation after it. A task's generation is the sequence number of
///   the last event in its log: 1 when created, one more per status or artifact event;
/// - GetTask with `currentGeneration` waits until the task's generation is past it, it ends,
///   or [`Preview::long_poll_timeout`] (or the caller's deadline) passes, then answers with
///   the task as it is;
/// - a message to an existing task with `ifGenerationMatch` is refused with
///   `TaskGenerationMismatch` unless that is the task's generation when the message is
///   processed, checked under the task's writer and made good by the conditional commit that
///   begins the turn (on a shared store too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preview {
    /// How long a long-polling GetTask waits at most before it answers with the task as it is
    /// (default 30 s).
    pub long_poll_timeout: Duration,
}

impl Default for Preview {
    fn default() -> Self {
        Self {
            long_poll_timeout: Duration::from_secs(30),
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            strict_version: false,
            limits: Limits::default(),
            tail_capacity: 128,
            push_retry: RetryPolicy::default(),
            turn_end_wait: std::time::Duration::from_secs(10),
            lease_ttl: std::time::Duration::from_secs(10),
            node_id: None,
            webhook_policy: WebhookPolicy::default(),
            push_limits: PushLimits::default(),
            push_concurrency: PushConcurrency::default(),
            preview: None,
        }
    }
}

/// How many webhook calls may be in flight at once: in all (`global`) and to one host and port
/// (`per_host`). A call waits for a free slot (in order) before it connects; waiting is not an
/// attempt. Each call in flight holds at most one connection (the HTTP sender keeps none idle),
/// so `global` bounds the file descriptors push delivery uses: the server's default takes it
/// from the same budget as its connection limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushConcurrency {
    /// Calls in flight in all (default 128).
    pub global: usize,
    /// Calls in flight to one host and port (default 16), so webhooks that hang on one host
    /// leave the other slots to other hosts.
    pub per_host: usize,
}

impl Default for PushConcurrency {
    fn default() -> Self {
        Self {
            global: 128,
            per_host: 16,
        }
    }
}
