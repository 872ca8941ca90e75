//! Protocol cases below `A2aService`: the card as served (discovery path, required fields,
//! caching, every declared interface answering with its tenant) and raw requests on the
//! fixture's interface (unknown method or route, malformed requests, an unsupported
//! `A2A-Version`, a body that is not JSON, ErrorInfo on every binding), checked against the
//! v1.0.1 error table (spec Appendix A). They need the wire ([`Fixture::needs_wire`]): in
//! process they skip with [`Skip::no_wire`].

use reqwest::Method;
use trident_client::Binding;
use trident_core::ErrorKind;
use trident_proto as pb;

use crate::wire::{NO_SUCH_TASK, Wire, assert_error_info, assert_grpc_error_info};
use crate::{Fixture, Skip, Target, observe};

/// What a 1.0 client sends with its card request (clients send `A2A-Version` on every request;
/// a server may answer a request without it, which means 0.3, with v0.3's form of the card).
const AS_1_0: (&str, &str) = ("a2a-version", "1.0");

async fn wire_of(t: &dyn Target) -> Result<(Fixture, Wire), Skip> {
    let f = Fixture::default(t).await?;
    let wire = f.needs_wire()?.clone();
    Ok((f, wire))
}

/// The card is served at `/.well-known/agent-card.json` of the agent's origin, as JSON.
pub async fn card_is_served_at_the_well_known_path(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let url = format!("{}/.well-known/agent-card.json", wire.origin());
    let a = wire.get(&url, &[AS_1_0]).await;
    assert_eq!(a.status, 200, "GET {url}: {}", a.text);
    let content_type = a.header("content-type").unwrap_or_default();
    assert!(
        content_type.contains("json"),
        "the card is JSON, served as {content_type:?}"
    );
    let json = a.json.expect("the card parses as JSON");
    serde_json::from_value::<pb::AgentCard>(json).expect("the card reads as an AgentCard");
    Ok(())
}

/// The card has every REQUIRED field, non-empty: name, description, version,
/// supportedInterfaces (each with url, protocolBinding, protocolVersion), capabilities, the
/// default input and output modes, and skills (each with id, name, description, tags).
pub async fn card_has_the_required_fields(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let a = wire.get(&wire.card_url, &[AS_1_0]).await;
    assert_eq!(a.status, 200, "GET {}: {}", wire.card_url, a.text);
    let card = a.json.expect("the card parses as JSON");
    let text = |v: &serde_json::Value, field: &str, at: &str| {
        let s = v.get(field).and_then(|s| s.as_str()).unwrap_or_default();
        assert!(
            !s.is_empty(),
            "{at}{field} is REQUIRED (a non-empty string)"
        );
    };
    let list = |v: &serde_json::Value, field: &str, at: &str, non_empty: bool| {
        let items = v
            .get(field)
            .and_then(|l| l.as_array())
            .unwrap_or_else(|| panic!("{at}{field} is REQUIRED (a list)"));
        assert!(
            !non_empty || !items.is_empty(),
            "{at}{field} is REQUIRED and must not be empty"
        );
        items.clone()
    };
    for field in ["name", "description", "version"] {
        text(&card, field, "");
    }
    for (i, iface) in list(&card, "supportedInterfaces", "", true)
        .iter()
        .enumerate()
    {
        for field in ["url", "protocolBinding", "protocolVersion"] {
            text(iface, field, &format!("supportedInterfaces[{i}]."));
        }
    }
    assert!(
        card.get("capabilities").is_some_and(|c| c.is_object()),
        "capabilities is REQUIRED (an object)"
    );
    list(&card, "defaultInputModes", "", true);
    list(&card, "defaultOutputModes", "", true);
    // An empty skill list is tolerated (the spec's own examples show one).
    let skills = list(&card, "skills", "", false);
    for (i, skill) in skills.iter().enumerate() {
        let at = format!("skills[{i}].");
        for field in ["id", "name", "description"] {
            text(skill, field, &at);
        }
        list(skill, "tags", &at, true);
    }
    observe(format!("card: {} skills", skills.len()));
    Ok(())
}

/// The card is served with `Cache-Control: max-age` and an `ETag`, and a conditional GET with
/// that ETag answers `304 Not Modified` (RFC 9110 §13.1.2).
pub async fn card_is_cacheable(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let a = wire.get(&wire.card_url, &[AS_1_0]).await;
    assert_eq!(a.status, 200, "GET {}: {}", wire.card_url, a.text);
    let cache_control = a.header("cache-control").unwrap_or_default().to_owned();
    let etag = a.header("etag").unwrap_or_default().to_owned();
    observe(format!(
        "cache-control {}, etag {}",
        !cache_control.is_empty(),
        !etag.is_empty()
    ));
    assert!(
        cache_control.contains("max-age"),
        "the card SHOULD be served with Cache-Control: max-age, got {cache_control:?}"
    );
    assert!(!etag.is_empty(), "the card SHOULD be served with an ETag");
    let again = wire
        .get(&wire.card_url, &[AS_1_0, ("if-none-match", &etag)])
        .await;
    assert_eq!(
        again.status, 304,
        "a GET with If-None-Match: {etag} answers 304 Not Modified"
    );
    Ok(())
}

/// Every interface the card declares for this binding (A2A 1.x) is reachable and answers a
/// real call — GetTask of an unknown task is TaskNotFound — with the interface's own tenant
/// when it declares one (spec "tenant": clients send exactly that value).
pub async fn every_declared_interface_answers(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let interfaces = wire.interfaces();
    assert!(!interfaces.is_empty(), "the card declares this binding");
    observe(format!("{} interfaces", interfaces.len()));
    for iface in interfaces {
        let at = format!(
            "{} at {} (tenant {:?})",
            iface.protocol_binding, iface.url, iface.tenant
        );
        let svc = trident_client::client(wire.binding, &iface)
            .await
            .unwrap_or_else(|e| panic!("{at}: cannot connect: {e}"));
        let got = svc
            .get_task(
                &crate::helpers::cx(),
                pb::GetTaskRequest {
                    id: NO_SUCH_TASK.into(),
                    ..Default::default()
                },
            )
            .await;
        match got {
            Err(e) if e.kind() == ErrorKind::TaskNotFound => {}
            Err(e) => panic!(
                "{at}: GetTask of an unknown task: expected TaskNotFound, got {:?}: {e}",
                e.kind()
            ),
            Ok(_) => panic!("{at}: GetTask of an unknown task answered a task"),
        }
    }
    Ok(())
}

/// An unknown method (JSON-RPC -32601), route (HTTP+JSON 404 or 501) or gRPC method
/// (UNIMPLEMENTED) is refused as such.
pub async fn unknown_method_or_route_is_refused(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    match wire.binding {
        Binding::JsonRpc => {
            let a = wire
                .jsonrpc("NoSuchMethod", serde_json::json!({}), "1.0")
                .await;
            assert_eq!(
                a.jsonrpc_code(),
                i64::from(ErrorKind::MethodNotFound.wire().jsonrpc),
                "method not found: {}",
                a.text
            );
        }
        Binding::Rest => {
            let a = wire
                .http(Method::GET, "/conformance/no/such/route", "1.0", "", "")
                .await;
            assert!(
                [404, 501].contains(&a.status),
                "an unknown route answers 404 (or 501), got {}: {}",
                a.status,
                a.text
            );
        }
        Binding::Grpc => {
            let status = wire
                .grpc_unary::<pb::GetTaskRequest, pb::Task>(
                    "NoSuchMethod",
                    wire.get_no_such_task(),
                    "1.0",
                )
                .await?
                .expect_err("an unknown gRPC method fails");
            assert_eq!(
                status.code(),
                tonic::Code::Unimplemented,
                "{}",
                status.message()
            );
        }
    }
    Ok(())
}

/// Requests that are not valid JSON, not a request object, or whose params have the wrong
/// shape are refused with the table's codes: JSON-RPC -32700 / -32600 / -32602, HTTP+JSON 400
/// with an AIP-193 `INVALID_ARGUMENT` body, gRPC `INVALID_ARGUMENT`.
pub async fn malformed_requests_are_refused(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    match wire.binding {
        Binding::JsonRpc => {
            let post =
                |body: &'static str| wire.http(Method::POST, "", "1.0", "application/json", body);
            for (what, body, code) in [
                (
                    "a body that is not JSON",
                    "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
                    i64::from(ErrorKind::ParseError.wire().jsonrpc),
                ),
                (
                    "a request without a method",
                    "{\"jsonrpc\": \"2.0\", \"id\": 1}",
                    i64::from(ErrorKind::InvalidRequest.wire().jsonrpc),
                ),
            ] {
                let a = post(body).await;
                assert_eq!(a.jsonrpc_code(), code, "{what}: {}", a.text);
            }
            let a = wire
                .jsonrpc(
                    "SendMessage",
                    serde_json::json!({"message": "not a message"}),
                    "1.0",
                )
                .await;
            assert_eq!(
                a.jsonrpc_code(),
                i64::from(ErrorKind::InvalidParams.wire().jsonrpc),
                "params of the wrong type: {}",
                a.text
            );
        }
        Binding::Rest => {
            for (what, body) in [
                ("a body that is not JSON", "{\"message\": "),
                (
                    "a message of the wrong type",
                    "{\"message\": \"not a message\"}",
                ),
            ] {
                let a = wire
                    .http(
                        Method::POST,
                        "/message:send",
                        "1.0",
                        "application/json",
                        body,
                    )
                    .await;
                assert_eq!(a.status, 400, "{what}: {}", a.text);
                a.aip193(ErrorKind::InvalidParams.wire().status);
            }
        }
        Binding::Grpc => {
            let status = wire
                .grpc_unary::<pb::SendMessageRequest, pb::SendMessageResponse>(
                    "SendMessage",
                    pb::SendMessageRequest {
                        tenant: wire.interface.tenant.clone(),
                        ..Default::default()
                    },
                    "1.0",
                )
                .await?
                .expect_err("a SendMessage without a message fails");
            assert_eq!(
                status.code(),
                tonic::Code::InvalidArgument,
                "{}",
                status.message()
            );
        }
    }
    Ok(())
}

/// `A2A-Version: 99.0` is refused with VersionNotSupported as the table writes it on each
/// binding — JSON-RPC -32009, HTTP 400 `FAILED_PRECONDITION`, gRPC `FAILED_PRECONDITION` —
/// with an ErrorInfo `VERSION_NOT_SUPPORTED` of the A2A domain.
pub async fn unsupported_version_is_refused_on_the_wire(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let reason = ErrorKind::VersionNotSupported.wire().reason;
    check_error(&wire, "99.0", ErrorKind::VersionNotSupported, reason).await
}

/// An A2A error (GetTask of an unknown task) carries the table's code on each binding —
/// JSON-RPC -32001, HTTP 404 with an AIP-193 `NOT_FOUND` body, gRPC `NOT_FOUND` — and an
/// ErrorInfo `TASK_NOT_FOUND` of the A2A domain.
pub async fn a2a_errors_carry_error_info(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let reason = ErrorKind::TaskNotFound.wire().reason;
    check_error(&wire, "1.0", ErrorKind::TaskNotFound, reason).await
}

/// GetTask of [`NO_SUCH_TASK`] with `A2A-Version: version` fails with `kind` as the wire table
/// writes it on the wire's binding, with an ErrorInfo `reason`.
async fn check_error(
    wire: &Wire,
    version: &str,
    kind: ErrorKind,
    reason: &str,
) -> Result<(), Skip> {
    let w = kind.wire();
    match wire.binding {
        Binding::JsonRpc => {
            let a = wire
                .jsonrpc("GetTask", serde_json::json!({"id": NO_SUCH_TASK}), version)
                .await;
            assert_eq!(a.jsonrpc_code(), i64::from(w.jsonrpc), "{}", a.text);
            assert_error_info(a.jsonrpc_error().get("data"), reason);
        }
        Binding::Rest => {
            let a = wire
                .http(
                    Method::GET,
                    &format!("/tasks/{NO_SUCH_TASK}"),
                    version,
                    "",
                    "",
                )
                .await;
            assert_eq!(a.status, w.http, "{}", a.text);
            let e = a.aip193(w.status);
            assert_error_info(e.get("details"), reason);
        }
        Binding::Grpc => {
            let status = wire
                .grpc_unary::<pb::GetTaskRequest, pb::Task>(
                    "GetTask",
                    wire.get_no_such_task(),
                    version,
                )
                .await?
                .expect_err("GetTask fails");
            assert_eq!(
                status.code() as i32,
                w.grpc,
                "gRPC status code: {:?} {}",
                status.code(),
                status.message()
            );
            assert_grpc_error_info(&status, reason);
        }
    }
    Ok(())
}

/// A request body declared as something other than JSON is refused before it is parsed:
/// HTTP+JSON 415 (or the table's 400) with an AIP-193 body and ErrorInfo
/// `CONTENT_TYPE_NOT_SUPPORTED`, JSON-RPC -32005 with that ErrorInfo; over HTTP+JSON
/// `application/a2a+json` (the binding's media type) is accepted. gRPC: a body that is not
/// `application/grpc` is answered HTTP 415 (gRPC over HTTP/2).
pub async fn non_json_content_type_is_refused(t: &dyn Target) -> Result<(), Skip> {
    let (_f, wire) = wire_of(t).await?;
    let reason = ErrorKind::ContentTypeNotSupported.wire().reason;
    match wire.binding {
        Binding::JsonRpc => {
            let body = serde_json::json!({
                "jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": NO_SUCH_TASK}
            })
            .to_string();
            let a = wire.http(Method::POST, "", "1.0", "text/plain", body).await;
            assert_eq!(
                a.jsonrpc_code(),
                i64::from(ErrorKind::ContentTypeNotSupported.wire().jsonrpc),
                "text/plain: {}",
                a.text
            );
            assert_error_info(a.jsonrpc_error().get("data"), reason);
        }
        Binding::Rest => {
            let body = serde_json::json!({
                "message": {"messageId": "conformance-content-type", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
            })
            .to_string();
            let a = wire
                .http(Method::POST, "/message:send", "1.0", "text/plain", body)
                .await;
            // 415 is the HTTP-level refusal (Trident's, RFC 9110); the v1.0.1 table's row for
            // ContentTypeNotSupported is 400. Either, with the ErrorInfo.
            assert!(
                [415, 400].contains(&a.status),
                "text/plain: expected 415 (or 400), got {}: {}",
                a.status,
                a.text
            );
            let e = a.aip193(ErrorKind::ContentTypeNotSupported.wire().status);
            assert_error_info(e.get("details"), reason);
            // application/a2a+json is the binding's own media type (spec: SHOULD be used).
            let a = wire
                .http(
                    Method::POST,
                    &format!("/tasks/{NO_SUCH_TASK}:cancel"),
                    "1.0",
                    "application/a2a+json",
                    "{}",
                )
                .await;
            assert_eq!(a.status, 404, "application/a2a+json is JSON: {}", a.text);
        }
        Binding::Grpc => {
            let a = wire.grpc_http("GetTask", "application/json").await?;
            assert_eq!(
                a.status, 415,
                "a gRPC server answers a non-gRPC content type with HTTP 415: {}",
                a.text
            );
        }
    }
    Ok(())
}
