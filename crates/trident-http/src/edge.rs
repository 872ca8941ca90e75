//! The request edge: where a request's parts become its [`CallContext`], once for every
//! server adapter — JSON-RPC, HTTP+JSON and gRPC, A2A 1.0 and v0.3. They all see a request
//! as an `http` head (tonic's `MetadataMap` is an [`http::HeaderMap`] and its requests carry
//! [`http::Extensions`]), so one function reads the service parameters from the headers,
//! sets the binding and copies what the server put into the extensions: the [`Principal`]
//! the authentication layer found and the client's [`Peer`] address.
//!
//! What differs per binding stays a small step on top: HTTP+JSON also reads `A2A-Version`
//! from the query string, and the v0.3 adapters admit the call as v0.3
//! (`trident_v03::version::admit_v03`).

use trident_core::{A2aError, Binding, CallContext, Peer, Principal};

/// The call context of a request on `binding`: its service parameters (`headers`), the
/// principal the authentication layer put into `extensions` and the client's address. A
/// `Last-Event-ID` or deadline it cannot read is refused
/// ([`CallContext::try_from_service_params`]).
pub fn call_context(
    headers: &http::HeaderMap,
    extensions: &http::Extensions,
    binding: Binding,
) -> Result<CallContext, A2aError> {
    let mut cx = CallContext::try_from_service_param_pairs(
        headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
    )?;
    cx.binding = Some(binding);
    if let Some(p) = extensions.get::<Principal>() {
        cx.principal = p.clone();
    }
    cx.peer = extensions.get::<Peer>().map(|p| p.0);
    Ok(cx)
}

#[cfg(test)]
mod tests;
