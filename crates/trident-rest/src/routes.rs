//! The HTTP+JSON route table, derived from the `google.api.http` rules in our descriptor set
//! (never written by hand), and the matcher for it.
//!
//! axum's router cannot express `/tasks/{id}:cancel` (one parameter and a literal in one
//! segment), so matching is ours: a path is split into percent-decoded segments, the last one
//! may carry a `:verb` suffix, and unprefixed routes are tried before the `/{tenant}/…` ones.

use prost_reflect::{DescriptorPool, DynamicMessage, Value};
use trident_core::Operation;

/// A path variable of a route template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// `{tenant}`
    Tenant,
    /// `{id}` / `{id=*}`
    Id,
    /// `{task_id}` / `{task_id=*}`
    TaskId,
}

/// One segment of a route template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A literal segment.
    Literal(String),
    /// A variable matching one segment.
    Var(Var),
}

/// One HTTP binding of an RPC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The RPC.
    pub op: Operation,
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// Path segments.
    pub segments: Vec<Segment>,
    /// The `:verb` suffix of the last segment.
    pub verb: Option<String>,
    /// Whether the request message comes from the body (`body: "*"`).
    pub body: bool,
    /// Whether this is a `/{tenant}/…` binding.
    pub tenant: bool,
}

/// Variables bound by a match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bound {
    /// `{tenant}`
    pub tenant: Option<String>,
    /// `{id}`
    pub id: Option<String>,
    /// `{task_id}`
    pub task_id: Option<String>,
}

/// The route table.
#[derive(Debug, Clone)]
pub struct Routes {
    routes: Vec<Route>,
}

/// Why the descriptor could not give a route table or the OpenAPI document (a build defect,
/// not a request error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The embedded descriptor set does not decode.
    #[error("descriptor set: {0}")]
    Descriptor(#[from] prost_reflect::DescriptorError),
    /// The descriptor set lacks a definition the binding is derived from.
    #[error("the descriptor set has no {0}")]
    Missing(&'static str),
    /// An RPC of the service that no [`Operation`] names.
    #[error("RPC {0} has no Operation")]
    NoOperation(String),
    /// An RPC without a `google.api.http` rule.
    #[error("RPC {0} has no HTTP rule")]
    NoHttpRule(String),
    /// An operation without an RPC in the service.
    #[error("no RPC for {0}")]
    NoRpc(&'static str),
    /// An HTTP rule's path template the binding cannot serve.
    #[error("{template}: {problem}")]
    Template {
        /// The template.
        template: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A path variable naming no field of the request message.
    #[error("{message} has no field {field}")]
    NoField {
        /// The request message.
        message: String,
        /// The field.
        field: &'static str,
    },
}

fn parse_template(template: &str) -> Result<(Vec<Segment>, Option<String>), RouteError> {
    let path = template
        .strip_prefix('/')
        .ok_or_else(|| RouteError::Template {
            template: template.to_owned(),
            problem: "not absolute".to_owned(),
        })?;
    let (path, verb) = match path.rsplit_once(':') {
        Some((p, v)) if !v.contains('/') && !v.contains('}') => (p, Some(v.to_owned())),
        _ => (path, None),
    };
    let segments = path
        .split('/')
        .map(
            |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(var) => match var.split('=').next() {
                    Some("tenant") => Ok(Segment::Var(Var::Tenant)),
                    Some("id") => Ok(Segment::Var(Var::Id)),
                    Some("task_id") => Ok(Segment::Var(Var::TaskId)),
                    _ => Err(RouteError::Template {
                        template: template.to_owned(),
                        problem: format!("unknown variable {var}"),
                    }),
                },
                None => Ok(Segment::Literal(s.to_owned())),
            },
        )
        .collect::<Result<_, _>>()?;
    Ok((segments, verb))
}

fn rule_routes(
    op: Operation,
    rule: &DynamicMessage,
    out: &mut Vec<Route>,
) -> Result<(), RouteError> {
    let body =
        matches!(rule.get_field_by_name("body").as_deref(), Some(Value::String(b)) if b == "*");
    for method in ["get", "post", "delete"] {
        if let Some(Value::String(template)) = rule.get_field_by_name(method).as_deref() {
            if template.is_empty() {
                continue;
            }
            let (segments, verb) = parse_template(template)?;
            let tenant = segments.first() == Some(&Segment::Var(Var::Tenant));
            let method = match method {
                "get" => "GET",
                "post" => "POST",
                _ => "DELETE",
            };
            out.push(Route {
                op,
                method,
                segments,
                verb,
                body,
                tenant,
            });
        }
    }
    if let Some(Value::List(more)) = rule.get_field_by_name("additional_bindings").as_deref() {
        for m in more {
            if let Value::Message(m) = m {
                rule_routes(op, m, out)?;
            }
        }
    }
    Ok(())
}

impl Routes {
    /// Reads the table from `trident_proto::FILE_DESCRIPTOR_SET`.
    pub fn from_descriptor() -> Result<Self, RouteError> {
        let pool = DescriptorPool::decode(trident_proto::FILE_DESCRIPTOR_SET)?;
        let service = pool
            .get_service_by_name(trident_proto::SERVICE_NAME)
            .ok_or(RouteError::Missing(trident_proto::SERVICE_NAME))?;
        let http = pool
            .get_extension_by_name("google.api.http")
            .ok_or(RouteError::Missing("google.api.http"))?;
        let mut routes = Vec::new();
        for method in service.methods() {
            let op = Operation::from_name(method.name())
                .ok_or_else(|| RouteError::NoOperation(method.name().to_owned()))?;
            let options = method.options();
            let rule = options.get_extension(&http);
            let Value::Message(rule) = rule.as_ref() else {
                return Err(RouteError::NoHttpRule(method.name().to_owned()));
            };
            rule_routes(op, rule, &mut routes)?;
        }
        // The proto binds SubscribeToTask to GET while the spec's prose says POST, and both
        // official servers accept both: so do we (the one hand-added route).
        let posts: Vec<Route> = routes
            .iter()
            .filter(|r| r.op == Operation::SubscribeToTask && r.method == "GET")
            .map(|r| Route {
                method: "POST",
                body: false,
                ..r.clone()
            })
            .collect();
        routes.extend(posts);
        // Unprefixed routes first (`/tasks/x` is GetTask, not ListTasks of tenant "tasks"), and
        // `:verb` routes before the rest (`/tasks/x:subscribe` is not GetTask of `x:subscribe`).
        routes.sort_by_key(|r| (r.tenant, r.verb.is_none()));
        Ok(Self { routes })
    }

    /// Every route.
    pub fn all(&self) -> &[Route] {
        &self.routes
    }

    /// The route a client calls for `op`, with or without the tenant prefix. SubscribeToTask
    /// uses POST, as the official clients do.
    pub fn for_op(&self, op: Operation, tenant: bool) -> Option<&Route> {
        let mut candidates = self
            .routes
            .iter()
            .filter(|r| r.op == op && r.tenant == tenant);
        if op == Operation::SubscribeToTask {
            candidates.find(|r| r.method == "POST")
        } else {
            candidates.next()
        }
    }

    /// Matches a request; [`Miss::Method`] when the path exists with other methods only.
    ///
    /// A path that a `:verb` route matches is that route's path, whatever the method: the
    /// verb-less routes are not tried for it. Otherwise `GET /tasks/ID:cancel` would be GetTask
    /// of a task named `ID:cancel` (a 404) instead of the 405 with `Allow: POST` that every
    /// other known path answers for another method. (Ids are read from the last segment up to
    /// the verb, as gRPC transcoding does; a `:` in an id is sent as `%3A`.)
    pub fn find(&self, method: &str, path: &str) -> Result<(&Route, Bound), Miss> {
        let Some(raw) = path.strip_prefix('/') else {
            return Err(Miss::Path);
        };
        let raw: Vec<&str> = raw.split('/').collect();
        let verb_path = self
            .routes
            .iter()
            .any(|r| r.verb.is_some() && matches(r, &raw).is_some());
        let mut allowed: Vec<&'static str> = Vec::new();
        for route in &self.routes {
            if verb_path && route.verb.is_none() {
                continue;
            }
            if let Some(bound) = matches(route, &raw) {
                if route.method == method {
                    return Ok((route, bound));
                }
                if !allowed.contains(&route.method) {
                    allowed.push(route.method);
                }
            }
        }
        if allowed.is_empty() {
            Err(Miss::Path)
        } else {
            allowed.sort_unstable();
            Err(Miss::Method(allowed))
        }
    }
}

/// Why a request matched no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No route has this path.
    Path,
    /// The path exists with these methods only (the `Allow` header of a 405).
    Method(Vec<&'static str>),
}

fn decode(segment: &str) -> Option<String> {
    let s = percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()?;
    (!s.is_empty()).then(|| s.into_owned())
}

fn matches(route: &Route, raw: &[&str]) -> Option<Bound> {
    if raw.len() != route.segments.len() {
        return None;
    }
    let mut bound = Bound::default();
    let last = raw.len() - 1;
    for (i, (seg, pattern)) in raw.iter().zip(&route.segments).enumerate() {
        let seg = if i == last {
            match &route.verb {
                Some(verb) => seg.strip_suffix(verb.as_str())?.strip_suffix(':')?,
                None => seg,
            }
        } else {
            seg
        };
        match pattern {
            Segment::Literal(l) => {
                if seg != l {
                    return None;
                }
            }
            Segment::Var(v) => {
                let value = decode(seg)?;
                match v {
                    Var::Tenant => bound.tenant = Some(value),
                    Var::Id => bound.id = Some(value),
                    Var::TaskId => bound.task_id = Some(value),
                }
            }
        }
    }
    Some(bound)
}

/// Builds the path of `route` with `bound` values, percent-encoding each segment.
pub fn path_of(route: &Route, bound: &Bound) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    let mut out = String::new();
    for seg in &route.segments {
        out.push('/');
        match seg {
            Segment::Literal(l) => out.push_str(l),
            Segment::Var(v) => {
                let value = match v {
                    Var::Tenant => bound.tenant.as_deref(),
                    Var::Id => bound.id.as_deref(),
                    Var::TaskId => bound.task_id.as_deref(),
                }
                .unwrap_or_default();
                out.extend(percent_encoding::utf8_percent_encode(value, SEGMENT));
            }
        }
    }
    if let Some(verb) = &route.verb {
        out.push(':');
        out.push_str(verb);
    }
    out
}
