//! The OpenAPI 3.1 document of the HTTP+JSON binding, generated from our descriptor set.
//!
//! Nothing here is written by hand per route or per message: paths come from the route table
//! ([`Routes`], itself read from the `google.api.http` rules), parameters and bodies from the
//! request messages (as the server reads them: path variables, then the query string of
//! body-less routes or the JSON body of `body: "*"` routes), schemas from the messages with
//! their ProtoJSON names, descriptions from the proto's comments, and error responses from
//! the one wire table ([`ErrorKind::wire`]).
//!
//! Served at `GET /openapi.json` by `trident serve` and written to `docs/openapi.json` by
//! `trident openapi`; a test fails when the committed file is stale.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use prost_reflect::{
    DescriptorPool, EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor,
    Value,
};
use serde_json::{Map, json};
use trident_core::{BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE, ErrorKind, Operation};

use crate::routes::{Route, RouteError, Routes, Segment, Var};

/// Where the server serves the document.
pub const PATH: &str = "/openapi.json";

/// The OpenAPI 3.1 document of the HTTP+JSON binding.
///
/// # Panics
///
/// Only if the descriptor set compiled into `trident-proto` is defective (a build defect that
/// this crate's tests catch), never because of anything a client sends.
pub fn document() -> serde_json::Value {
    #[allow(clippy::expect_used)]
    try_document().expect("the compiled-in descriptor set yields an OpenAPI document")
}

/// [`document`], with the descriptor defect as an error instead of a panic.
pub fn try_document() -> Result<serde_json::Value, RouteError> {
    let pool = DescriptorPool::decode(trident_proto::FILE_DESCRIPTOR_SET)?;
    let service = pool
        .get_service_by_name(trident_proto::SERVICE_NAME)
        .ok_or(RouteError::Missing(trident_proto::SERVICE_NAME))?;
    let routes = Routes::from_descriptor()?;
    let mut g = Gen::new(&pool);

    let methods: HashMap<Operation, MethodDescriptor> = service
        .methods()
        .filter_map(|m| Operation::from_name(m.name()).map(|op| (op, m)))
        .collect();
    // Every request and response message is a component, even those only read from the path
    // and query string, so clients get the full model.
    for m in methods.values() {
        g.message_ref(&m.input());
        g.message_ref(&m.output());
    }

    let mut paths: BTreeMap<String, Map<String, serde_json::Value>> = BTreeMap::new();
    for route in routes.all() {
        let method = methods
            .get(&route.op)
            .ok_or(RouteError::NoRpc(route.op.name()))?;
        let operation = g.operation(route, method)?;
        paths
            .entry(path_template(route, &method.input())?)
            .or_default()
            .insert(route.method.to_ascii_lowercase(), operation);
    }
    g.drain();

    let mut schemas: Map<String, serde_json::Value> = g.schemas.into_iter().collect();
    schemas.extend(error_schemas());
    let service_doc = g.comments.of_service(&service);
    Ok(json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Trident A2A HTTP+JSON binding",
            "version": env!("CARGO_PKG_VERSION"),
            "description": format!(
                "The HTTP+JSON (REST) binding of the Agent2Agent (A2A) protocol v{version} as \
                 served by Trident, generated from the `{service}` descriptor \
                 (`proto/lf/a2a/v1/a2a.proto`): routes from its `google.api.http` rules, \
                 schemas from its messages.\n\n{service_doc}\n\n\
                 Bodies are ProtoJSON: lowerCamelCase member names (snake_case is accepted on \
                 input), enums as their value names (integers are accepted on input), a oneof \
                 as exactly one of its members, 64-bit integers as strings, bytes as base64, \
                 timestamps as RFC 3339 strings. Requests may be `application/json` or \
                 `application/a2a+json`; the protocol version may be sent as the `A2A-Version` \
                 header or query parameter. Every route also exists under a `/{{tenant}}` \
                 prefix. Errors are AIP-193 bodies (`ErrorResponse`) whose `details` carry a \
                 `google.rpc.ErrorInfo` (domain `{ERROR_DOMAIN}`) with the A2A reason.",
                version = trident_core::PROTOCOL_VERSION,
                service = trident_proto::SERVICE_NAME,
            ),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "/", "description": "The agent's HTTP+JSON interface URL (its origin for `trident serve`)"}],
        "tags": [{"name": "A2AService", "description": service_doc}],
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The proto field a path variable binds.
fn var_field(v: Var) -> &'static str {
    match v {
        Var::Tenant => "tenant",
        Var::Id => "id",
        Var::TaskId => "task_id",
    }
}

/// The JSON name of a path variable's field in `input` (its OpenAPI parameter name).
fn var_name(v: Var, input: &MessageDescriptor) -> Result<String, RouteError> {
    input
        .get_field_by_name(var_field(v))
        .map(|f| f.json_name().to_owned())
        .ok_or_else(|| RouteError::NoField {
            message: input.name().to_owned(),
            field: var_field(v),
        })
}

fn path_vars(route: &Route) -> impl Iterator<Item = Var> + '_ {
    route.segments.iter().filter_map(|s| match s {
        Segment::Var(v) => Some(*v),
        Segment::Literal(_) => None,
    })
}

/// `/tasks/{id}:cancel` and friends: the route's segments with OpenAPI path templating.
fn path_template(route: &Route, input: &MessageDescriptor) -> Result<String, RouteError> {
    let mut out = String::new();
    for seg in &route.segments {
        out.push('/');
        match seg {
            Segment::Literal(l) => out.push_str(l),
            Segment::Var(v) => {
                out.push('{');
                out.push_str(&var_name(*v, input)?);
                out.push('}');
            }
        }
    }
    if let Some(verb) = &route.verb {
        out.push(':');
        out.push_str(verb);
    }
    Ok(out)
}

/// Kinds only some operations raise (see [`error_kinds`]).
const OPERATION_KINDS: [ErrorKind; 8] = [
    ErrorKind::TaskNotFound,
    ErrorKind::TaskNotCancelable,
    ErrorKind::PushNotificationNotSupported,
    ErrorKind::UnsupportedOperation,
    ErrorKind::ContentTypeNotSupported,
    ErrorKind::InvalidAgentResponse,
    ErrorKind::ExtendedAgentCardNotConfigured,
    ErrorKind::TaskGenerationMismatch,
];

/// The error kinds a route can answer with: every kind of the wire table that any route can
/// raise (validation, version and extension negotiation, authentication, limits, server
/// failures), the body errors on `body: "*"` routes, and the kinds of the operation itself.
/// `MethodNotFound` is only for paths and methods outside the table.
fn error_kinds(op: Operation, body: bool) -> Vec<ErrorKind> {
    use ErrorKind::*;
    let mut kinds: Vec<ErrorKind> = ErrorKind::ALL
        .into_iter()
        .filter(|k| !OPERATION_KINDS.contains(k) && *k != MethodNotFound)
        .filter(|k| body || !matches!(k, ParseError | InvalidRequest))
        .collect();
    kinds.extend(match op {
        Operation::SendMessage | Operation::SendStreamingMessage => vec![
            TaskNotFound,
            UnsupportedOperation,
            ContentTypeNotSupported,
            PushNotificationNotSupported,
            InvalidAgentResponse,
            // The A2A 1.1 preview's `ifGenerationMatch`.
            TaskGenerationMismatch,
        ],
        Operation::GetTask => vec![TaskNotFound],
        Operation::ListTasks => vec![],
        Operation::CancelTask => vec![TaskNotFound, TaskNotCancelable],
        Operation::SubscribeToTask => vec![TaskNotFound, UnsupportedOperation],
        Operation::CreateTaskPushNotificationConfig
        | Operation::GetTaskPushNotificationConfig
        | Operation::ListTaskPushNotificationConfigs
        | Operation::DeleteTaskPushNotificationConfig => {
            vec![TaskNotFound, PushNotificationNotSupported]
        }
        Operation::GetExtendedAgentCard => {
            vec![UnsupportedOperation, ExtendedAgentCardNotConfigured]
        }
    });
    kinds
}

/// HTTP statuses of the refusals made before a request reaches the A2A layer (outside the
/// error table): 405 with `Allow`, 413 and 415; their bodies are ErrorResponses too.
const HTTP_REFUSALS: [u16; 3] = [405, 413, 415];

/// One error response per HTTP status the kinds map to, listing the statuses and reasons.
fn error_responses(kinds: &[ErrorKind]) -> BTreeMap<String, serde_json::Value> {
    let mut by_status: BTreeMap<u16, Vec<ErrorKind>> = BTreeMap::new();
    for k in kinds {
        by_status.entry(k.wire().http).or_default().push(*k);
    }
    by_status
        .into_iter()
        .map(|(http, kinds)| {
            let reasons: Vec<String> = kinds
                .iter()
                .map(|k| format!("`{}` ({})", k.wire().reason, k.wire().status))
                .collect();
            (
                http.to_string(),
                json!({
                    "description": format!("An A2A error; ErrorInfo reason {}.", reasons.join(", ")),
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
                }),
            )
        })
        .collect()
}

/// The AIP-193 error body and the detail messages our server sends in it.
fn error_schemas() -> Map<String, serde_json::Value> {
    let statuses: BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.wire().status).collect();
    let codes: BTreeSet<u16> = ErrorKind::ALL
        .iter()
        .map(|k| k.wire().http)
        .chain(HTTP_REFUSALS)
        .collect();
    let reasons: BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.wire().reason).collect();
    let mut m = Map::new();
    m.insert(
        "ErrorResponse".into(),
        json!({
            "type": "object",
            "description": "An error of the HTTP+JSON binding (AIP-193): the JSON form of a google.rpc.Status under `error`. Also the data of an `event: error` SSE event that ends a stream.",
            "required": ["error"],
            "properties": {"error": {"$ref": "#/components/schemas/ErrorStatus"}},
        }),
    );
    m.insert(
        "ErrorStatus".into(),
        json!({
            "type": "object",
            "description": "google.rpc.Status in its HTTP form.",
            "required": ["code", "status", "message", "details"],
            "properties": {
                "code": {"type": "integer", "description": "The HTTP status code.", "enum": codes},
                "status": {"type": "string", "description": "The canonical gRPC status name.", "enum": statuses},
                "message": {"type": "string", "description": "A human-readable explanation."},
                "details": {
                    "type": "array",
                    "description": "A google.rpc.ErrorInfo first, then a google.rpc.BadRequest for invalid fields.",
                    "items": {"$ref": "#/components/schemas/ErrorDetail"},
                },
            },
        }),
    );
    m.insert(
        "ErrorDetail".into(),
        json!({
            "description": "One `@type`-tagged detail message.",
            "oneOf": [
                {"$ref": "#/components/schemas/ErrorInfo"},
                {"$ref": "#/components/schemas/BadRequest"},
            ],
        }),
    );
    m.insert(
        "ErrorInfo".into(),
        json!({
            "type": "object",
            "description": "google.rpc.ErrorInfo: which A2A error this is.",
            "required": ["@type", "reason", "domain"],
            "properties": {
                "@type": {"const": ERROR_INFO_TYPE},
                "reason": {"type": "string", "description": "The A2A error, e.g. TASK_NOT_FOUND.", "enum": reasons},
                "domain": {"const": ERROR_DOMAIN},
                "metadata": {"type": "object", "description": "Context of the error, e.g. the taskId.", "additionalProperties": {"type": "string"}},
            },
        }),
    );
    m.insert(
        "BadRequest".into(),
        json!({
            "type": "object",
            "description": "google.rpc.BadRequest: the invalid fields of the request.",
            "required": ["@type", "fieldViolations"],
            "properties": {
                "@type": {"const": BAD_REQUEST_TYPE},
                "fieldViolations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["field", "description"],
                        "properties": {
                            "field": {"type": "string", "description": "Path of the field, e.g. message.parts."},
                            "description": {"type": "string", "description": "What is wrong with it."},
                        },
                    },
                },
            },
        }),
    );
    m
}

/// Leading comments of the descriptor set's elements, by file and source path.
struct Comments {
    by_path: HashMap<(String, Vec<i32>), String>,
}

impl Comments {
    fn new(pool: &DescriptorPool) -> Self {
        let mut by_path = HashMap::new();
        for file in pool.files() {
            let proto = file.file_descriptor_proto();
            for loc in proto
                .source_code_info
                .iter()
                .flat_map(|info| info.location.iter())
            {
                if let Some(text) = &loc.leading_comments {
                    let text = text
                        .lines()
                        .map(str::trim)
                        .collect::<Vec<_>>()
                        .join(" ")
                        .trim()
                        .to_owned();
                    if !text.is_empty() {
                        by_path.insert((file.name().to_owned(), loc.path.clone()), text);
                    }
                }
            }
        }
        Self { by_path }
    }

    fn get(&self, file: &str, path: &[i32]) -> String {
        self.by_path
            .get(&(file.to_owned(), path.to_vec()))
            .cloned()
            .unwrap_or_default()
    }

    fn of_message(&self, m: &MessageDescriptor) -> String {
        self.get(m.parent_file().name(), m.path())
    }

    fn of_field(&self, f: &FieldDescriptor) -> String {
        self.get(f.parent_file().name(), f.path())
    }

    fn of_enum(&self, e: &EnumDescriptor) -> String {
        self.get(e.parent_file().name(), e.path())
    }

    fn of_method(&self, m: &MethodDescriptor) -> String {
        self.get(m.parent_file().name(), m.path())
    }

    fn of_service(&self, s: &prost_reflect::ServiceDescriptor) -> String {
        self.get(s.parent_file().name(), s.path())
    }
}

/// The generator: component schemas collected while paths are built.
struct Gen {
    comments: Comments,
    required_ext: Option<prost_reflect::ExtensionDescriptor>,
    schemas: BTreeMap<String, serde_json::Value>,
    pending_messages: Vec<MessageDescriptor>,
    pending_enums: Vec<EnumDescriptor>,
    seen: BTreeSet<String>,
}

/// `google.api.field_behavior = REQUIRED`.
const FIELD_BEHAVIOR_REQUIRED: u32 = 2;

impl Gen {
    fn new(pool: &DescriptorPool) -> Self {
        Self {
            comments: Comments::new(pool),
            required_ext: pool.get_extension_by_name("google.api.field_behavior"),
            schemas: BTreeMap::new(),
            pending_messages: Vec::new(),
            pending_enums: Vec::new(),
            seen: BTreeSet::new(),
        }
    }

    /// The component name of a message or enum: the bare name in `lf.a2a.v1`, the full name
    /// elsewhere.
    fn name_of(full_name: &str) -> String {
        full_name
            .strip_prefix("lf.a2a.v1.")
            .unwrap_or(full_name)
            .to_owned()
    }

    fn is_required(&self, f: &FieldDescriptor) -> bool {
        let Some(ext) = &self.required_ext else {
            return false;
        };
        let options = f.options();
        match options.get_extension(ext).as_ref() {
            Value::List(values) => values
                .iter()
                .any(|v| v.as_enum_number() == Some(FIELD_BEHAVIOR_REQUIRED as i32)),
            _ => false,
        }
    }

    /// A schema for a message type: the well-known types inline, ours as a `$ref`.
    fn message_ref(&mut self, m: &MessageDescriptor) -> serde_json::Value {
        if let Some(wkt) = well_known(m.full_name()) {
            return wkt;
        }
        let name = Self::name_of(m.full_name());
        if self.seen.insert(name.clone()) {
            self.pending_messages.push(m.clone());
        }
        json!({"$ref": format!("#/components/schemas/{name}")})
    }

    fn enum_ref(&mut self, e: &EnumDescriptor) -> serde_json::Value {
        let name = Self::name_of(e.full_name());
        if self.seen.insert(name.clone()) {
            self.pending_enums.push(e.clone());
        }
        json!({"$ref": format!("#/components/schemas/{name}")})
    }

    /// Generates every component reached so far (and whatever those reach).
    fn drain(&mut self) {
        loop {
            if let Some(m) = self.pending_messages.pop() {
                let schema = self.message_schema(&m, &[]);
                self.schemas.insert(Self::name_of(m.full_name()), schema);
            } else if let Some(e) = self.pending_enums.pop() {
                let schema = self.enum_schema(&e);
                self.schemas.insert(Self::name_of(e.full_name()), schema);
            } else {
                return;
            }
        }
    }

    fn enum_schema(&self, e: &EnumDescriptor) -> serde_json::Value {
        let names: Vec<String> = e.values().map(|v| v.name().to_owned()).collect();
        let mut doc = self.comments.of_enum(e);
        for v in e.values() {
            let c = self.get_value_comment(&v);
            doc.push_str(&format!("\n- `{}`: {c}", v.name()));
        }
        json!({
            "type": "string",
            "description": doc,
            "enum": names,
        })
    }

    fn get_value_comment(&self, v: &prost_reflect::EnumValueDescriptor) -> String {
        self.comments.get(v.parent_file().name(), v.path())
    }

    /// The scalar or referenced schema of one value of field `f` (not the list or map around it).
    fn kind_schema(&mut self, kind: Kind) -> serde_json::Value {
        match kind {
            Kind::Double => json!({"type": "number", "format": "double"}),
            Kind::Float => json!({"type": "number", "format": "float"}),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => json!({
                "type": "integer", "format": "int32",
                "minimum": i32::MIN, "maximum": i32::MAX,
            }),
            Kind::Uint32 | Kind::Fixed32 => json!({
                "type": "integer", "format": "int64", "minimum": 0, "maximum": u32::MAX,
            }),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => json!({
                "type": "string", "format": "int64", "pattern": "^-?[0-9]+$",
                "description": "A 64-bit integer as a decimal string.",
            }),
            Kind::Uint64 | Kind::Fixed64 => json!({
                "type": "string", "format": "uint64", "pattern": "^[0-9]+$",
                "description": "A 64-bit unsigned integer as a decimal string.",
            }),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::String => json!({"type": "string"}),
            Kind::Bytes => json!({"type": "string", "format": "byte", "contentEncoding": "base64"}),
            Kind::Message(m) => self.message_ref(&m),
            Kind::Enum(e) => self.enum_ref(&e),
        }
    }

    /// The schema of field `f` with its description.
    fn field_schema(&mut self, f: &FieldDescriptor) -> serde_json::Value {
        let mut schema = if f.is_map() {
            let Kind::Message(entry) = f.kind() else {
                return json!({});
            };
            let value = self.kind_schema(entry.map_entry_value_field().kind());
            json!({"type": "object", "additionalProperties": value})
        } else if f.is_list() {
            json!({"type": "array", "items": self.kind_schema(f.kind())})
        } else {
            self.kind_schema(f.kind())
        };
        if let serde_json::Value::Object(o) = &mut schema {
            let doc = self.comments.of_field(f);
            if !doc.is_empty() {
                o.insert("description".into(), doc.into());
            }
            if f.field_descriptor_proto()
                .options
                .as_ref()
                .is_some_and(|o| o.deprecated())
            {
                o.insert("deprecated".into(), true.into());
            }
        }
        schema
    }

    /// An object schema of `m`'s fields (JSON names), less those in `skip` (proto names): its
    /// REQUIRED fields as `required`, each real oneof as a `oneOf` of "exactly this member".
    fn message_schema(&mut self, m: &MessageDescriptor, skip: &[&str]) -> serde_json::Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for f in m.fields() {
            if skip.contains(&f.name()) {
                continue;
            }
            if self.is_required(&f) {
                required.push(f.json_name().to_owned());
            }
            let schema = self.field_schema(&f);
            properties.insert(f.json_name().to_owned(), schema);
        }
        let mut description = self.comments.of_message(m);
        let mut oneofs = Vec::new();
        for oneof in m.oneofs().filter(|o| !o.is_synthetic()) {
            let members: Vec<String> = oneof.fields().map(|f| f.json_name().to_owned()).collect();
            description.push_str(&format!(
                "\n\nExactly one of {} is set (oneof `{}`).",
                members
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                oneof.name()
            ));
            let choices: Vec<serde_json::Value> = members
                .iter()
                .map(|n| json!({"required": [n], "title": n}))
                .collect();
            oneofs.push(json!({"oneOf": choices}));
        }
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("description".into(), description.trim().into());
        schema.insert("properties".into(), properties.into());
        if !required.is_empty() {
            schema.insert("required".into(), required.into());
        }
        match oneofs.len() {
            0 => {}
            1 => {
                if let Some(serde_json::Value::Object(o)) = oneofs.pop() {
                    schema.extend(o);
                }
            }
            _ => {
                schema.insert("allOf".into(), oneofs.into());
            }
        }
        serde_json::Value::Object(schema)
    }

    /// The OpenAPI operation of one route.
    fn operation(
        &mut self,
        route: &Route,
        method: &MethodDescriptor,
    ) -> Result<serde_json::Value, RouteError> {
        let input = method.input();
        let bound: Vec<&str> = path_vars(route).map(var_field).collect();
        let mut parameters = Vec::new();
        for v in path_vars(route) {
            let field =
                input
                    .get_field_by_name(var_field(v))
                    .ok_or_else(|| RouteError::NoField {
                        message: input.name().to_owned(),
                        field: var_field(v),
                    })?;
            let schema = json!({"type": "string", "minLength": 1});
            let doc = self.comments.of_field(&field);
            parameters.push(json!({
                "name": field.json_name(),
                "in": "path",
                "required": true,
                "description": doc,
                "schema": schema,
            }));
        }
        if !route.body {
            // The server reads every other field of the request from the query string, by its
            // JSON (or proto) name; only scalars, enums and timestamps can be written there.
            for f in input.fields() {
                if bound.contains(&f.name()) || f.is_list() || f.is_map() {
                    continue;
                }
                let schema = match f.kind() {
                    Kind::Message(m) if well_known(m.full_name()).is_none() => continue,
                    Kind::Message(m) if m.full_name() == "google.protobuf.Struct" => continue,
                    kind => self.kind_schema(kind),
                };
                parameters.push(json!({
                    "name": f.json_name(),
                    "in": "query",
                    "required": false,
                    "description": self.comments.of_field(&f),
                    "schema": schema,
                }));
            }
        }
        let mut op = Map::new();
        let suffix = match (
            route.tenant,
            route.method == "POST" && !route.body && route.op == Operation::SubscribeToTask,
        ) {
            (false, false) => "",
            (true, false) => "ForTenant",
            (false, true) => "ByPost",
            (true, true) => "ByPostForTenant",
        };
        op.insert(
            "operationId".into(),
            format!("{}{suffix}", route.op.name()).into(),
        );
        op.insert("summary".into(), route.op.name().into());
        let mut description = self.comments.of_method(method);
        if route.tenant {
            description.push_str(" (addressed to a tenant)");
        }
        if !suffix.contains("ByPost") && route.op == Operation::SubscribeToTask {
            description.push_str(
                " The proto binds GET; POST on the same path is accepted too (the spec's prose \
                 says POST, and the official clients send it).",
            );
        }
        op.insert("description".into(), description.into());
        op.insert("tags".into(), json!(["A2AService"]));
        if !parameters.is_empty() {
            op.insert("parameters".into(), parameters.into());
        }
        if route.body {
            // `body: "*"`: every field not bound by the path. A body with a path-bound field
            // is accepted, but the path's value wins, so it is left out here.
            let skip: Vec<&str> = bound.iter().copied().filter(|f| *f != "tenant").collect();
            let schema = if skip.is_empty() {
                self.message_ref(&input)
            } else {
                let name = format!("{}Body", route.op.name());
                if self.seen.insert(name.clone()) {
                    let mut body = self.message_schema(&input, &skip);
                    if let Some(o) = body.as_object_mut() {
                        o.insert(
                            "description".into(),
                            format!(
                                "`{}` without the fields bound by the path ({}).",
                                Self::name_of(input.full_name()),
                                skip.join(", ")
                            )
                            .into(),
                        );
                    }
                    self.schemas.insert(name.clone(), body);
                }
                json!({"$ref": format!("#/components/schemas/{name}")})
            };
            let required = self.schemas_required(&input, &skip);
            let content = json!({"schema": schema});
            op.insert(
                "requestBody".into(),
                json!({
                    "required": required,
                    "content": {
                        "application/json": content,
                        "application/a2a+json": content,
                    },
                }),
            );
        }
        let mut responses = Map::new();
        if method.is_server_streaming() {
            // Each SSE event as an object ({id, event, data, retry}), the shape OpenAPI 3.2
            // gives `itemSchema` and tools apply to 3.1 `schema`s of text/event-stream; `data`
            // is the JSON of a StreamResponse (contentSchema), or an ErrorResponse for
            // `event: error`.
            let data = self.message_ref(&method.output());
            let name = "StreamEvent";
            if self.seen.insert(name.to_owned()) {
                self.schemas
                    .insert(name.to_owned(), stream_event_schema(&data));
            }
            responses.insert(
                "200".into(),
                json!({
                    "description": "A Server-Sent Events stream. Each event's `data:` is one StreamResponse (its `id:` the event's sequence number); the first is a task snapshot (or the one direct message), then status and artifact updates, until the server closes the stream. A failure after the first event is one `event: error` whose data is an ErrorResponse, then the end.",
                    "content": {
                        "text/event-stream": {
                            "schema": {"$ref": format!("#/components/schemas/{name}")},
                        },
                    },
                }),
            );
        } else {
            let output = self.message_ref(&method.output());
            responses.insert(
                "200".into(),
                json!({
                    "description": format!("`{}`", method.output().name()),
                    "content": {"application/json": {"schema": output}},
                }),
            );
        }
        responses.extend(error_responses(&error_kinds(route.op, route.body)));
        if route.body {
            for (status, why) in [
                (
                    413u16,
                    "The body is larger than the server accepts (`--max-body`); ErrorInfo reason `INVALID_REQUEST`, metadata `maxBodyBytes`.",
                ),
                (
                    415,
                    "The body is not JSON: `Content-Type` must be `application/json`, `application/a2a+json` or another `+json` type; ErrorInfo reason `CONTENT_TYPE_NOT_SUPPORTED`, metadata `header` and `received`.",
                ),
            ] {
                responses.insert(
                    status.to_string(),
                    json!({
                        "description": format!("Refused before the request is read. {why}"),
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
                    }),
                );
            }
        }
        op.insert("responses".into(), responses.into());
        Ok(serde_json::Value::Object(op))
    }

    /// Whether a body of `m` without `skip` has any required member (then the body is required).
    fn schemas_required(&self, m: &MessageDescriptor, skip: &[&str]) -> bool {
        m.fields()
            .any(|f| !skip.contains(&f.name()) && self.is_required(&f))
    }
}

/// One event of an SSE stream whose data is `data` (a schema), or an error.
fn stream_event_schema(data: &serde_json::Value) -> serde_json::Value {
    json!({
        "type": "object",
        "description": "One Server-Sent Event of a stream: `data` is the JSON of a StreamResponse, or of an ErrorResponse when `event` is `error` (the last event of a stream that failed).",
        "required": ["data"],
        "properties": {
            "id": {"type": "string", "description": "The event's sequence number in the task's event log."},
            "event": {"type": "string", "enum": ["message", "error"], "description": "Absent (an SSE `message`) for StreamResponse events; `error` for the error that ends a stream."},
            "retry": {"type": "integer", "minimum": 0},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": data,
                "description": "The JSON of a StreamResponse (of an ErrorResponse for `event: error`).",
            },
        },
        "if": {"required": ["event"], "properties": {"event": {"const": "error"}}},
        "then": {"properties": {"data": {"contentSchema": {"$ref": "#/components/schemas/ErrorResponse"}}}},
    })
}

/// The inline JSON schema of a well-known type (ProtoJSON's special forms).
fn well_known(full_name: &str) -> Option<serde_json::Value> {
    Some(match full_name {
        "google.protobuf.Timestamp" => json!({
            "type": "string", "format": "date-time",
            "description": "An RFC 3339 timestamp, UTC (`Z`) on output.",
        }),
        "google.protobuf.Duration" => json!({
            "type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?s$",
            "description": "A duration in seconds with an `s` suffix.",
        }),
        "google.protobuf.Struct" => json!({
            "type": "object", "additionalProperties": true,
            "description": "A free-form JSON object.",
        }),
        "google.protobuf.Value" => json!({"description": "Any JSON value, null included."}),
        "google.protobuf.ListValue" => json!({"type": "array", "items": {}}),
        "google.protobuf.Empty" => json!({"type": "object", "description": "Empty: `{}`."}),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
