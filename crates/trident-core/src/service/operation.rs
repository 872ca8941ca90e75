//! The RPCs as data, from the one list `trident_proto::for_each_rpc!` (generated from the
//! proto's service descriptor):
//!
//! - [`Operation`], one variant per RPC, with its name and whether it streams;
//! - [`A2aRequest`] and [`A2aReply`], any call and any answer as one value, and
//!   [`A2aRequest::call`], the exhaustive dispatch of a request to its [`A2aService`] method;
//! - [`AroundCall`], a service written once against every call (tower's `Service::call`
//!   shape): every `AroundCall` is an [`A2aService`], with the per-RPC methods generated here
//!   and [`A2aService::call`] going straight to [`AroundCall::call`], so a request decoded
//!   into an `A2aRequest` stays one through every wrapper down to the service that reads it;
//! - [`MAX_JSON_VALUES`] and [`MAX_JSON_DEPTH`], the bounds on one request's values and
//!   nesting every binding applies (`trident-http`'s JSON dispatch, the gRPC pre-scan).
//!
//! An RPC added to the proto becomes a new `Operation` at once; the generated `AroundCall`
//! impl then names an `A2aService` method that does not exist until the trait has it, and
//! the trait's new method fails to compile in the engine and every client until they handle
//! it; the exhaustive matches below (task ids), `trident-http`'s JSON dispatch (path
//! variables, request decoding) and the gRPC adapter (tonic's generated trait) fail likewise.

use trident_proto as pb;

use crate::{A2aError, A2aService, CallContext, EventStream};

/// The Rust type an RPC of `kind` (an item of `trident_proto::for_each_rpc!`) answers with in
/// [`A2aService`](crate::A2aService): `$resp` (the response message) for `unary`,
/// [`EventStream`](crate::EventStream) for `stream`, `()` for `empty`. For code generated per
/// RPC from the list, such as a client's `A2aService` impl.
#[macro_export]
macro_rules! reply_type {
    (unary, $resp:ty) => {
        $resp
    };
    (stream, $resp:ty) => {
        $crate::EventStream
    };
    (empty, $resp:ty) => {
        ()
    };
}

/// Whether an RPC of `kind` streams.
macro_rules! is_stream {
    (stream) => {
        true
    };
    ($other:ident) => {
        false
    };
}

/// A reply of `kind` passed through `f` if it is a stream.
macro_rules! map_stream {
    (stream, $r:expr, $f:expr) => {
        $f($r)
    };
    ($other:ident, $r:expr, $f:expr) => {
        $r
    };
}

macro_rules! rpcs {
    ($({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident })*) => {
        /// One RPC of `lf.a2a.v1.A2AService`. `name()` is also the JSON-RPC method name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                $op,
            )*
        }

        impl Operation {
            /// Every operation, in proto declaration order.
            pub const ALL: [Operation; [$(stringify!($op)),*].len()] = [$(Operation::$op),*];

            /// The RPC name (and JSON-RPC method name).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Operation::$op => stringify!($op),)*
                }
            }

            /// Whether the operation answers with a stream.
            pub const fn is_streaming(self) -> bool {
                match self {
                    $(Operation::$op => is_stream!($kind),)*
                }
            }
        }

        /// The request of any RPC: what an [`AroundCall`] service receives.
        #[derive(Debug, Clone, PartialEq)]
        pub enum A2aRequest {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                $op(pb::$req),
            )*
        }

        /// The answer of any RPC (`()` for an RPC answering `google.protobuf.Empty`, the
        /// [`EventStream`] for a streaming one).
        pub enum A2aReply {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                $op(reply_type!($kind, pb::$resp)),
            )*
        }

        impl A2aRequest {
            /// The RPC this request is for.
            pub const fn operation(&self) -> Operation {
                match self {
                    $(A2aRequest::$op(_) => Operation::$op,)*
                }
            }

            /// The request's `tenant` field (every A2A request has one).
            pub fn tenant(&self) -> &str {
                match self {
                    $(A2aRequest::$op(r) => &r.tenant,)*
                }
            }

            /// Calls the per-RPC method of `svc` this request is for (what
            /// [`A2aService::call`] does unless the service answers any call at once). A
            /// wrapper forwarding a request calls `inner.call(cx, req)` instead, which keeps
            /// it whole down to the service that reads it.
            pub async fn call<S: A2aService + ?Sized>(
                self,
                svc: &S,
                cx: &CallContext,
            ) -> Result<A2aReply, A2aError> {
                match self {
                    $(A2aRequest::$op(r) => svc.$method(cx, r).await.map(A2aReply::$op),)*
                }
            }
        }

        impl A2aReply {
            /// The RPC this answers.
            pub const fn operation(&self) -> Operation {
                match self {
                    $(A2aReply::$op(_) => Operation::$op,)*
                }
            }

            /// The answer with `f` applied to it if it is a stream (to hold something for the
            /// stream's life, count its events, ...); any other answer unchanged.
            pub fn map_stream(self, f: impl FnOnce(EventStream) -> EventStream) -> Self {
                match self {
                    $(A2aReply::$op(r) => A2aReply::$op(map_stream!($kind, r, f)),)*
                }
            }
        }

        #[async_trait::async_trait]
        impl<T: AroundCall> A2aService for T {
            // Not `async`: the wrapper's own future (boxed by `async_trait`, as this one
            // would be) is the answer, instead of a second box around it per call.
            fn call<'life0, 'life1, 'async_trait>(
                &'life0 self,
                cx: &'life1 CallContext,
                req: A2aRequest,
            ) -> ::core::pin::Pin<
                Box<
                    dyn ::core::future::Future<Output = Result<A2aReply, A2aError>>
                        + ::core::marker::Send
                        + 'async_trait,
                >,
            >
            where
                'life0: 'async_trait,
                'life1: 'async_trait,
                Self: 'async_trait,
            {
                AroundCall::call(self, cx, req)
            }
            $(
                async fn $method(
                    &self,
                    cx: &CallContext,
                    req: pb::$req,
                ) -> Result<reply_type!($kind, pb::$resp), A2aError> {
                    match AroundCall::call(self, cx, A2aRequest::$op(req)).await? {
                        A2aReply::$op(r) => Ok(r),
                        other => Err(mismatched(Operation::$op, other.operation())),
                    }
                }
            )*
        }
    };
}

trident_proto::for_each_rpc!(rpcs);

impl Operation {
    /// The operation named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl std::fmt::Debug for A2aReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "A2aReply::{}(..)", self.operation().name())
    }
}

impl A2aRequest {
    /// The id of the task the request is about (`""` when it names none: a new message,
    /// ListTasks, GetExtendedAgentCard).
    pub fn task_id(&self) -> &str {
        match self {
            A2aRequest::SendMessage(r) | A2aRequest::SendStreamingMessage(r) => {
                r.message.as_ref().map_or("", |m| m.task_id.as_str())
            }
            A2aRequest::GetTask(pb::GetTaskRequest { id, .. })
            | A2aRequest::CancelTask(pb::CancelTaskRequest { id, .. })
            | A2aRequest::SubscribeToTask(pb::SubscribeToTaskRequest { id, .. }) => id,
            A2aRequest::CreateTaskPushNotificationConfig(pb::TaskPushNotificationConfig {
                task_id,
                ..
            })
            | A2aRequest::GetTaskPushNotificationConfig(
                pb::GetTaskPushNotificationConfigRequest { task_id, .. },
            )
            | A2aRequest::ListTaskPushNotificationConfigs(
                pb::ListTaskPushNotificationConfigsRequest { task_id, .. },
            )
            | A2aRequest::DeleteTaskPushNotificationConfig(
                pb::DeleteTaskPushNotificationConfigRequest { task_id, .. },
            ) => task_id,
            A2aRequest::ListTasks(_) | A2aRequest::GetExtendedAgentCard(_) => "",
        }
    }
}

/// An [`A2aService`] written once against every call, as tower's middleware is written once
/// against `Service::call`: implement [`AroundCall::call`] and the type is an `A2aService`
/// (one generated method per RPC packs the request into an [`A2aRequest`], calls this and
/// unpacks the [`A2aReply`]; [`A2aService::call`] calls this directly). A wrapper does its
/// part before and after `self.inner.call(cx, req)`, which hands the request on whole; for a
/// streaming call the stream it gets back can be wrapped with [`A2aReply::map_stream`].
///
/// ```
/// use std::sync::Arc;
/// use trident_core::{A2aError, A2aReply, A2aRequest, A2aService, AroundCall, CallContext};
///
/// /// Counts calls, then forwards them.
/// struct Counted {
///     inner: Arc<dyn A2aService>,
///     calls: std::sync::atomic::AtomicU64,
/// }
///
/// #[async_trait::async_trait]
/// impl AroundCall for Counted {
///     async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
///         self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         self.inner.call(cx, req).await
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait AroundCall: Send + Sync + 'static {
    /// Answers one call, of any operation. Must answer with the reply of the request's
    /// operation (the generated methods turn any other into an internal error).
    async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError>;
}

fn mismatched(asked: Operation, answered: Operation) -> A2aError {
    A2aError::internal(format!(
        "a service wrapper answered {} with the reply of {}",
        asked.name(),
        answered.name()
    ))
}

/// JSON values (objects, arrays and their elements) one request body may hold. Decoding
/// allocates per value — a `Part` costs some 280 bytes decoded for 13 bytes of JSON — so a
/// 4 MiB body of tiny parts would take ~80 MiB before any limit on parts could apply; with
/// this bound decoding one body costs at most a few MiB whatever its shape.
pub const MAX_JSON_VALUES: usize = 65_536;

/// Nesting depth of a request body's JSON.
pub const MAX_JSON_DEPTH: usize = 64;
