//! `FILE_DESCRIPTOR_SET` against the digest: messages and fields (§1.5), service (§1.3), enums
//! (§1.4), and the extension options prost-types drops (`field_behavior`, `google.api.http`).

use std::collections::{BTreeMap, BTreeSet};

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};

use super::facts::{FACTS, Fact};
use crate::{FILE_DESCRIPTOR_SET, Role, SERVICE_NAME, TaskState};

const PACKAGE: &str = "lf.a2a.v1";

/// `(rpc, request, response, server-streaming)` in declaration order (digest §1.3).
const RPCS: [(&str, &str, &str, bool); 11] = [
    (
        "SendMessage",
        ".lf.a2a.v1.SendMessageRequest",
        ".lf.a2a.v1.SendMessageResponse",
        false,
    ),
    (
        "SendStreamingMessage",
        ".lf.a2a.v1.SendMessageRequest",
        ".lf.a2a.v1.StreamResponse",
        true,
    ),
    (
        "GetTask",
        ".lf.a2a.v1.GetTaskRequest",
        ".lf.a2a.v1.Task",
        false,
    ),
    (
        "ListTasks",
        ".lf.a2a.v1.ListTasksRequest",
        ".lf.a2a.v1.ListTasksResponse",
        false,
    ),
    (
        "CancelTask",
        ".lf.a2a.v1.CancelTaskRequest",
        ".lf.a2a.v1.Task",
        false,
    ),
    (
        "SubscribeToTask",
        ".lf.a2a.v1.SubscribeToTaskRequest",
        ".lf.a2a.v1.StreamResponse",
        true,
    ),
    (
        "CreateTaskPushNotificationConfig",
        ".lf.a2a.v1.TaskPushNotificationConfig",
        ".lf.a2a.v1.TaskPushNotificationConfig",
        false,
    ),
    (
        "GetTaskPushNotificationConfig",
        ".lf.a2a.v1.GetTaskPushNotificationConfigRequest",
        ".lf.a2a.v1.TaskPushNotificationConfig",
        false,
    ),
    (
        "ListTaskPushNotificationConfigs",
        ".lf.a2a.v1.ListTaskPushNotificationConfigsRequest",
        ".lf.a2a.v1.ListTaskPushNotificationConfigsResponse",
        false,
    ),
    (
        "GetExtendedAgentCard",
        ".lf.a2a.v1.GetExtendedAgentCardRequest",
        ".lf.a2a.v1.AgentCard",
        false,
    ),
    (
        "DeleteTaskPushNotificationConfig",
        ".lf.a2a.v1.DeleteTaskPushNotificationConfigRequest",
        ".google.protobuf.Empty",
        false,
    ),
];

/// `(rpc, verb, path, body, method_signature)` of the primary `google.api.http` binding (digest
/// §1.3). Each RPC also has exactly one additional binding: same verb and body, path prefixed
/// with `/{tenant}`.
const HTTP: [(&str, &str, &str, &str, &[&str]); 11] = [
    ("SendMessage", "post", "/message:send", "*", &[]),
    ("SendStreamingMessage", "post", "/message:stream", "*", &[]),
    ("GetTask", "get", "/tasks/{id=*}", "", &["id"]),
    ("ListTasks", "get", "/tasks", "", &[]),
    ("CancelTask", "post", "/tasks/{id=*}:cancel", "*", &[]),
    ("SubscribeToTask", "get", "/tasks/{id=*}:subscribe", "", &[]),
    (
        "CreateTaskPushNotificationConfig",
        "post",
        "/tasks/{task_id=*}/pushNotificationConfigs",
        "*",
        &["task_id,config"],
    ),
    (
        "GetTaskPushNotificationConfig",
        "get",
        "/tasks/{task_id=*}/pushNotificationConfigs/{id=*}",
        "",
        &["task_id,id"],
    ),
    (
        "ListTaskPushNotificationConfigs",
        "get",
        "/tasks/{task_id=*}/pushNotificationConfigs",
        "",
        &["task_id"],
    ),
    ("GetExtendedAgentCard", "get", "/extendedAgentCard", "", &[]),
    (
        "DeleteTaskPushNotificationConfig",
        "delete",
        "/tasks/{task_id=*}/pushNotificationConfigs/{id=*}",
        "",
        &["task_id,id"],
    ),
];

const TASK_STATES: [(&str, i32); 9] = [
    ("TASK_STATE_UNSPECIFIED", 0),
    ("TASK_STATE_SUBMITTED", 1),
    ("TASK_STATE_WORKING", 2),
    ("TASK_STATE_COMPLETED", 3),
    ("TASK_STATE_FAILED", 4),
    ("TASK_STATE_CANCELED", 5),
    ("TASK_STATE_INPUT_REQUIRED", 6),
    ("TASK_STATE_REJECTED", 7),
    ("TASK_STATE_AUTH_REQUIRED", 8),
];

const ROLES: [(&str, i32); 3] = [("ROLE_UNSPECIFIED", 0), ("ROLE_USER", 1), ("ROLE_AGENT", 2)];

/// The `lf/a2a/v1/a2a.proto` entry of the exported descriptor set.
fn a2a_file() -> FileDescriptorProto {
    let set = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("FILE_DESCRIPTOR_SET decodes");
    let mut files: Vec<_> = set
        .file
        .into_iter()
        .filter(|f| f.package() == PACKAGE)
        .collect();
    assert_eq!(files.len(), 1, "exactly one file in package {PACKAGE}");
    let file = files.remove(0);
    assert_eq!(file.name(), "lf/a2a/v1/a2a.proto");
    assert_eq!(file.syntax(), "proto3");
    file
}

fn pool() -> DescriptorPool {
    DescriptorPool::decode(FILE_DESCRIPTOR_SET).expect("FILE_DESCRIPTOR_SET decodes into a pool")
}

/// The facts grouped by message, in digest order.
fn facts_by_message() -> BTreeMap<&'static str, Vec<&'static Fact>> {
    let mut out: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for fact in &FACTS {
        out.entry(fact.0).or_default().push(fact);
    }
    out
}

/// `security_schemes` -> `SecuritySchemesEntry`, protoc's name for a map's entry type.
fn map_entry_name(field: &str) -> String {
    let mut out = String::new();
    for word in field.split('_') {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out + "Entry"
}

fn scalar(ty: &str) -> Option<Type> {
    Some(match ty {
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "bool" => Type::Bool,
        "int32" => Type::Int32,
        "int64" => Type::Int64,
        _ => return None,
    })
}

/// Checks that `field` has the digest type `ty` (not a map: see `check_field`).
fn check_type(file: &FileDescriptorProto, field: &FieldDescriptorProto, ty: &str, at: &str) {
    if let Some(expected) = scalar(ty) {
        assert_eq!(field.r#type(), expected, "{at}: type");
        assert_eq!(field.type_name(), "", "{at}: scalar has no type_name");
    } else if ty.starts_with("google.protobuf.") {
        assert_eq!(field.r#type(), Type::Message, "{at}: type");
        assert_eq!(field.type_name(), format!(".{ty}"), "{at}: type_name");
    } else if file.enum_type.iter().any(|e| e.name() == ty) {
        assert_eq!(field.r#type(), Type::Enum, "{at}: type");
        assert_eq!(
            field.type_name(),
            format!(".{PACKAGE}.{ty}"),
            "{at}: type_name"
        );
    } else {
        assert!(
            file.message_type.iter().any(|m| m.name() == ty),
            "{at}: unknown type {ty}"
        );
        assert_eq!(field.r#type(), Type::Message, "{at}: type");
        assert_eq!(
            field.type_name(),
            format!(".{PACKAGE}.{ty}"),
            "{at}: type_name"
        );
    }
}

fn check_field(file: &FileDescriptorProto, msg: &DescriptorProto, fact: &Fact) {
    let &(message, name, number, ty, json_name, label, oneof, _required) = fact;
    let at = format!("{message}.{name}");
    let field = msg
        .field
        .iter()
        .find(|f| f.name() == name)
        .unwrap_or_else(|| panic!("{at}: missing from the descriptor"));
    assert_eq!(field.number(), number, "{at}: number");
    assert_eq!(field.json_name(), json_name, "{at}: json_name");

    let oneof_name = field.oneof_index.map(|i| {
        let index = usize::try_from(i).expect("oneof_index is non-negative");
        msg.oneof_decl[index].name().to_owned()
    });
    match label {
        "singular" | "optional" | "oneof" => {
            assert_eq!(field.label(), Label::Optional, "{at}: label");
            check_type(file, field, ty, &at);
        }
        "repeated" => {
            assert_eq!(field.label(), Label::Repeated, "{at}: label");
            check_type(file, field, ty, &at);
        }
        "map" => {
            assert_eq!(
                field.label(),
                Label::Repeated,
                "{at}: a map is a repeated entry"
            );
            assert_eq!(field.r#type(), Type::Message, "{at}: type");
            let entry_name = map_entry_name(name);
            assert_eq!(
                field.type_name(),
                format!(".{PACKAGE}.{message}.{entry_name}"),
                "{at}"
            );
            let entry = msg
                .nested_type
                .iter()
                .find(|n| n.name() == entry_name)
                .unwrap_or_else(|| panic!("{at}: no nested {entry_name}"));
            assert!(
                entry.options.as_ref().is_some_and(|o| o.map_entry()),
                "{at}: map_entry"
            );
            let value_type = ty
                .strip_prefix("map<string, ")
                .and_then(|t| t.strip_suffix('>'))
                .unwrap_or_else(|| panic!("{at}: map label on non-map type {ty}"));
            let [key, value] = entry.field.as_slice() else {
                panic!("{at}: a map entry has exactly two fields");
            };
            assert_eq!(
                (key.name(), key.number(), key.r#type()),
                ("key", 1, Type::String),
                "{at}"
            );
            assert_eq!((value.name(), value.number()), ("value", 2), "{at}");
            check_type(file, value, value_type, &format!("{at} (value)"));
        }
        other => panic!("{at}: unknown label {other}"),
    }
    assert!(
        !ty.starts_with("map<") || label == "map",
        "{at}: map type without map label"
    );

    // Presence: `optional` is a proto3_optional field in its synthetic `_name` oneof; a oneof
    // member sits in the named oneof; everything else is in no oneof.
    assert_eq!(
        field.proto3_optional(),
        label == "optional",
        "{at}: proto3_optional"
    );
    let expected_oneof = match label {
        "optional" => Some(format!("_{name}")),
        "oneof" => {
            assert!(!oneof.is_empty(), "{at}: oneof label without a oneof name");
            Some(oneof.to_owned())
        }
        _ => {
            assert!(oneof.is_empty(), "{at}: oneof name on a {label} field");
            None
        }
    };
    assert_eq!(oneof_name, expected_oneof, "{at}: oneof");
}

#[test]
fn file_header() {
    let file = a2a_file();
    assert_eq!(file.package(), PACKAGE);
    assert_eq!(file.message_type.len(), 44, "44 messages");
    assert_eq!(file.enum_type.len(), 2, "2 enums");
    assert_eq!(file.service.len(), 1, "1 service");
    for import in [
        "google/api/annotations.proto",
        "google/api/client.proto",
        "google/api/field_behavior.proto",
        "google/protobuf/empty.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/timestamp.proto",
    ] {
        assert!(
            file.dependency.iter().any(|d| d == import),
            "imports {import}"
        );
    }
    // Extension options are kept: the raw encoding still holds the google.api.http option.
    assert!(pool().get_extension_by_name("google.api.http").is_some());
}

#[test]
fn messages_and_fields_match_the_digest() {
    let file = a2a_file();
    let facts = facts_by_message();
    assert_eq!(facts.len(), 44, "the table covers 44 messages");

    let in_file: BTreeSet<&str> = file.message_type.iter().map(|m| m.name()).collect();
    let in_table: BTreeSet<&str> = facts.keys().copied().collect();
    assert_eq!(in_file, in_table, "message set");

    for msg in &file.message_type {
        let rows = &facts[msg.name()];
        for fact in rows {
            check_field(&file, msg, fact);
        }
        let in_file: BTreeSet<&str> = msg.field.iter().map(|f| f.name()).collect();
        let in_table: BTreeSet<&str> = rows.iter().map(|f| f.1).collect();
        assert_eq!(in_file, in_table, "{}: field set", msg.name());
        assert_eq!(
            msg.field.len(),
            rows.len(),
            "{}: no duplicate fields",
            msg.name()
        );

        // Only map entries are nested; no oneof exists that the table does not name (synthetic
        // `_x` oneofs of `optional` fields included).
        for nested in &msg.nested_type {
            assert!(
                nested.options.as_ref().is_some_and(|o| o.map_entry()),
                "{}",
                msg.name()
            );
        }
        assert!(msg.enum_type.is_empty(), "{}: no nested enums", msg.name());
        let oneofs: BTreeSet<String> = msg.oneof_decl.iter().map(|o| o.name().to_owned()).collect();
        let expected: BTreeSet<String> = rows
            .iter()
            .filter_map(|f| match f.5 {
                "optional" => Some(format!("_{}", f.1)),
                "oneof" => Some(f.6.to_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(oneofs, expected, "{}: oneofs", msg.name());
    }
}

#[test]
fn digest_counts_ten_optional_fields() {
    // §1.1/§2.4: the proto3 `optional` keyword is used on exactly 10 scalar fields; the 1.1
    // preview adds two (`ifGenerationMatch`, `currentGeneration`).
    let optional: Vec<_> = FACTS
        .iter()
        .filter(|f| f.5 == "optional")
        .map(|f| (f.0, f.1))
        .collect();
    assert_eq!(optional.len(), 12, "{optional:?}");
}

#[test]
fn service_rpcs_in_order() {
    let file = a2a_file();
    let service = &file.service[0];
    assert_eq!(format!("{PACKAGE}.{}", service.name()), SERVICE_NAME);
    assert_eq!(service.name(), "A2AService");
    let actual: Vec<_> = service
        .method
        .iter()
        .map(|m| {
            (
                m.name(),
                m.input_type(),
                m.output_type(),
                m.server_streaming(),
            )
        })
        .collect();
    assert_eq!(actual, RPCS);
    for m in &service.method {
        assert!(!m.client_streaming(), "{}: no client streaming", m.name());
    }
}

#[test]
fn enums_match_the_digest() {
    let file = a2a_file();
    let values = |name: &str| -> Vec<(String, i32)> {
        let e = file
            .enum_type
            .iter()
            .find(|e| e.name() == name)
            .expect("enum exists");
        e.value
            .iter()
            .map(|v| (v.name().to_owned(), v.number()))
            .collect()
    };
    let owned = |table: &[(&str, i32)]| -> Vec<(String, i32)> {
        table.iter().map(|&(n, v)| (n.to_owned(), v)).collect()
    };
    assert_eq!(values("TaskState"), owned(&TASK_STATES));
    assert_eq!(values("Role"), owned(&ROLES));

    // The generated Rust enums agree with the descriptor (names are also the JSON strings).
    for (name, number) in TASK_STATES {
        let state = TaskState::try_from(number).expect("known TaskState number");
        assert_eq!(state.as_str_name(), name);
        assert_eq!(TaskState::from_str_name(name), Some(state));
    }
    assert!(TaskState::try_from(9).is_err());
    for (name, number) in ROLES {
        let role = Role::try_from(number).expect("known Role number");
        assert_eq!(role.as_str_name(), name);
        assert_eq!(Role::from_str_name(name), Some(role));
    }
    assert!(Role::try_from(3).is_err());
}

#[test]
fn required_field_behavior_matches_the_digest() {
    let pool = pool();
    let behavior = pool
        .get_extension_by_name("google.api.field_behavior")
        .expect("field_behavior extension in the pool");
    assert_eq!(behavior.number(), 1052);

    let mut required = 0;
    for &(message, field, _, _, _, _, _, expected) in &FACTS {
        let msg = pool
            .get_message_by_name(&format!("{PACKAGE}.{message}"))
            .unwrap_or_else(|| panic!("{message} in the pool"));
        let desc = msg
            .get_field_by_name(field)
            .unwrap_or_else(|| panic!("{message}.{field}"));
        let options = desc.options();
        let behaviors: Vec<i32> = match options.get_extension(&behavior).as_ref() {
            Value::List(values) => values.iter().filter_map(Value::as_enum_number).collect(),
            other => panic!("{message}.{field}: field_behavior is {other:?}"),
        };
        // REQUIRED (2) is the only field_behavior value the proto uses (§1.1).
        assert!(
            behaviors.iter().all(|&b| b == 2),
            "{message}.{field}: {behaviors:?}"
        );
        assert_eq!(
            behaviors.contains(&2),
            expected,
            "{message}.{field}: REQUIRED"
        );
        required += usize::from(expected);
    }
    assert!(required > 0);

    // The pool agrees with prost-types: no A2A field exists that the table does not list.
    for msg in pool
        .all_messages()
        .filter(|m| m.package_name() == PACKAGE && !m.is_map_entry())
    {
        for field in msg.fields() {
            let known = FACTS
                .iter()
                .any(|f| f.0 == msg.name() && f.1 == field.name());
            assert!(known, "{}.{} is not in the table", msg.name(), field.name());
        }
    }
}

/// `(verb, path, body)` of one `google.api.http` rule.
fn binding(rule: &DynamicMessage, at: &str) -> (String, String, String) {
    let verbs: Vec<_> = ["get", "put", "post", "delete", "patch", "custom"]
        .into_iter()
        .filter(|v| rule.has_field_by_name(v))
        .collect();
    let [verb] = verbs.as_slice() else {
        panic!("{at}: exactly one HTTP pattern, got {verbs:?}");
    };
    let get = |name: &str| -> String {
        let value = rule
            .get_field_by_name(name)
            .unwrap_or_else(|| panic!("{at}: no {name}"));
        value
            .as_str()
            .unwrap_or_else(|| panic!("{at}: {name} is not a string"))
            .to_owned()
    };
    (verb.to_string(), get(verb), get("body"))
}

#[test]
fn http_rules_match_the_digest() {
    let pool = pool();
    let http = pool
        .get_extension_by_name("google.api.http")
        .expect("google.api.http extension");
    assert_eq!(http.number(), 72_295_728);
    let signature = pool
        .get_extension_by_name("google.api.method_signature")
        .expect("google.api.method_signature extension");
    let service = pool
        .get_service_by_name(SERVICE_NAME)
        .expect("A2AService in the pool");
    let methods: Vec<_> = service.methods().collect();
    assert_eq!(methods.len(), HTTP.len());

    for (method, &(name, verb, path, body, signatures)) in methods.iter().zip(&HTTP) {
        assert_eq!(method.name(), name);
        let options = method.options();
        let rule = options.get_extension(&http);
        let rule = rule
            .as_message()
            .unwrap_or_else(|| panic!("{name}: http rule is a message"));
        let expected = (verb.to_owned(), path.to_owned(), body.to_owned());
        assert_eq!(binding(rule, name), expected, "{name}: primary binding");

        let additional = rule
            .get_field_by_name("additional_bindings")
            .expect("field exists");
        let additional = additional
            .as_list()
            .expect("additional_bindings is repeated");
        let [tenant] = additional else {
            panic!(
                "{name}: exactly one additional binding, got {}",
                additional.len()
            );
        };
        let tenant = tenant.as_message().expect("a binding is a message");
        let expected = (
            verb.to_owned(),
            format!("/{{tenant}}{path}"),
            body.to_owned(),
        );
        assert_eq!(binding(tenant, name), expected, "{name}: tenant binding");
        let nested = tenant
            .get_field_by_name("additional_bindings")
            .expect("field exists");
        assert!(
            nested.as_list().is_some_and(<[_]>::is_empty),
            "{name}: no nested bindings"
        );

        let actual: Vec<String> = match options.get_extension(&signature).as_ref() {
            Value::List(values) => values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            other => panic!("{name}: method_signature is {other:?}"),
        };
        assert_eq!(actual, signatures, "{name}: method_signature");
    }
}
