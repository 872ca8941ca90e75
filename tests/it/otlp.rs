//! OTLP export (cargo feature `otlp`): a real OTLP/gRPC receiver — the collector's
//! TraceService and MetricsService from `opentelemetry-proto`, served by tonic on 127.0.0.1 —
//! and a real `trident serve --otlp-endpoint` pointed at it. A call served through Trident
//! arrives as a span named after the RPC, in the caller's trace, with the binding and
//! operation as attributes; the request count arrives as an OTLP counter.
//!
//! Run alone with `cargo test --workspace --features trident-cli/otlp --test it otlp::`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use trident_server::otlp::proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use trident_server::otlp::proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use trident_server::otlp::proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use trident_server::otlp::proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use trident_server::otlp::proto::tonic::common::v1::{KeyValue, any_value};
use trident_server::otlp::proto::tonic::metrics::v1::{Metric, metric, number_data_point};
use trident_server::otlp::proto::tonic::trace::v1::{Span, span, status};

use crate::process::Trident;

/// What the receiver got.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    /// The metrics of the latest export (each is cumulative).
    metrics: Vec<Metric>,
    metric_exports: usize,
}

#[derive(Clone, Default)]
struct Receiver(Arc<Mutex<Received>>);

impl Receiver {
    fn with<T>(&self, f: impl FnOnce(&Received) -> T) -> T {
        f(&self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[async_trait::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans = request
            .into_inner()
            .resource_spans
            .into_iter()
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans);
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spans
            .extend(spans);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[async_trait::async_trait]
impl MetricsService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let metrics: Vec<Metric> = request
            .into_inner()
            .resource_metrics
            .into_iter()
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .collect();
        let mut received = self.0.lock().unwrap_or_else(|e| e.into_inner());
        received.metrics = metrics;
        received.metric_exports += 1;
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// Serves `receiver` as an OTLP/gRPC collector on 127.0.0.1; its `http://` endpoint.
async fn collector(receiver: Receiver) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let router = axum::Router::new()
        .route_service(
            "/opentelemetry.proto.collector.trace.v1.TraceService/{*rest}",
            TraceServiceServer::new(receiver.clone()),
        )
        .route_service(
            "/opentelemetry.proto.collector.metrics.v1.MetricsService/{*rest}",
            MetricsServiceServer::new(receiver),
        );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (endpoint, task)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| match &v.value {
            Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
            _ => None,
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of the `trident_requests_total` point with these attributes.
fn requests(metrics: &[Metric], binding: &str, method: &str, outcome: &str) -> Option<i64> {
    let metric = metrics
        .iter()
        .find(|m| m.name == "trident_requests_total")?;
    let Some(metric::Data::Sum(sum)) = &metric.data else {
        return None;
    };
    assert!(sum.is_monotonic, "a counter: {metric:?}");
    sum.data_points
        .iter()
        .find(|p| {
            attribute(&p.attributes, "binding") == Some(binding)
                && attribute(&p.attributes, "method") == Some(method)
                && attribute(&p.attributes, "outcome") == Some(outcome)
        })
        .and_then(|p| match p.value {
            Some(number_data_point::Value::AsInt(n)) => Some(n),
            _ => None,
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_request_counts_reach_an_otlp_collector() {
    let receiver = Receiver::default();
    let (endpoint, collector_task) = collector(receiver.clone()).await;
    let server = Trident::serve_with_env(
        &[
            "--agent",
            "echo",
            "--store",
            "memory",
            "--otlp-endpoint",
            &endpoint,
            "--otlp-metrics-interval",
            "0.3",
        ],
        // Spans leave in batches every 100 ms rather than every 5 s.
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    )
    .await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_id = "00f067aa0ba902b7";
    let http = reqwest::Client::new();
    let reply: serde_json::Value = http
        .post(format!("{}/", server.origin))
        .header("a2a-version", "1.0")
        .header("traceparent", format!("00-{trace_id}-{parent_id}-01"))
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {"message": {"messageId": "m-1", "role": "ROLE_USER",
                                   "parts": [{"text": "hello"}]}}
        }))
        .send()
        .await
        .expect("HTTP")
        .json()
        .await
        .expect("JSON");
    assert!(reply.get("result").is_some(), "served: {reply}");
    // A failing call over HTTP+JSON: an unknown task.
    let missing = http
        .get(format!("{}/tasks/no-such-task", server.origin))
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("HTTP");
    assert_eq!(missing.status(), 404);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (spans_in, counted) = receiver.with(|r| {
            let send = r
                .spans
                .iter()
                .any(|s| s.name == "lf.a2a.v1.A2AService/SendMessage");
            let get = r
                .spans
                .iter()
                .any(|s| s.name == "lf.a2a.v1.A2AService/GetTask");
            let counted = requests(&r.metrics, "jsonrpc", "SendMessage", "ok").is_some()
                && requests(&r.metrics, "rest", "GetTask", "TASK_NOT_FOUND").is_some();
            (send && get, counted)
        });
        if spans_in && counted {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the collector got spans {spans_in} and counts {counted} within 30 s: {:?}",
            receiver.with(|r| (
                r.spans.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
                r.metric_exports
            ))
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    receiver.with(|r| {
        let send = r
            .spans
            .iter()
            .find(|s| s.name == "lf.a2a.v1.A2AService/SendMessage")
            .expect("the SendMessage span");
        assert_eq!(send.kind, span::SpanKind::Server as i32, "{send:?}");
        assert_eq!(attribute(&send.attributes, "method"), Some("SendMessage"));
        assert_eq!(attribute(&send.attributes, "binding"), Some("JSONRPC"));
        assert_eq!(attribute(&send.attributes, "rpc.system"), Some("jsonrpc"));
        assert_eq!(
            attribute(&send.attributes, "rpc.method"),
            Some("SendMessage")
        );
        // The caller's trace continues: same trace id, its span as the parent.
        assert_eq!(hex(&send.trace_id), trace_id, "{send:?}");
        assert_eq!(hex(&send.parent_span_id), parent_id, "{send:?}");
        assert_ne!(
            send.status.as_ref().map(|s| s.code),
            Some(status::StatusCode::Error as i32)
        );

        let get = r
            .spans
            .iter()
            .find(|s| s.name == "lf.a2a.v1.A2AService/GetTask")
            .expect("the GetTask span");
        assert_eq!(attribute(&get.attributes, "binding"), Some("HTTP+JSON"));
        assert_eq!(attribute(&get.attributes, "task"), Some("no-such-task"));
        let status = get.status.as_ref().expect("a status");
        assert_eq!(status.code, status::StatusCode::Error as i32, "{get:?}");
        assert_eq!(
            attribute(&get.attributes, "a2a.error"),
            Some("TASK_NOT_FOUND")
        );

        assert_eq!(
            requests(&r.metrics, "jsonrpc", "SendMessage", "ok"),
            Some(1)
        );
        assert_eq!(
            requests(&r.metrics, "rest", "GetTask", "TASK_NOT_FOUND"),
            Some(1)
        );
        let latency = r
            .metrics
            .iter()
            .find(|m| m.name == "trident_request_duration_seconds")
            .expect("the latency histogram");
        let Some(metric::Data::Histogram(histogram)) = &latency.data else {
            panic!("a histogram: {latency:?}");
        };
        assert!(
            histogram.data_points.iter().any(|p| p.count >= 1
                && p.bucket_counts.len() == p.explicit_bounds.len() + 1
                && attribute(&p.attributes, "method") == Some("SendMessage")),
            "{histogram:?}"
        );
    });
    drop(server);
    collector_task.abort();
}
