//! The baseline: SendMessage answered by hand on the three bindings, with the same request
//! decoding and response encoding as Trident (the generated prost/pbjson types) and the same
//! serving stack (`axum::serve`, one port, gRPC mounted by path) — everything but the engine.

use std::borrow::Cow;

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use tonic::{Request, Status};
use trident_core::ErrorKind;
use trident_proto as pb;
use trident_proto::a2a_service_server::{A2aService, A2aServiceServer};

use crate::payload::echo_response;

/// The raw router: `POST /message:send` (HTTP+JSON), `POST /` (JSON-RPC) and
/// `/lf.a2a.v1.A2AService/*` (gRPC over h2c).
pub fn router() -> axum::Router {
    let grpc = A2aServiceServer::new(RawGrpc);
    axum::Router::new()
        .route("/message:send", axum::routing::post(rest))
        .route("/", axum::routing::post(jsonrpc))
        .route_service(&format!("/{}/{{*rest}}", pb::SERVICE_NAME), grpc)
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// HTTP+JSON: ProtoJSON request in, ProtoJSON `SendMessageResponse` out.
async fn rest(body: Bytes) -> Response {
    let answer = serde_json::from_slice::<pb::SendMessageRequest>(&body)
        .map_err(|e| e.to_string())
        .and_then(echo_response)
        .and_then(|r| serde_json::to_vec(&r).map_err(|e| e.to_string()));
    match answer {
        Ok(body) => json(StatusCode::OK, body),
        Err(e) => json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({ "error": { "message": e } })
                .to_string()
                .into_bytes(),
        ),
    }
}

/// The JSON-RPC envelope, parsed minimally: `params` and `id` stay raw JSON.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: &'a RawValue,
}

/// JSON-RPC 2.0: `SendMessage` only; the result is spliced into the response envelope.
async fn jsonrpc(body: Bytes) -> Response {
    let env: Envelope<'_> = match serde_json::from_slice(&body) {
        Ok(env) => env,
        Err(e) => {
            return json(
                StatusCode::OK,
                rpc_error("null", ErrorKind::InvalidRequest, &e.to_string()),
            );
        }
    };
    let id = env.id.get();
    if env.jsonrpc != "2.0" || env.method != "SendMessage" {
        return json(
            StatusCode::OK,
            rpc_error(id, ErrorKind::MethodNotFound, "only SendMessage"),
        );
    }
    let result = serde_json::from_str::<pb::SendMessageRequest>(env.params.get())
        .map_err(|e| e.to_string())
        .and_then(echo_response)
        .and_then(|r| serde_json::to_vec(&r).map_err(|e| e.to_string()));
    match result {
        Ok(result) => {
            let mut out = Vec::with_capacity(result.len() + id.len() + 32);
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(br#","result":"#);
            out.extend_from_slice(&result);
            out.push(b'}');
            json(StatusCode::OK, out)
        }
        Err(e) => json(StatusCode::OK, rpc_error(id, ErrorKind::InvalidParams, &e)),
    }
}

/// A JSON-RPC error envelope; the code comes from Trident's one wire table.
fn rpc_error(id: &str, kind: ErrorKind, message: &str) -> Vec<u8> {
    let error = serde_json::json!({ "code": kind.wire().jsonrpc, "message": message });
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#).into_bytes()
}

/// gRPC: `SendMessage` answered directly; every other method is `UNIMPLEMENTED`.
#[derive(Debug, Clone, Copy)]
struct RawGrpc;

type Unary<T> = Result<tonic::Response<T>, Status>;
/// The stream type of the streaming methods the baseline does not implement.
type NoStream = tonic::codegen::tokio_stream::Empty<Result<pb::StreamResponse, Status>>;

fn unimplemented<T>() -> Unary<T> {
    Err(Status::unimplemented(
        "the raw baseline only implements SendMessage",
    ))
}

#[async_trait::async_trait]
impl A2aService for RawGrpc {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Unary<pb::SendMessageResponse> {
        echo_response(request.into_inner())
            .map(tonic::Response::new)
            .map_err(Status::invalid_argument)
    }

    type SendStreamingMessageStream = NoStream;

    async fn send_streaming_message(
        &self,
        _request: Request<pb::SendMessageRequest>,
    ) -> Unary<NoStream> {
        unimplemented()
    }

    async fn get_task(&self, _request: Request<pb::GetTaskRequest>) -> Unary<pb::Task> {
        unimplemented()
    }

    async fn list_tasks(
        &self,
        _request: Request<pb::ListTasksRequest>,
    ) -> Unary<pb::ListTasksResponse> {
        unimplemented()
    }

    async fn cancel_task(&self, _request: Request<pb::CancelTaskRequest>) -> Unary<pb::Task> {
        unimplemented()
    }

    type SubscribeToTaskStream = NoStream;

    async fn subscribe_to_task(
        &self,
        _request: Request<pb::SubscribeToTaskRequest>,
    ) -> Unary<NoStream> {
        unimplemented()
    }

    async fn create_task_push_notification_config(
        &self,
        _request: Request<pb::TaskPushNotificationConfig>,
    ) -> Unary<pb::TaskPushNotificationConfig> {
        unimplemented()
    }

    async fn get_task_push_notification_config(
        &self,
        _request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Unary<pb::TaskPushNotificationConfig> {
        unimplemented()
    }

    async fn list_task_push_notification_configs(
        &self,
        _request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Unary<pb::ListTaskPushNotificationConfigsResponse> {
        unimplemented()
    }

    async fn get_extended_agent_card(
        &self,
        _request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Unary<pb::AgentCard> {
        unimplemented()
    }

    async fn delete_task_push_notification_config(
        &self,
        _request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Unary<pbjson_types::Empty> {
        unimplemented()
    }
}
