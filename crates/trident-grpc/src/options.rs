//! [`GrpcOptions`]: the knobs shared by the server routes and the client.

use std::time::Duration;

/// Message-size limits and other settings of the gRPC binding.
///
/// Sizes are named by direction so one value serves both ends: the server decodes requests up
/// to `max_request_size` and encodes responses up to `max_response_size`; the client does the
/// mirror image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcOptions {
    /// Largest request message, in bytes (default 4 MiB, tonic's own default).
    pub max_request_size: usize,
    /// Largest response or stream message, in bytes (default 16 MiB: tasks carry artifacts).
    pub max_response_size: usize,
    /// Serve gRPC server reflection (v1 and v1alpha). Default `true`.
    pub reflection: bool,
    /// Server only: also answer gRPC-Web (`application/grpc-web`, `-text`, `+proto`) on every
    /// gRPC service, over HTTP/1.1 and HTTP/2, for browser clients (see [`crate::Web`]).
    /// Default `true`: a plain gRPC call pays one comparison of its `content-type`.
    pub web: bool,
    /// Server only: also serve the A2A v0.3 service `a2a.v1.A2AService` (see
    /// [`crate::v03`]). Default `true`.
    pub v03: bool,
    /// Server only: serve the 1.0 service `lf.a2a.v1.A2AService` (default `true`; off, with
    /// `v03` on, a v0.3-only agent's port).
    pub v1: bool,
    /// Client only: how long to wait for the TCP/HTTP/2 connection (default 10 s).
    pub connect_timeout: Duration,
    /// Client only: the TLS of an `https://` target (extra trusted roots, a client
    /// certificate). Without the `tls` feature an `https://` target is refused.
    pub tls: GrpcTls,
}

/// A gRPC client's TLS, for `https://` targets: the system's roots are trusted (unless
/// `ca_only`), and `ca_pem`'s too; `identity` is presented to an agent that asks for a client certificate
/// (mutual TLS). `Debug` shows what is set, never the key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct GrpcTls {
    /// PEM CA certificates trusted besides the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// Trust `ca_pem` only, not the system's roots.
    pub ca_only: bool,
    /// The client certificate chain (PEM, leaf first) and its private key (PEM).
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for GrpcTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcTls")
            .field("ca_pem", &self.ca_pem.as_ref().map(Vec::len))
            .field("ca_only", &self.ca_only)
            .field("identity", &self.identity.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl Default for GrpcOptions {
    fn default() -> Self {
        Self {
            max_request_size: 4 * 1024 * 1024,
            max_response_size: 16 * 1024 * 1024,
            reflection: true,
            web: true,
            v03: true,
            v1: true,
            connect_timeout: Duration::from_secs(10),
            tls: GrpcTls::default(),
        }
    }
}
