//! Observability: a `tracing` span per call and Prometheus metrics, without locks on the hot
//! path (fixed arrays of atomics indexed by binding, operation and outcome).
//!
//! - [`Observed`] wraps any [`A2aService`]: one `a2a` span per call (binding, method, task id,
//!   tenant, W3C trace id), and per binding × method × outcome counters and latency
//!   histograms; streams count as active until they end or their client leaves.
//! - [`observed_stores`] wraps the stores: latency per store operation, and the state each
//!   committed task enters.
//! - [`Metrics::render`] writes the Prometheus text format; `app` serves it at `/metrics` when
//!   [`crate::ServerOptions::metrics`] is set.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tracing::Instrument;
use trident_core::store::{
    EventKind, EventLog, LoggedEvent, NoticeFeed, PushConfigStore, Scope, StoreError, Stores,
    TaskPage, TaskQuery, TaskRecord, TaskStore,
};
use trident_core::{
    A2aError, A2aReply, A2aRequest, A2aService, AroundCall, Binding, CallContext, ErrorKind,
    Operation,
};
use trident_proto as pb;

#[cfg(feature = "otlp")]
pub mod otlp;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A latency histogram: one counter per bucket (plus +Inf), the sum and the count.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, bound) in BUCKETS.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cumulative}");
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(
            out,
            "{name}_count{{{labels}}} {}",
            self.count.load(Ordering::Relaxed)
        );
    }
}

/// Calls that arrived in process (no binding) are counted under this index.
const IN_PROCESS: usize = 3;
const BINDINGS: usize = 4;
const OPERATIONS: usize = Operation::ALL.len();
/// Outcome 0 is success; outcome `1 + i` is `ErrorKind::ALL[i]`.
const OUTCOMES: usize = 1 + ErrorKind::ALL.len();

/// Store operations timed by [`observed_stores`].
const STORE_OPS: [&str; 12] = [
    "commit",
    "get",
    "list",
    "renew_leases",
    "lapsed_leases",
    "read_events",
    "put_push",
    "get_push",
    "list_push",
    "delete_push",
    "delivery",
    "pending_deliveries",
];

/// Task states counted when a commit enters them (index = proto enum value).
const STATES: usize = 9;

/// Every counter Trident exports.
pub struct Metrics {
    requests: Box<[AtomicU64]>,
    latency: Box<[Histogram]>,
    streams: [AtomicI64; BINDINGS],
    store: Box<[Histogram]>,
    entered: [AtomicU64; STATES],
    started: Instant,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn binding_index(b: Option<Binding>) -> usize {
    match b {
        Some(Binding::Grpc) => 0,
        Some(Binding::JsonRpc) => 1,
        Some(Binding::Rest) => 2,
        None => IN_PROCESS,
    }
}

const BINDING_LABELS: [&str; BINDINGS] = ["grpc", "jsonrpc", "rest", "in_process"];

fn op_index(op: Operation) -> usize {
    Operation::ALL.iter().position(|o| *o == op).unwrap_or(0)
}

fn outcome_index(result: Result<(), ErrorKind>) -> usize {
    match result {
        Ok(()) => 0,
        Err(kind) => 1 + ErrorKind::ALL.iter().position(|k| *k == kind).unwrap_or(0),
    }
}

fn outcome_label(i: usize) -> &'static str {
    match i {
        0 => "ok",
        i => ErrorKind::ALL
            .get(i - 1)
            .map_or("unknown", |k| k.wire().reason),
    }
}

impl Metrics {
    /// All counters at zero.
    pub fn new() -> Self {
        Self {
            requests: (0..BINDINGS * OPERATIONS * OUTCOMES)
                .map(|_| AtomicU64::new(0))
                .collect(),
            latency: (0..BINDINGS * OPERATIONS)
                .map(|_| Histogram::default())
                .collect(),
            streams: Default::default(),
            store: (0..STORE_OPS.len()).map(|_| Histogram::default()).collect(),
            entered: Default::default(),
            started: Instant::now(),
        }
    }

    fn record(
        &self,
        binding: Option<Binding>,
        op: Operation,
        outcome: Result<(), ErrorKind>,
        elapsed: Duration,
    ) {
        let b = binding_index(binding);
        let o = op_index(op);
        let i = (b * OPERATIONS + o) * OUTCOMES + outcome_index(outcome);
        self.requests[i].fetch_add(1, Ordering::Relaxed);
        self.latency[b * OPERATIONS + o].observe(elapsed);
    }

    fn store_op(&self, op: usize, elapsed: Duration) {
        if let Some(h) = self.store.get(op) {
            h.observe(elapsed);
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        out.push_str("# HELP trident_requests_total A2A calls by binding, method and outcome (ok or the ErrorInfo reason).\n");
        out.push_str("# TYPE trident_requests_total counter\n");
        for (b, binding) in BINDING_LABELS.iter().enumerate() {
            for (o, op) in Operation::ALL.iter().enumerate() {
                for outcome in 0..OUTCOMES {
                    let n = self.requests[(b * OPERATIONS + o) * OUTCOMES + outcome]
                        .load(Ordering::Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "trident_requests_total{{binding=\"{}\",method=\"{}\",outcome=\"{}\"}} {n}",
                            binding,
                            op.name(),
                            outcome_label(outcome)
                        );
                    }
                }
            }
        }
        out.push_str("# HELP trident_request_duration_seconds Time to answer an A2A call (streams: until the stream is open).\n");
        out.push_str("# TYPE trident_request_duration_seconds histogram\n");
        for (b, binding) in BINDING_LABELS.iter().enumerate() {
            for (o, op) in Operation::ALL.iter().enumerate() {
                let h = &self.latency[b * OPERATIONS + o];
                if h.count.load(Ordering::Relaxed) > 0 {
                    let labels = format!("binding=\"{binding}\",method=\"{}\"", op.name());
                    h.render(&mut out, "trident_request_duration_seconds", &labels);
                }
            }
        }
        out.push_str("# HELP trident_active_streams Streams open now, by binding.\n");
        out.push_str("# TYPE trident_active_streams gauge\n");
        for (b, label) in BINDING_LABELS.iter().enumerate() {
            let _ = writeln!(
                out,
                "trident_active_streams{{binding=\"{label}\"}} {}",
                self.streams[b].load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP trident_task_state_entered_total Commits that moved a task into each state (by this process).\n");
        out.push_str("# TYPE trident_task_state_entered_total counter\n");
        for (i, n) in self.entered.iter().enumerate().skip(1) {
            let state = pb::TaskState::try_from(i as i32).unwrap_or_default();
            let _ = writeln!(
                out,
                "trident_task_state_entered_total{{state=\"{}\"}} {}",
                state.as_str_name(),
                n.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP trident_store_duration_seconds Time of each store operation.\n");
        out.push_str("# TYPE trident_store_duration_seconds histogram\n");
        for (i, op) in STORE_OPS.iter().enumerate() {
            if self.store[i].count.load(Ordering::Relaxed) > 0 {
                self.store[i].render(
                    &mut out,
                    "trident_store_duration_seconds",
                    &format!("op=\"{op}\""),
                );
            }
        }
        out.push_str("# HELP trident_uptime_seconds Seconds since this process started serving.\n");
        out.push_str("# TYPE trident_uptime_seconds gauge\n");
        let _ = writeln!(
            out,
            "trident_uptime_seconds {}",
            self.started.elapsed().as_secs_f64()
        );
        out
    }
}

/// An [`A2aService`] with a span and metrics per call.
pub struct Observed {
    inner: Arc<dyn A2aService>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observed")
    }
}

impl Observed {
    /// Observes `inner` into `metrics`.
    pub fn new(inner: Arc<dyn A2aService>, metrics: Arc<Metrics>) -> Self {
        Self { inner, metrics }
    }
}

/// The target of the span per call. `trident serve` leaves it out of its logs unless
/// `RUST_LOG` names it (`RUST_LOG=info` or `trident::call=info`): a log subscriber formats a
/// span's fields when the span is created, which cost about a tenth of a blocking
/// SendMessage's instructions even when nothing inside the call logs. Exporters (OTLP) filter
/// on their own and still get every span.
pub const CALL_TARGET: &str = "trident::call";

fn span(cx: &CallContext, req: &A2aRequest) -> tracing::Span {
    let tenant = match req.tenant() {
        "" => cx.tenant.as_str(),
        tenant => tenant,
    };
    let span = tracing::info_span!(
        target: CALL_TARGET,
        "a2a",
        binding = cx.binding.map_or("in_process", Binding::card_name),
        method = req.operation().name(),
        task = req.task_id(),
        tenant = tenant,
        trace_id = cx.trace.as_ref().map_or("", |t| t.trace_id()),
        // Set by the OTLP export only (`otlp::annotate`).
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
    );
    #[cfg(feature = "otlp")]
    otlp::annotate(&span, cx, req.operation());
    span
}

/// Decrements the binding's active-stream gauge when the stream is dropped.
struct StreamGuard {
    metrics: Arc<Metrics>,
    binding: usize,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.metrics.streams[self.binding].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Every call: a span around it, its outcome and latency recorded (a stream's until it is
/// open), and a stream counted as active until it ends or its client leaves.
#[async_trait::async_trait]
impl AroundCall for Observed {
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
        let op = req.operation();
        let span = span(cx, &req);
        let start = Instant::now();
        let result = self.inner.call(cx, req).instrument(span.clone()).await;
        self.metrics.record(
            cx.binding,
            op,
            result.as_ref().map(|_| ()).map_err(A2aError::kind),
            start.elapsed(),
        );
        #[cfg(feature = "otlp")]
        otlp::outcome(&span, &result);
        if let Err(e) = &result {
            span.in_scope(|| tracing::debug!(kind = ?e.kind(), error = %e, "call failed"));
        }
        Ok(result?.map_stream(|stream| {
            let b = binding_index(cx.binding);
            self.metrics.streams[b].fetch_add(1, Ordering::Relaxed);
            let guard = StreamGuard {
                metrics: self.metrics.clone(),
                binding: b,
            };
            stream
                .map(move |item| {
                    let _keep = &guard;
                    item
                })
                .boxed()
        }))
    }
}

/// The stores with each operation timed into `metrics` and each committed task's new state
/// counted.
pub fn observed_stores(stores: Stores, metrics: Arc<Metrics>) -> Stores {
    let timed = Arc::new(TimedStores {
        inner: stores,
        metrics,
    });
    Stores {
        tasks: timed.clone(),
        events: timed.clone(),
        push: timed,
    }
}

struct TimedStores {
    inner: Stores,
    metrics: Arc<Metrics>,
}

impl TimedStores {
    /// Counts a committed state change in `entered`.
    fn count_entered(&self, record: &TaskRecord, events: &[LoggedEvent]) {
        // By kind: an event held encoded (a new task as submitted) is not decoded to see.
        let entered = events.iter().any(|e| {
            matches!(
                e.event.kind(),
                Some(EventKind::StatusUpdate | EventKind::Task)
            )
        });
        if entered {
            let state = usize::try_from(record.task.state() as i32).unwrap_or(0);
            if let Some(n) = self.metrics.entered.get(state) {
                n.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    async fn time<T>(&self, op: usize, call: impl std::future::Future<Output = T>) -> T {
        let start = Instant::now();
        let out = call.await;
        self.metrics.store_op(op, start.elapsed());
        out
    }
}

#[async_trait::async_trait]
impl TaskStore for TimedStores {
    async fn commit(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: Option<u64>,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let result = self
            .time(
                0,
                self.inner.tasks.commit(scope, record, expected_seq, events),
            )
            .await;
        if result.is_ok() {
            self.count_entered(record, events);
        }
        result
    }

    /// Timed as a commit (it is one, without a snapshot).
    async fn append(
        &self,
        scope: &Scope,
        record: &TaskRecord,
        expected_seq: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        let result = self
            .time(
                0,
                self.inner.tasks.append(scope, record, expected_seq, events),
            )
            .await;
        if result.is_ok() {
            self.count_entered(record, events);
        }
        result
    }

    /// Timed as a commit (it is one, at the end of the log).
    async fn append_final(
        &self,
        scope: &Scope,
        task_id: &str,
        event: &pb::StreamResponse,
    ) -> Result<Option<u64>, StoreError> {
        let result = self
            .time(0, self.inner.tasks.append_final(scope, task_id, event))
            .await;
        if let (Ok(Some(_)), Ok(state)) = (&result, trident_core::store::final_state(event))
            && let Some(n) = self
                .metrics
                .entered
                .get(usize::try_from(state as i32).unwrap_or(0))
        {
            n.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.time(1, self.inner.tasks.get(scope, id)).await
    }

    async fn list(&self, scope: &Scope, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.time(2, self.inner.tasks.list(scope, query)).await
    }

    async fn renew_leases(&self, node: &str, until_ms: i64) -> Result<u64, StoreError> {
        self.time(3, self.inner.tasks.renew_leases(node, until_ms))
            .await
    }

    async fn lapsed_leases(
        &self,
        before_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.time(4, self.inner.tasks.lapsed_leases(before_ms, limit))
            .await
    }

    /// Not timed: a replica reads it a few times per lease TTL.
    async fn clock_ms(&self) -> Result<i64, StoreError> {
        self.inner.tasks.clock_ms().await
    }

    fn shared(&self) -> bool {
        self.inner.tasks.shared()
    }

    fn commits_behind(&self) -> bool {
        self.inner.tasks.commits_behind()
    }

    fn notices(&self) -> Option<NoticeFeed> {
        self.inner.tasks.notices()
    }
}

#[async_trait::async_trait]
impl EventLog for TimedStores {
    async fn read(
        &self,
        scope: &Scope,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.time(5, self.inner.events.read(scope, task_id, after, limit))
            .await
    }

    fn hold(&self, scope: &Scope, task_id: &str) -> Option<trident_core::store::LogHold> {
        self.inner.events.hold(scope, task_id)
    }
}

#[async_trait::async_trait]
impl PushConfigStore for TimedStores {
    async fn put(
        &self,
        scope: &Scope,
        config: &pb::TaskPushNotificationConfig,
        generation: trident_core::Generation,
    ) -> Result<(), StoreError> {
        self.time(6, self.inner.push.put(scope, config, generation))
            .await
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        id: &str,
    ) -> Result<Option<(pb::TaskPushNotificationConfig, trident_core::Generation)>, StoreError>
    {
        self.time(7, self.inner.push.get(scope, task_id, id)).await
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<pb::TaskPushNotificationConfig>, bool), StoreError> {
        self.time(8, self.inner.push.list(scope, task_id, after, limit))
            .await
    }

    async fn delete(&self, scope: &Scope, task_id: &str, id: &str) -> Result<bool, StoreError> {
        self.time(9, self.inner.push.delete(scope, task_id, id))
            .await
    }

    /// Timed as a listing (`list_push`): it reads the same rows.
    async fn count(
        &self,
        scope: &Scope,
        task_id: &str,
    ) -> Result<trident_core::store::ConfigCount, StoreError> {
        self.time(8, self.inner.push.count(scope, task_id)).await
    }

    async fn claim_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        until_ms: i64,
        from: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.time(
            10,
            self.inner
                .push
                .claim_delivery(scope, task_id, node, until_ms, from),
        )
        .await
    }

    async fn delivered(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
        seq: u64,
        until_ms: i64,
    ) -> Result<bool, StoreError> {
        self.time(
            10,
            self.inner
                .push
                .delivered(scope, task_id, node, seq, until_ms),
        )
        .await
    }

    async fn release_delivery(
        &self,
        scope: &Scope,
        task_id: &str,
        node: &str,
    ) -> Result<(), StoreError> {
        self.time(10, self.inner.push.release_delivery(scope, task_id, node))
            .await
    }

    async fn pending_deliveries(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(Scope, String)>, StoreError> {
        self.time(11, self.inner.push.pending_deliveries(now_ms, limit))
            .await
    }
}
