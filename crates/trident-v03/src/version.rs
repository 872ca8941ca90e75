//! Which protocol version a request speaks, and which versions a server serves.
//!
//! A request's version is decided by what it is (JSON-RPC method name, HTTP route, gRPC
//! service) and checked against its `A2A-Version` header: a v0.3-shaped request may omit the
//! header (v0.3 had none) or say `0.3`; saying anything else (e.g. `1.0`) is an error that says
//! the request is v0.3-shaped.

use std::fmt;
use std::str::FromStr;

use trident_core::{A2aError, CallContext, ErrorKind, Generation, PROTOCOL_VERSION};

/// The protocol generations a server answers (`--protocols 1.0,0.3`; both by default).
/// `--protocols 0.3` serves v0.3 alone: a v0.3-only agent, whose card is a plain v0.3 card
/// and which refuses 1.0 calls (what an agent built on a v0.3 SDK is, made of our adapters).
/// `1.1-preview` adds the A2A 1.1 preview for the callers that ask for it with
/// `A2A-Version: 1.1` (off by default until 1.1 is released; it needs 1.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocols {
    /// A2A 1.0.
    pub v1: bool,
    /// A2A 0.3 (the compatibility layer).
    pub v03: bool,
    /// The A2A 1.1 preview (task generation, long-polling GetTask, `ifGenerationMatch`), for
    /// callers that send `A2A-Version: 1.1`.
    pub v1_1_preview: bool,
}

impl Default for Protocols {
    fn default() -> Self {
        Self::ALL
    }
}

impl Protocols {
    /// 1.0 and 0.3.
    pub const ALL: Protocols = Protocols {
        v1: true,
        v03: true,
        v1_1_preview: false,
    };
    /// 1.0 only.
    pub const V1_ONLY: Protocols = Protocols {
        v1: true,
        v03: false,
        v1_1_preview: false,
    };
    /// 0.3 only (a v0.3-only agent).
    pub const V03_ONLY: Protocols = Protocols {
        v1: false,
        v03: true,
        v1_1_preview: false,
    };

    /// These generations with the A2A 1.1 preview on.
    pub const fn with_v1_1_preview(self) -> Protocols {
        Protocols {
            v1_1_preview: true,
            ..self
        }
    }
}

/// A `--protocols` list that names an unknown version or none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolsError(String);

impl FromStr for Protocols {
    type Err = ProtocolsError;
    fn from_str(s: &str) -> Result<Self, ProtocolsError> {
        let mut out = Protocols {
            v1: false,
            v03: false,
            v1_1_preview: false,
        };
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item {
                "1.0" | "1" => out.v1 = true,
                "0.3" | "0.3.0" => out.v03 = true,
                "1.1-preview" => out.v1_1_preview = true,
                other => {
                    return Err(ProtocolsError(format!(
                        "unknown protocol version {other:?} (known: 1.0, 0.3, 1.1-preview)"
                    )));
                }
            }
        }
        if out.v1_1_preview && !out.v1 {
            return Err(ProtocolsError(
                "1.1-preview extends 1.0: list 1.0 too (e.g. 1.0,0.3,1.1-preview)".to_owned(),
            ));
        }
        if !out.v1 && !out.v03 {
            return Err(ProtocolsError(
                "the list names no version (e.g. 1.0, 1.0,0.3 or 0.3)".to_owned(),
            ));
        }
        Ok(out)
    }
}

impl fmt::Display for Protocols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<&str> = [
            (self.v1, "1.0"),
            (self.v03, "0.3"),
            (self.v1_1_preview, "1.1-preview"),
        ]
        .into_iter()
        .filter_map(|(on, v)| on.then_some(v))
        .collect();
        f.write_str(&list.join(","))
    }
}

/// Whether an `A2A-Version` value names 0.3 (`0.3`, `0.3.x`).
pub fn is_v03(v: &str) -> bool {
    crate::card::is_v03_version(v.trim())
}

/// Admits a v0.3-shaped call: its `A2A-Version` (in `cx.version`) must be absent or 0.3. The
/// call is then a 1.0 call to the service, so `cx.version` becomes 1.0, and `cx.generation`
/// says it was written in v0.3 (push configurations it creates notify in v0.3's shape).
pub fn admit_v03(cx: &mut CallContext, what: &str) -> Result<(), A2aError> {
    match cx
        .version
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => {}
        Some(v) if is_v03(v) => {}
        Some(v) => {
            return Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                format!(
                    "{what} is an A2A v0.3 request but A2A-Version says {v}; send it without \
                     A2A-Version (or with 0.3), or use the 1.0 form"
                ),
            )
            .with_meta("requestedVersion", v));
        }
    }
    cx.version = Some(PROTOCOL_VERSION.to_owned());
    cx.generation = Generation::V03;
    Ok(())
}
