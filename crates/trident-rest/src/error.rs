//! AIP-193 error bodies: `{"error": {code, status, message, details}}`, encoded from and
//! decoded into [`A2aError`] through the one wire table.

use trident_core::{A2aError, ErrorKind};

/// The JSON body of an error.
pub fn error_body(e: &A2aError) -> serde_json::Value {
    error_body_with_code(e, e.wire().http)
}

/// The JSON body of an error answered with HTTP status `code` instead of the table's: for
/// refusals at the HTTP level (405, 413, 415), before a request reaches the A2A layer.
pub(crate) fn error_body_with_code(e: &A2aError, code: u16) -> serde_json::Value {
    let w = e.wire();
    serde_json::json!({
        "error": {
            "code": code,
            "status": w.status,
            "message": e.message(),
            "details": e.details_json(),
        }
    })
}

/// Decodes an error body received with HTTP `status`. Bodies that are not AIP-193 still give
/// an error of the status's most likely kind, except a 404: an A2A error always comes as an
/// AIP-193 body (spec, HTTP+JSON "Error responses": every A2A error carries an ErrorInfo), so a
/// 404 without one — a bare web-server page, or an AIP-193 body saying `UNIMPLEMENTED` — means
/// the route does not exist at that URL (a wrong interface URL, a tenant segment the server does
/// not mount), which is [`ErrorKind::MethodNotFound`] ("unknown method or route"), never
/// `TaskNotFound`.
pub fn decode_error(status: u16, body: &[u8]) -> A2aError {
    let fallback = ErrorKind::from_http(status).unwrap_or(ErrorKind::Internal);
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    match parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| e.is_object())
    {
        Some(err) => {
            let fallback = match err.get("status").and_then(|s| s.as_str()) {
                Some(name) if status == 404 && name != fallback.wire().status => {
                    ErrorKind::MethodNotFound
                }
                _ => fallback,
            };
            let message = err
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or(fallback.wire().message);
            let details = err
                .get("details")
                .and_then(|d| d.as_array())
                .map(Vec::as_slice)
                .unwrap_or_default();
            A2aError::from_wire(fallback, message, details)
        }
        None if status == 404 => A2aError::new(
            ErrorKind::MethodNotFound,
            format!(
                "HTTP 404 without an A2A error body (no such route at this URL): {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ),
        ),
        None => A2aError::new(
            fallback,
            format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ),
        ),
    }
}
