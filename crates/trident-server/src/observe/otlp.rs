//! OTLP export of what [`Observed`](super::Observed) and [`Metrics`] already record (cargo
//! feature `otlp`), to an OpenTelemetry collector over OTLP/gRPC:
//!
//! - **Traces**: the `a2a` span of each call, through a `tracing-opentelemetry` layer
//!   ([`traces`]) on the process's subscriber. Its OpenTelemetry name is the RPC,
//!   `lf.a2a.v1.A2AService/SendMessage`, its kind `SERVER`; its attributes are the span's
//!   fields (`binding`, `method`, `task`, `tenant`, `trace_id`) plus `rpc.system`,
//!   `rpc.service` and `rpc.method`; a failed call has status `ERROR` with the error's message.
//!   A caller's W3C `traceparent` (read by every binding) becomes the span's parent, so the
//!   server's span joins the caller's trace. Spans are batched (the SDK's `OTEL_BSP_*`
//!   settings apply).
//! - **Metrics**: every series of [`Metrics::render`] — request counts, latency and store
//!   histograms (with the same bucket bounds), active streams, task states entered, uptime —
//!   read from the same atomics and sent as cumulative OTLP data every interval
//!   ([`export_metrics`]), and once more when the export stops. Nothing is counted twice.
//!
//! Both carry the SDK's resource (`service.name` defaults to `trident`; `OTEL_SERVICE_NAME`
//! and `OTEL_RESOURCE_ATTRIBUTES` apply). The endpoint is plaintext gRPC (`http://host:4317`,
//! the usual local collector or agent).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_client::MetricsServiceClient;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1 as otlp;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use trident_core::{A2aError, CallContext, Operation};
use trident_proto as pb;

use super::{
    BINDING_LABELS, BUCKETS, Histogram, Metrics, OPERATIONS, OUTCOMES, STATES, STORE_OPS,
    outcome_label,
};

/// The generated OTLP messages and gRPC services (for receivers, such as a test's).
pub use opentelemetry_proto as proto;

/// The gRPC service the spans are named after.
const SERVICE: &str = "lf.a2a.v1.A2AService";

/// Whether spans are exported (set by [`traces`]): only then are they annotated.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
#[error("OTLP export to {endpoint}: {reason}")]
pub struct OtlpError {
    endpoint: String,
    reason: String,
}

fn resource() -> opentelemetry_sdk::Resource {
    let detected = opentelemetry_sdk::Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|v| !v.as_str().starts_with("unknown_service"));
    let builder = opentelemetry_sdk::Resource::builder().with_attribute(
        opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    );
    if named {
        builder.build()
    } else {
        builder.with_service_name("trident").build()
    }
}

fn check(endpoint: &str) -> Result<(), OtlpError> {
    let error = |reason: &str| OtlpError {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|_| error("not a URL (expected http://host:port)"))?;
    match uri.scheme_str() {
        Some("http") if uri.host().is_some() => Ok(()),
        Some("https") => Err(error(
            "TLS is not supported: use a plaintext endpoint (a local collector or agent)",
        )),
        _ => Err(error("expected http://host:port")),
    }
}

/// Exports spans to the collector at `endpoint`: the returned layer goes on the process's
/// `tracing` subscriber, the returned [`Traces`] flushes them at exit. Call it inside a
/// Tokio runtime (the gRPC client lives there).
pub fn traces<S>(endpoint: &str) -> Result<(Traces, impl tracing_subscriber::Layer<S>), OtlpError>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    check(endpoint)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .build()
        .map_err(|e| OtlpError {
            endpoint: endpoint.to_owned(),
            reason: e.to_string(),
        })?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build();
    let tracer = provider.tracer("trident");
    EXPORTING.store(true, Ordering::Relaxed);
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false);
    Ok((Traces { provider }, layer))
}

/// Spans being exported; [`shutdown`](Self::shutdown) sends what is still buffered.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Traces")
    }
}

impl Traces {
    /// Sends the buffered spans and stops (blocks for at most a few seconds).
    pub fn shutdown(self) {
        EXPORTING.store(false, Ordering::Relaxed);
        if let Err(e) = self.provider.shutdown_with_timeout(Duration::from_secs(5)) {
            tracing::warn!(error = %e, "OTLP: could not send the last spans");
        }
    }
}

/// Names the call's span after its RPC, makes it a server span and the child of the caller's
/// `traceparent` (called as the span is created).
pub(super) fn annotate(span: &tracing::Span, cx: &CallContext, op: Operation) {
    if !EXPORTING.load(Ordering::Relaxed) {
        return;
    }
    span.record("otel.name", format!("{SERVICE}/{}", op.name()).as_str());
    span.record("otel.kind", "server");
    span.set_attribute(
        "rpc.system",
        match cx.binding {
            Some(trident_core::Binding::Grpc) => "grpc",
            Some(trident_core::Binding::JsonRpc) => "jsonrpc",
            Some(trident_core::Binding::Rest) => "http",
            None => "in_process",
        },
    );
    span.set_attribute("rpc.service", SERVICE);
    span.set_attribute("rpc.method", op.name());
    if let Some(trace) = &cx.trace {
        let mut carrier = std::collections::HashMap::new();
        carrier.insert("traceparent".to_owned(), trace.traceparent.clone());
        if let Some(state) = &trace.tracestate {
            carrier.insert("tracestate".to_owned(), state.clone());
        }
        let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
        let _ = span.set_parent(parent);
    }
}

/// Marks the span of a failed call (`ERROR`, with the error's message).
pub(super) fn outcome<T>(span: &tracing::Span, result: &Result<T, A2aError>) {
    if !EXPORTING.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = result {
        span.set_attribute("a2a.error", e.kind().wire().reason);
        span.set_status(Status::error(e.message().to_owned()));
    }
}

/// Sending [`Metrics`] to a collector; [`shutdown`](Self::shutdown) sends them one last time.
#[derive(Debug)]
pub struct MetricsExport {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsExport {
    /// Sends the metrics as they are now and stops.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Sends `metrics` to the collector at `endpoint` every `interval` (cumulative: each export
/// carries the totals since the process started), on the current Tokio runtime.
pub fn export_metrics(
    metrics: Arc<Metrics>,
    endpoint: &str,
    interval: Duration,
) -> Result<MetricsExport, OtlpError> {
    check(endpoint)?;
    let channel = tonic::transport::Endpoint::from_shared(endpoint.to_owned())
        .map_err(|e| OtlpError {
            endpoint: endpoint.to_owned(),
            reason: e.to_string(),
        })?
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .connect_lazy();
    let mut client = MetricsServiceClient::new(channel);
    let resource = Resource {
        attributes: resource()
            .iter()
            .map(|(k, v)| string(k.as_str(), &v.as_str()))
            .collect(),
        ..Default::default()
    };
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    let endpoint = endpoint.to_owned();
    let task = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        let mut failing = false;
        loop {
            let last = tokio::select! {
                _ = ticks.tick() => false,
                _ = &mut stopped => true,
            };
            let request = ExportMetricsServiceRequest {
                resource_metrics: vec![otlp::ResourceMetrics {
                    resource: Some(resource.clone()),
                    scope_metrics: vec![otlp::ScopeMetrics {
                        scope: Some(InstrumentationScope {
                            name: "trident".into(),
                            version: env!("CARGO_PKG_VERSION").into(),
                            ..Default::default()
                        }),
                        metrics: metrics.otlp(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            };
            match client.export(request).await {
                Ok(_) if failing => {
                    failing = false;
                    tracing::info!(%endpoint, "OTLP: metrics are exported again");
                }
                Ok(_) => {}
                Err(status) if !failing => {
                    failing = true;
                    tracing::warn!(%endpoint, %status, "OTLP: cannot export metrics (retrying every interval)");
                }
                Err(_) => {}
            }
            if last {
                break;
            }
        }
    });
    Ok(MetricsExport { stop, task })
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..Default::default()
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Histogram {
    fn otlp(&self, attributes: Vec<KeyValue>, start: u64, now: u64) -> otlp::HistogramDataPoint {
        otlp::HistogramDataPoint {
            attributes,
            start_time_unix_nano: start,
            time_unix_nano: now,
            count: self.count.load(Ordering::Relaxed),
            sum: Some(self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9),
            bucket_counts: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            explicit_bounds: BUCKETS.to_vec(),
            ..Default::default()
        }
    }
}

fn metric(name: &str, description: &str, unit: &str, data: otlp::metric::Data) -> otlp::Metric {
    otlp::Metric {
        name: name.into(),
        description: description.into(),
        unit: unit.into(),
        data: Some(data),
        ..Default::default()
    }
}

fn counter(points: Vec<otlp::NumberDataPoint>) -> otlp::metric::Data {
    otlp::metric::Data::Sum(otlp::Sum {
        data_points: points,
        aggregation_temporality: otlp::AggregationTemporality::Cumulative as i32,
        is_monotonic: true,
    })
}

fn histogram(points: Vec<otlp::HistogramDataPoint>) -> otlp::metric::Data {
    otlp::metric::Data::Histogram(otlp::Histogram {
        data_points: points,
        aggregation_temporality: otlp::AggregationTemporality::Cumulative as i32,
    })
}

fn point(
    attributes: Vec<KeyValue>,
    start: u64,
    now: u64,
    value: otlp::number_data_point::Value,
) -> otlp::NumberDataPoint {
    otlp::NumberDataPoint {
        attributes,
        start_time_unix_nano: start,
        time_unix_nano: now,
        value: Some(value),
        ..Default::default()
    }
}

impl Metrics {
    /// Every series of [`render`](Self::render) as OTLP metrics, cumulative since start.
    fn otlp(&self) -> Vec<otlp::Metric> {
        use otlp::number_data_point::Value;
        let now_time = SystemTime::now();
        let now = nanos(now_time);
        let start = nanos(now_time - self.started.elapsed());
        let int = |n: u64| Value::AsInt(i64::try_from(n).unwrap_or(i64::MAX));
        let mut requests = Vec::new();
        let mut latency = Vec::new();
        for (b, binding) in BINDING_LABELS.iter().enumerate() {
            for (o, op) in Operation::ALL.iter().enumerate() {
                for outcome in 0..OUTCOMES {
                    let n = self.requests[(b * OPERATIONS + o) * OUTCOMES + outcome]
                        .load(Ordering::Relaxed);
                    if n > 0 {
                        let attributes = vec![
                            string("binding", binding),
                            string("method", op.name()),
                            string("outcome", outcome_label(outcome)),
                        ];
                        requests.push(point(attributes, start, now, int(n)));
                    }
                }
                let h = &self.latency[b * OPERATIONS + o];
                if h.count.load(Ordering::Relaxed) > 0 {
                    let attributes = vec![string("binding", binding), string("method", op.name())];
                    latency.push(h.otlp(attributes, start, now));
                }
            }
        }
        let streams = BINDING_LABELS
            .iter()
            .zip(&self.streams)
            .map(|(binding, n)| {
                let n = Value::AsInt(n.load(Ordering::Relaxed));
                point(vec![string("binding", binding)], start, now, n)
            })
            .collect();
        let entered = (1..STATES)
            .map(|i| {
                let state = pb::TaskState::try_from(i as i32).unwrap_or_default();
                let n = int(self.entered[i].load(Ordering::Relaxed));
                point(vec![string("state", state.as_str_name())], start, now, n)
            })
            .collect();
        let store = STORE_OPS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.store[*i].count.load(Ordering::Relaxed) > 0)
            .map(|(i, op)| self.store[i].otlp(vec![string("op", op)], start, now))
            .collect();
        let uptime = point(
            Vec::new(),
            start,
            now,
            Value::AsDouble(self.started.elapsed().as_secs_f64()),
        );
        vec![
            metric(
                "trident_requests_total",
                "A2A calls by binding, method and outcome (ok or the ErrorInfo reason).",
                "{call}",
                counter(requests),
            ),
            metric(
                "trident_request_duration_seconds",
                "Time to answer an A2A call (streams: until the stream is open).",
                "s",
                histogram(latency),
            ),
            metric(
                "trident_active_streams",
                "Streams open now, by binding.",
                "{stream}",
                otlp::metric::Data::Gauge(otlp::Gauge {
                    data_points: streams,
                }),
            ),
            metric(
                "trident_task_state_entered_total",
                "Commits that moved a task into each state (by this process).",
                "{commit}",
                counter(entered),
            ),
            metric(
                "trident_store_duration_seconds",
                "Time of each store operation.",
                "s",
                histogram(store),
            ),
            metric(
                "trident_uptime_seconds",
                "Seconds since this process started serving.",
                "s",
                otlp::metric::Data::Gauge(otlp::Gauge {
                    data_points: vec![uptime],
                }),
            ),
        ]
    }
}
