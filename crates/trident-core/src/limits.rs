//! [`Limits`]: what one request may carry, checked by the engine (each violation an
//! `InvalidParams` error) and probed by the conformance suite at their defaults.

/// Limits on what a request may carry. Each violation is an `InvalidParams` error.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Parts per message.
    pub max_parts: usize,
    /// Nesting depth of any `metadata` or data value.
    pub max_metadata_depth: usize,
    /// Length of client-supplied ids (messageId, contextId, taskId, config ids).
    pub max_id_len: usize,
    /// Length of a tenant, in bytes. A tenant is also limited to visible ASCII other than
    /// `/` (it must fit one URL path segment of the HTTP+JSON binding).
    pub max_tenant_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_parts: 256,
            max_metadata_depth: 16,
            max_id_len: 256,
            max_tenant_len: 128,
        }
    }
}
