//! The `grpc-timeout` format a call's remaining time travels in, on every binding: read by
//! [`CallContext`](crate::CallContext)'s constructors, written by the clients
//! (re-exported from [`deadline`](crate::deadline), its public home).

use std::time::Duration;

use crate::{A2aError, ErrorKind};

/// The header (gRPC metadata key) that carries a call's remaining time: gRPC's own
/// `grpc-timeout`, in its format (at most 8 digits and a unit, `H M S m u n`). The JSON-RPC and
/// HTTP+JSON bindings read and send it too: A2A defines no deadline header for HTTP, and this
/// one is what gRPC-aware proxies and transcoders already carry.
pub const TIMEOUT_HEADER: &str = "grpc-timeout";

/// Parses a [`TIMEOUT_HEADER`] value: at most 8 digits and a unit (`H M S m u n`).
///
/// ```
/// use std::time::Duration;
/// use trident_core::deadline::parse_timeout;
/// assert_eq!(parse_timeout("250m"), Some(Duration::from_millis(250)));
/// assert_eq!(parse_timeout("250"), None);
/// ```
pub fn parse_timeout(v: &str) -> Option<Duration> {
    let v = v.trim();
    let split = v.len().checked_sub(1)?;
    if !v.is_char_boundary(split) {
        return None;
    }
    let (digits, unit) = v.split_at(split);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// The error for a [`TIMEOUT_HEADER`] value that [`parse_timeout`] refuses: `InvalidRequest`
/// (gRPC `INVALID_ARGUMENT`), quoting at most 32 bytes of it. Servers refuse such a call rather
/// than run it without the caller's deadline. (grpc-go answers `INTERNAL` "malformed
/// grpc-timeout"; the A2A table's row for a request the caller got wrong is this one.)
pub fn malformed_timeout(raw: &[u8]) -> A2aError {
    let shown: String = String::from_utf8_lossy(raw).chars().take(32).collect();
    A2aError::new(
        ErrorKind::InvalidRequest,
        format!(
            "malformed {TIMEOUT_HEADER} {shown:?}: send 1 to 8 digits and a unit \
             (H, M, S, m, u or n), e.g. 250m"
        ),
    )
}

/// Formats `d` as a [`TIMEOUT_HEADER`] value, in the finest unit whose count fits in 8 digits
/// (rounded down; longer than 99999999 hours is written as that).
///
/// ```
/// use std::time::Duration;
/// use trident_core::deadline::format_timeout;
/// assert_eq!(format_timeout(Duration::from_millis(1500)), "1500000u");
/// assert_eq!(format_timeout(Duration::from_secs(3600 * 24 * 365)), "31536000S");
/// ```
pub fn format_timeout(d: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = d.as_nanos();
    for (per, unit) in units {
        let n = nanos / per;
        if n <= MAX {
            return format!("{n}{unit}");
        }
    }
    format!("{MAX}H")
}
