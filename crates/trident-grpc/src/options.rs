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
    /// Server only: also serve the A2A v0.3 service `a2a.v1.A2AService` (see
    /// [`crate::v03`]). Default `true`.
    pub v03: bool,
    /// Server only: serve the 1.0 service `lf.a2a.v1.A2AService` (default `true`; off, with
    /// `v03` on, a v0.3-only agent's port).
    pub v1: bool,
    /// Client only: how long to wait for the TCP/HTTP/2 connection (default 10 s).
    pub connect_timeout: Duration,
}

impl Default for GrpcOptions {
    fn default() -> Self {
        Self {
            max_request_size: 4 * 1024 * 1024,
            max_response_size: 16 * 1024 * 1024,
            reflection: true,
            v03: true,
            v1: true,
            connect_timeout: Duration::from_secs(10),
        }
    }
}
