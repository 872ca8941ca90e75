//! The generated document against the route table, the descriptor and the wire table.

use serde_json::Value;
use trident_core::{A2aError, ErrorKind, Operation};

use super::document;
use crate::routes::Routes;

fn doc() -> Value {
    document()
}

fn resolve<'a>(doc: &'a Value, reference: &str) -> &'a Value {
    let name = reference
        .strip_prefix("#/components/schemas/")
        .unwrap_or_else(|| panic!("unexpected $ref {reference}"));
    doc.pointer(&format!("/components/schemas/{name}"))
        .unwrap_or_else(|| panic!("dangling $ref {reference}"))
}

fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if k == "$ref" {
                    if let Some(s) = v.as_str() {
                        out.push(s);
                    }
                } else {
                    refs(v, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_route_is_an_operation_and_operation_ids_are_unique() {
    let d = doc();
    assert_eq!(d["openapi"], "3.1.0");
    assert_eq!(d["info"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(d["servers"][0]["url"], "/");
    let paths = d["paths"].as_object().expect("paths");
    let count: usize = paths
        .values()
        .map(|p| p.as_object().map_or(0, |o| o.len()))
        .sum();
    let routes = Routes::from_descriptor().expect("routes");
    assert_eq!(count, routes.all().len(), "one operation per route");
    let mut ids: Vec<&str> = paths
        .values()
        .flat_map(|p| p.as_object().into_iter().flat_map(|o| o.values()))
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    ids.sort_unstable();
    let before = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), before, "operationIds are unique");
    for (path, methods) in [
        ("/message:send", &["post"][..]),
        ("/{tenant}/message:stream", &["post"]),
        ("/tasks/{id}", &["get"]),
        ("/{tenant}/tasks", &["get"]),
        ("/tasks/{id}:cancel", &["post"]),
        ("/tasks/{id}:subscribe", &["get", "post"]),
        ("/{tenant}/tasks/{id}:subscribe", &["get", "post"]),
        ("/tasks/{taskId}/pushNotificationConfigs", &["get", "post"]),
        (
            "/{tenant}/tasks/{taskId}/pushNotificationConfigs/{id}",
            &["delete", "get"],
        ),
        ("/extendedAgentCard", &["get"]),
    ] {
        let got: Vec<&String> = paths[path].as_object().expect(path).keys().collect();
        assert_eq!(got, methods, "{path}");
    }
}

#[test]
fn parameters_follow_how_the_server_reads_requests() {
    let d = doc();
    let names = |path: &str, method: &str, place: &str| -> Vec<String> {
        d["paths"][path][method]["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == place)
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names("/tasks/{id}", "get", "path"), ["id"]);
    // `currentGeneration`: the A2A 1.1 preview's long poll.
    assert_eq!(
        names("/tasks/{id}", "get", "query"),
        ["tenant", "historyLength", "currentGeneration"]
    );
    assert_eq!(
        names("/{tenant}/tasks/{id}", "get", "query"),
        ["historyLength", "currentGeneration"]
    );
    assert_eq!(
        names("/tasks", "get", "query"),
        [
            "tenant",
            "contextId",
            "status",
            "pageSize",
            "pageToken",
            "historyLength",
            "statusTimestampAfter",
            "includeArtifacts"
        ]
    );
    let list = &d["paths"]["/tasks"]["get"]["parameters"];
    let param = |name: &str| {
        list.as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == name))
            .map(|p| p["schema"].clone())
            .expect(name)
    };
    assert_eq!(param("pageSize")["type"], "integer");
    assert_eq!(param("includeArtifacts")["type"], "boolean");
    assert_eq!(param("statusTimestampAfter")["format"], "date-time");
    assert_eq!(param("status")["$ref"], "#/components/schemas/TaskState");
    assert_eq!(
        names(
            "/{tenant}/tasks/{taskId}/pushNotificationConfigs/{id}",
            "delete",
            "path"
        ),
        ["tenant", "taskId", "id"]
    );
    // Body routes: no query parameters, the body without the path-bound fields.
    assert!(names("/tasks/{id}:cancel", "post", "query").is_empty());
    let body = &d["paths"]["/tasks/{id}:cancel"]["post"]["requestBody"];
    assert_eq!(body["required"], false, "an empty cancel body is fine");
    let schema = resolve(
        &d,
        body["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .expect("ref"),
    );
    assert!(schema["properties"].get("id").is_none());
    assert!(schema.get("required").is_none());
    let send = &d["paths"]["/message:send"]["post"]["requestBody"];
    assert_eq!(send["required"], true);
    assert_eq!(
        send["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/SendMessageRequest"
    );
    let create = &d["paths"]["/tasks/{taskId}/pushNotificationConfigs"]["post"]["requestBody"];
    let schema = resolve(
        &d,
        create["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .expect("ref"),
    );
    assert_eq!(schema["required"], serde_json::json!(["url"]));
    assert!(schema["properties"].get("taskId").is_none());
}

#[test]
fn schemas_are_protojson() {
    let d = doc();
    let s = |name: &str| d["components"]["schemas"][name].clone();
    // JSON names, REQUIRED fields.
    let task = s("Task");
    assert!(task["properties"]["contextId"].is_object());
    assert_eq!(task["required"], serde_json::json!(["id", "status"]));
    assert!(
        task["description"].as_str().is_some_and(|t| !t.is_empty()),
        "descriptions come from the proto comments"
    );
    // Enums as their value names.
    let state = s("TaskState");
    assert_eq!(state["type"], "string");
    assert_eq!(state["enum"][0], "TASK_STATE_UNSPECIFIED");
    assert_eq!(state["enum"].as_array().map(Vec::len), Some(9));
    // Oneofs as oneOf of "exactly this member".
    let part = s("Part");
    let choices: Vec<&Value> = part["oneOf"].as_array().expect("oneOf").iter().collect();
    assert_eq!(choices.len(), 4);
    assert_eq!(choices[1]["required"], serde_json::json!(["raw"]));
    assert_eq!(part["properties"]["raw"]["contentEncoding"], "base64");
    assert_eq!(
        part["properties"]["data"].get("type"),
        None,
        "any JSON value"
    );
    assert_eq!(
        s("StreamResponse")["oneOf"].as_array().map(Vec::len),
        Some(4)
    );
    assert_eq!(
        s("TaskStatus")["properties"]["timestamp"]["format"],
        "date-time"
    );
    assert_eq!(s("Task")["properties"]["metadata"]["type"], "object");
    // Maps.
    assert_eq!(
        s("AgentCard")["properties"]["securitySchemes"]["additionalProperties"]["$ref"],
        "#/components/schemas/SecurityScheme"
    );
    assert_eq!(
        s("OAuthFlows")["properties"]["implicit"]["deprecated"],
        true
    );
    // Every $ref resolves, and every message of the package reached by the service is there.
    let mut all = Vec::new();
    refs(&d, &mut all);
    for r in all {
        resolve(&d, r);
    }
    for name in [
        "SendMessageResponse",
        "ListTasksResponse",
        "AgentCard",
        "DeviceCodeOAuthFlow",
        "StringList",
        "GetTaskRequest",
        "TaskArtifactUpdateEvent",
    ] {
        assert!(s(name).is_object(), "{name}");
    }
}

#[test]
fn streams_are_server_sent_events_of_stream_response() {
    let d = doc();
    for (path, method) in [
        ("/message:stream", "post"),
        ("/tasks/{id}:subscribe", "get"),
        ("/tasks/{id}:subscribe", "post"),
        ("/{tenant}/tasks/{id}:subscribe", "post"),
    ] {
        let ok = &d["paths"][path][method]["responses"]["200"]["content"];
        assert!(ok.get("application/json").is_none(), "{path}");
        assert_eq!(
            ok["text/event-stream"]["schema"]["$ref"], "#/components/schemas/StreamEvent",
            "{path}"
        );
    }
    let event = &d["components"]["schemas"]["StreamEvent"];
    assert_eq!(
        event["properties"]["data"]["contentSchema"]["$ref"],
        "#/components/schemas/StreamResponse"
    );
}

#[test]
fn error_responses_cover_the_wire_table_and_match_error_body() {
    let d = doc();
    let responses = |path: &str, method: &str| -> Vec<String> {
        d["paths"][path][method]["responses"]
            .as_object()
            .expect("responses")
            .keys()
            .cloned()
            .collect()
    };
    let expected = |op: Operation, body: bool| -> Vec<String> {
        let mut codes: Vec<String> = super::error_kinds(op, body)
            .into_iter()
            .map(|k| k.wire().http.to_string())
            .collect();
        codes.push("200".into());
        codes.sort();
        codes.dedup();
        codes
    };
    let get = responses("/tasks/{id}", "get");
    assert_eq!(get, expected(Operation::GetTask, false));
    for code in ["200", "400", "401", "403", "404", "500", "503"] {
        assert!(get.iter().any(|c| c == code), "GetTask answers {code}");
    }
    let list = responses("/tasks", "get");
    assert_eq!(list, expected(Operation::ListTasks, false));
    assert!(
        !list.iter().any(|c| c == "404"),
        "ListTasks has no TaskNotFound"
    );
    // Every kind of the wire table is reachable on some route.
    let mut statuses = std::collections::BTreeSet::new();
    for op in Operation::ALL {
        for body in [false, true] {
            statuses.extend(
                super::error_kinds(op, body)
                    .into_iter()
                    .map(|k| k.wire().http),
            );
        }
    }
    for kind in ErrorKind::ALL {
        if kind != ErrorKind::MethodNotFound {
            assert!(statuses.contains(&kind.wire().http), "{kind:?}");
        }
    }
    // error_body's shape is what the schema says.
    let body = crate::error_body(&A2aError::task_not_found("t1").with_violation("id", "bad"));
    let status = &d["components"]["schemas"]["ErrorStatus"];
    for key in status["required"].as_array().expect("required") {
        let key = key.as_str().expect("key");
        assert!(body["error"].get(key).is_some(), "{key}");
    }
    assert!(
        status["properties"]["status"]["enum"]
            .as_array()
            .expect("enum")
            .contains(&body["error"]["status"])
    );
    let info = &d["components"]["schemas"]["ErrorInfo"];
    assert_eq!(
        body["error"]["details"][0]["@type"],
        info["properties"]["@type"]["const"]
    );
    assert_eq!(
        body["error"]["details"][0]["domain"],
        info["properties"]["domain"]["const"]
    );
    let bad = &d["components"]["schemas"]["BadRequest"];
    assert_eq!(
        body["error"]["details"][1]["@type"],
        bad["properties"]["@type"]["const"]
    );
}
