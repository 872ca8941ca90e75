//! The A2A v1.0 types, generated from `proto/lf/a2a/v1/a2a.proto` and nothing else.
//!
//! - prost messages and enums (`lf::a2a::v1`, re-exported at the root),
//! - ProtoJSON serde impls from pbjson (camelCase out, camelCase or snake_case in, enums as
//!   names, oneofs flattened, unknown fields ignored),
//! - tonic client and server stubs behind the `grpc` feature,
//! - [`FILE_DESCRIPTOR_SET`], the encoded descriptors of the proto and its imports,
//! - [`for_each_rpc!`], the list of the service's RPCs (name, method, request, response,
//!   kind), from which `trident-core` builds `Operation` and the per-call dispatch, and
//!   [`for_each_grpc_rpc!`], the same with tonic's stream type names (for the gRPC adapter),
//!   and [`for_each_v03_rpc!`], v0.3's (for its gRPC adapter),
//! - [`scan`], a pre-scan bounding what decoding a request message would allocate.
//!
//! Helpers that only read or build generated types live in `ext` and [`builders`]; there is
//! no hand-written struct that mirrors a proto message.

pub mod builders;
#[cfg(feature = "grpc")]
pub mod codec;
mod ext;
pub mod scan;
pub mod wkt;

/// The generated code, laid out like the proto packages.
pub mod lf {
    /// `lf.a2a`
    pub mod a2a {
        /// `lf.a2a.v1`: every message, enum and the `A2AService` stubs.
        #[allow(missing_docs, clippy::all, unreachable_pub)]
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
            include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
        }
    }
}

/// The A2A **v0.3** types (`proto/a2a/v1/a2a.proto`, protobuf package `a2a.v1`): prost
/// messages, ProtoJSON serde (v0.3's HTTP+JSON bodies) and, behind `grpc`, the tonic stubs of
/// `a2a.v1.A2AService`. Only the v0.3 compatibility layer (`trident-v03`) uses them; they
/// are not wire-compatible with the 1.0 types above.
pub mod v03 {
    #[allow(missing_docs, clippy::all, unreachable_pub)]
    mod generated {
        include!(concat!(env!("OUT_DIR"), "/a2a.v1.rs"));
        include!(concat!(env!("OUT_DIR"), "/a2a.v1.serde.rs"));
    }
    pub use generated::*;

    /// Fully-qualified name of the v0.3 gRPC service.
    pub const SERVICE_NAME: &str = "a2a.v1.A2AService";

    /// The encoded `google.protobuf.FileDescriptorSet` of the v0.3 `a2a.proto` and its imports.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/a2a_v03_descriptor.bin"));
}

pub use builders::AgentCardBuilder;
pub use lf::a2a::v1::*;

/// The encoded `google.protobuf.FileDescriptorSet` of `a2a.proto` and everything it imports.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"));

// `for_each_rpc!` and `for_each_grpc_rpc!`: the service's RPCs, read from the descriptor by
// `build.rs`.
include!(concat!(env!("OUT_DIR"), "/rpcs.rs"));

// `for_each_v03_rpc!`: v0.3's, read from its descriptor.
include!(concat!(env!("OUT_DIR"), "/v03_rpcs.rs"));

/// Fully-qualified name of the gRPC service.
pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";

#[cfg(test)]
mod tests;
