//! Page tokens, both formats: ListTasks' keyset cursor (`v1:<timestamp>:<id>`) and
//! ListTaskPushNotificationConfigs' last config id, each base64url without padding. Opaque to
//! clients; a token this server did not issue is `InvalidParams`.

use base64::Engine as _;

use crate::store::ListCursor;
use trident_core::A2aError;

const TOKEN_PREFIX: &str = "v1:";

pub(crate) fn encode_cursor(c: &ListCursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{TOKEN_PREFIX}{}:{}", c.timestamp, c.id))
}

pub(crate) fn decode_cursor(token: &str) -> Result<ListCursor, A2aError> {
    let invalid = || A2aError::invalid_field("pageToken", "is not a token this server issued");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid())?;
    let raw = String::from_utf8(raw).map_err(|_| invalid())?;
    let rest = raw.strip_prefix(TOKEN_PREFIX).ok_or_else(invalid)?;
    let (ts, id) = rest.split_once(':').ok_or_else(invalid)?;
    Ok(ListCursor {
        timestamp: ts.parse().map_err(|_| invalid())?,
        id: id.to_owned(),
    })
}

/// The token of the push configuration page after the one ending with `last_id`.
pub(crate) fn encode_config_token(last_id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(last_id)
}

/// The config id a push configuration page token stands for.
pub(crate) fn decode_config_token(token: &str) -> Result<String, A2aError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| A2aError::invalid_field("pageToken", "is not a token this server issued"))
}
