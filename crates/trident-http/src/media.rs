//! Request media types: what the JSON bindings accept as a JSON body, and the error both
//! answer when a body is not one.

use trident_core::{A2aError, ErrorKind};

/// Whether a request's `Content-Type` names JSON: `application/json`, `application/a2a+json`
/// or another `application/…+json` type, with any parameters (`; charset=utf-8`). A missing
/// header is not JSON: a POST without one (or with `text/plain`) is what a web page may send
/// cross-origin without a CORS preflight, so accepting it would let any page drive a local
/// agent.
///
/// ```
/// use trident_http::is_json_media_type;
///
/// assert!(is_json_media_type(Some("application/json; charset=utf-8")));
/// assert!(is_json_media_type(Some("Application/A2A+JSON")));
/// assert!(!is_json_media_type(Some("text/plain")));
/// assert!(!is_json_media_type(None));
/// ```
pub fn is_json_media_type(content_type: Option<&str>) -> bool {
    let Some(value) = content_type else {
        return false;
    };
    if value == "application/json" {
        // What nearly every client sends.
        return true;
    }
    let essence = value.split(';').next().unwrap_or_default().trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (sub.eq_ignore_ascii_case("json")
            || (sub.len() > 5
                && sub.is_char_boundary(sub.len() - 5)
                && sub[sub.len() - 5..].eq_ignore_ascii_case("+json")))
}

/// The `ContentTypeNotSupported` error of a body that is not JSON, `content_type` being the
/// request's `Content-Type` as sent (`None`: it sent none); its ErrorInfo names the header
/// and what was received. Both JSON bindings answer it (HTTP+JSON as 415, JSON-RPC as -32005).
pub fn not_json(content_type: Option<&[u8]>) -> A2aError {
    let received = content_type.map_or(String::new(), |v| String::from_utf8_lossy(v).into_owned());
    let said = if received.is_empty() {
        "no Content-Type".to_owned()
    } else {
        format!("Content-Type {received}")
    };
    A2aError::new(
        ErrorKind::ContentTypeNotSupported,
        format!("{said}: the body must be application/json or application/a2a+json"),
    )
    .with_meta("header", "Content-Type")
    .with_meta("received", received)
}
