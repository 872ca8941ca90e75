//! What the two JSON bindings' clients share.

/// The `A2aService` impl of a JSON binding's client, one method per RPC of
/// `trident_proto::for_each_rpc!`. The client's inherent methods do the exchange:
/// `unary::<T, R>(&self, &CallContext, Operation, &T) -> Result<R, A2aError>` (the request
/// and answer as ProtoJSON) and `stream::<T>(&self, &CallContext, Operation, &T) ->
/// Result<EventStream, A2aError>`; an RPC answering `google.protobuf.Empty` reads no answer.
///
/// `for_each_rpc!` passes nothing but the list to its macro, so a client names itself in a
/// one-line wrapper:
///
/// ```ignore
/// macro_rules! rpcs { ($($rpc:tt)*) => { trident_http::json_client!(MyClient; $($rpc)*); } }
/// trident_proto::for_each_rpc!(rpcs);
/// ```
#[macro_export]
macro_rules! json_client {
    (@call unary, $client:expr, $cx:expr, $op:ident, $req:expr) => {
        $client.unary($cx, ::trident_core::Operation::$op, $req).await
    };
    (@call stream, $client:expr, $cx:expr, $op:ident, $req:expr) => {
        $client.stream($cx, ::trident_core::Operation::$op, $req).await
    };
    (@call empty, $client:expr, $cx:expr, $op:ident, $req:expr) => {
        $client
            .unary::<_, ::serde_json::Value>($cx, ::trident_core::Operation::$op, $req)
            .await
            .map(drop)
    };
    ($client:ty; $({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident })*) => {
        #[::async_trait::async_trait]
        impl ::trident_core::A2aService for $client {
            $(
                async fn $method(
                    &self,
                    cx: &::trident_core::CallContext,
                    req: ::trident_proto::$req,
                ) -> ::std::result::Result<
                    ::trident_core::reply_type!($kind, ::trident_proto::$resp),
                    ::trident_core::A2aError,
                > {
                    $crate::json_client!(@call $kind, self, cx, $op, &req)
                }
            )*
        }
    };
}
