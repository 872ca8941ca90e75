//! Test support: a strict JSON Schema of a message of OUR proto (`lf.a2a.v1`), generated from
//! `trident_proto::FILE_DESCRIPTOR_SET` the way the official schema is generated from the
//! v1.0 proto, and a validator for the subset of JSON Schema it uses.
//!
//! The schema is strict like the official one: every object is `additionalProperties: false`,
//! members are named by their ProtoJSON (`json_name`) names only, fields marked
//! `(google.api.field_behavior) = REQUIRED` are `required`, enums are their value names, and
//! at most one member of each `oneof` is present. Well-known types take their ProtoJSON forms
//! (`Struct` any object, `Value` anything, `Timestamp` a string).
//!
//! The validator knows exactly the keywords the generator writes (`$ref`, `type`, `enum`,
//! `properties`, `required`, `additionalProperties`, `items`, `allOf`, `not`) and panics on
//! any other, so it cannot pass a schema by ignoring part of it.

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value, json};

/// `google.api.FieldBehavior.REQUIRED`.
const REQUIRED: i32 = 2;

/// The JSON Schema (draft 2020-12) of the message `full_name` (e.g. `lf.a2a.v1.AgentCard`),
/// every message it reaches in `$defs`.
pub fn of(full_name: &str) -> Value {
    let pool = DescriptorPool::decode(trident_proto::FILE_DESCRIPTOR_SET).expect("descriptors");
    let root = pool
        .get_message_by_name(full_name)
        .unwrap_or_else(|| panic!("no message {full_name}"));
    let mut defs = Map::new();
    let mut todo = vec![root];
    while let Some(message) = todo.pop() {
        if defs.contains_key(message.full_name()) {
            continue;
        }
        let schema = message_schema(&pool, &message, &mut todo);
        defs.insert(message.full_name().to_owned(), schema);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/$defs/{full_name}"),
        "$defs": defs,
    })
}

fn is_required(pool: &DescriptorPool, field: &FieldDescriptor) -> bool {
    let ext = pool
        .get_extension_by_name("google.api.field_behavior")
        .expect("google.api.field_behavior is in the descriptor set");
    match field.options().get_extension(&ext).as_ref() {
        prost_reflect::Value::List(values) => {
            values.iter().any(|v| v.as_enum_number() == Some(REQUIRED))
        }
        _ => false,
    }
}

fn message_schema(
    pool: &DescriptorPool,
    message: &MessageDescriptor,
    todo: &mut Vec<MessageDescriptor>,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in message.fields() {
        properties.insert(field.json_name().to_owned(), field_schema(&field, todo));
        if is_required(pool, &field) {
            required.push(json!(field.json_name()));
        }
    }
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    // At most one member of a oneof (proto3 `optional` fields are synthetic oneofs of one).
    let mut exclusive = Vec::new();
    for oneof in message.oneofs().filter(|o| !o.is_synthetic()) {
        let names: Vec<String> = oneof.fields().map(|f| f.json_name().to_owned()).collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                exclusive.push(json!({"not": {"required": [a, b]}}));
            }
        }
    }
    if !exclusive.is_empty() {
        schema["allOf"] = Value::Array(exclusive);
    }
    schema
}

fn field_schema(field: &FieldDescriptor, todo: &mut Vec<MessageDescriptor>) -> Value {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            unreachable!("a map field's kind is its entry message")
        };
        let value = entry.map_entry_value_field();
        return json!({
            "type": "object",
            "additionalProperties": kind_schema(&value.kind(), todo),
        });
    }
    let item = kind_schema(&field.kind(), todo);
    if field.is_list() {
        json!({"type": "array", "items": item})
    } else {
        item
    }
}

fn kind_schema(kind: &Kind, todo: &mut Vec<MessageDescriptor>) -> Value {
    match kind {
        Kind::Double | Kind::Float => json!({"type": "number"}),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Uint32 | Kind::Fixed32 => {
            json!({"type": "integer"})
        }
        // ProtoJSON writes 64-bit integers as strings and reads either.
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 | Kind::Uint64 | Kind::Fixed64 => {
            json!({"type": ["integer", "string"]})
        }
        Kind::Bool => json!({"type": "boolean"}),
        Kind::String | Kind::Bytes => json!({"type": "string"}),
        Kind::Enum(e) => {
            let names: Vec<String> = e.values().map(|v| v.name().to_owned()).collect();
            json!({"type": "string", "enum": names})
        }
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Struct" => json!({"type": "object"}),
            "google.protobuf.Value" => json!({}),
            "google.protobuf.ListValue" => json!({"type": "array"}),
            "google.protobuf.Timestamp" | "google.protobuf.Duration" => json!({"type": "string"}),
            name => {
                todo.push(m.clone());
                json!({"$ref": format!("#/$defs/{name}")})
            }
        },
    }
}

/// Where `instance` breaks `schema` (a document [`of`] wrote): one line per violation, with
/// its JSON path; empty when it is valid.
pub fn violations(schema: &Value, instance: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, instance, "$", &mut out);
    out
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "null" => v.is_null(),
        other => panic!("unknown JSON Schema type {other:?}"),
    }
}

fn check(root: &Value, schema: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    let keywords = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: a schema must be an object: {schema}"));
    let declared = keywords.get("properties").and_then(Value::as_object);
    for (keyword, s) in keywords {
        match keyword.as_str() {
            "$schema" | "$defs" => {}
            "$ref" => {
                let name = s
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .unwrap_or_else(|| panic!("unsupported $ref {s}"));
                let target = root["$defs"]
                    .get(name)
                    .unwrap_or_else(|| panic!("$ref to a missing definition {name}"));
                check(root, target, v, at, out);
            }
            "type" => {
                let ok = match s {
                    Value::String(t) => has_type(v, t),
                    Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| has_type(v, t)),
                    _ => panic!("bad type keyword {s}"),
                };
                if !ok {
                    out.push(format!("{at}: {v} is not of type {s}"));
                }
            }
            "enum" => {
                if !s.as_array().is_some_and(|e| e.contains(v)) {
                    out.push(format!("{at}: {v} is not one of {s}"));
                }
            }
            "properties" => {
                if let (Some(props), Some(obj)) = (s.as_object(), v.as_object()) {
                    for (name, p) in props {
                        if let Some(member) = obj.get(name) {
                            check(root, p, member, &format!("{at}.{name}"), out);
                        }
                    }
                }
            }
            "required" => {
                if let (Some(names), Some(obj)) = (s.as_array(), v.as_object()) {
                    for name in names.iter().filter_map(Value::as_str) {
                        if !obj.contains_key(name) {
                            out.push(format!("{at}: required member {name:?} is missing"));
                        }
                    }
                }
            }
            "additionalProperties" => {
                let Some(obj) = v.as_object() else { continue };
                for (name, member) in obj {
                    if declared.is_some_and(|d| d.contains_key(name)) {
                        continue;
                    }
                    match s {
                        Value::Bool(false) => {
                            out.push(format!("{at}: member {name:?} is not allowed"));
                        }
                        Value::Bool(true) => {}
                        sub => check(root, sub, member, &format!("{at}.{name}"), out),
                    }
                }
            }
            "items" => {
                if let Some(items) = v.as_array() {
                    for (i, item) in items.iter().enumerate() {
                        check(root, s, item, &format!("{at}[{i}]"), out);
                    }
                }
            }
            "allOf" => {
                for sub in s.as_array().expect("allOf is a list") {
                    check(root, sub, v, at, out);
                }
            }
            "not" => {
                let mut inner = Vec::new();
                check(root, s, v, at, &mut inner);
                if inner.is_empty() {
                    out.push(format!("{at}: must not match {s}"));
                }
            }
            other => panic!("the validator does not implement the keyword {other:?}"),
        }
    }
}

/// The generated schema is strict and the validator applies it: a card with every REQUIRED
/// member passes, and an unknown member, a missing REQUIRED member, a wrong type, an enum
/// number, a non-ProtoJSON name and two members of one oneof each fail.
#[test]
fn the_generated_card_schema_is_strict() {
    let schema = of("lf.a2a.v1.AgentCard");
    let card = trident_core::default_card("Demo", "a demo");
    let mut card = serde_json::to_value(&card).expect("card JSON");
    card["supportedInterfaces"] = json!([
        {"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]);
    card["securitySchemes"] = json!({
        "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}
    });
    assert_eq!(violations(&schema, &card), Vec::<String>::new(), "{card}");

    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut c = card.clone();
        edit(&mut c);
        violations(&schema, &c)
    };
    let unknown = broken(&|c| c["url"] = json!("http://a/"));
    assert_eq!(unknown, ["$: member \"url\" is not allowed"]);
    let missing = broken(&|c| {
        c.as_object_mut().expect("object").remove("name");
    });
    assert_eq!(missing, ["$: required member \"name\" is missing"]);
    let wrong = broken(&|c| c["capabilities"]["streaming"] = json!("yes"));
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    let proto_name = broken(&|c| c["default_input_modes"] = json!(["text/plain"]));
    assert_eq!(
        proto_name,
        ["$: member \"default_input_modes\" is not allowed"]
    );
    let both_spellings = broken(&|c| {
        c["securitySchemes"]["key"]["type"] = json!("apiKey");
    });
    assert_eq!(
        both_spellings,
        ["$.securitySchemes.key: member \"type\" is not allowed"]
    );
    let two_of_a_oneof = broken(&|c| {
        c["securitySchemes"]["key"]["mtlsSecurityScheme"] = json!({});
    });
    assert_eq!(two_of_a_oneof.len(), 1, "{two_of_a_oneof:?}");

    let task = of("lf.a2a.v1.TaskStatus");
    assert_eq!(
        violations(&task, &json!({"state": "TASK_STATE_WORKING"})),
        Vec::<String>::new()
    );
    assert!(
        !violations(&task, &json!({"state": 3})).is_empty(),
        "an enum is its value names"
    );
}
