//! Who the client is behind a proxy (issue 12: anonymous callers behind a proxy shared one
//! rate-limit bucket). Two sources, both believed only from [`ProxyOptions::trusted`]
//! addresses:
//!
//! - **The PROXY protocol** (HAProxy's `send-proxy-v2`; v1 text too), when
//!   [`ProxyOptions::proxy_protocol`] is on. A connection from a trusted proxy must start with
//!   the header, complete within the header timeout (the listener's `header_timeout`, 10 s
//!   when that is off) and at most [`V2_MAX_PAYLOAD`] bytes of addresses and TLVs (v1: its
//!   107-byte line); a missing, malformed, slow or oversized header closes the connection. The
//!   header's source address becomes the connection's peer; a `LOCAL` command (HAProxy's
//!   health checks), v1 `UNKNOWN`, and the `UNSPEC` and `UNIX` families keep the socket's.
//!   A connection from any other address is **refused** (closed at accept): a listener that
//!   expects the header is only reached through its proxies, and a client that bypasses them
//!   is a misconfiguration or an attack, never something to serve half-trusted. (Its claims
//!   are never read either way.)
//! - **A forwarding header** ([`ForwardedHeader`]: `X-Forwarded-For` by default, or RFC 7239
//!   `Forwarded: for=`), read only when the peer (after PROXY) is a trusted proxy. The list is
//!   walked from the right — the entry the nearest proxy appended — skipping trusted proxies;
//!   the first untrusted address is the client. An entry that is not an address (`unknown`,
//!   an obfuscated `_identifier`, garbage, an element without `for=`) ends the walk at the
//!   nearest trusted hop: what lies left of it cannot be vouched for. Only the one configured
//!   header is read, because a proxy that writes one passes the other through from the client
//!   untouched.
//!
//! The result is the request's peer (`trident_core::Peer`, and axum's `ConnectInfo`), which
//! every adapter copies into `CallContext::peer` (the key of anonymous callers in `Limited`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncReadExt};

/// An address (`10.0.0.7`, `::1`) or a CIDR network (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

/// Why a string is not an [`IpNet`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an IP address or CIDR network (such as 10.0.0.0/8 or fd00::/8)")]
pub struct InvalidNet(String);

impl IpNet {
    /// Whether `ip` lies in this network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                net.to_bits() & mask == ip.to_bits() & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                net.to_bits() & mask == ip.to_bits() & mask
            }
            _ => false,
        }
    }
}

impl FromStr for IpNet {
    type Err = InvalidNet;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidNet(s.to_owned());
        let entry = s.trim();
        let (addr, prefix) = match entry.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (entry, None),
        };
        let addr = addr
            .trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .map_err(|_| invalid())?
            .to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(invalid)?,
            Some(_) => return Err(invalid()),
        };
        Ok(Self { addr, prefix })
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Which request header a trusted proxy names the client in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (nginx, Envoy, cloud load balancers,
    /// HAProxy's `option forwardfor`).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for="[2001:db8::1]:4711"` (HAProxy's
    /// `option forwarded`).
    Forwarded,
    /// Neither: only the PROXY protocol names the client.
    None,
}

/// Who may say who the client is, and how (see the [module docs](self)). The default trusts
/// nobody: every peer is the socket's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyOptions {
    /// Addresses and networks of the proxies in front of the server.
    pub trusted: Vec<IpNet>,
    /// Connections from trusted proxies start with a PROXY protocol header (v1 or v2), and
    /// connections from other addresses are refused.
    pub proxy_protocol: bool,
    /// The header trusted proxies name the client in.
    pub forwarded_header: ForwardedHeader,
}

impl ProxyOptions {
    /// Whether `ip` is a trusted proxy.
    pub fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|net| net.contains(ip))
    }

    /// The client of a request that arrived from `peer` (after the PROXY header) with
    /// `headers`: `peer` itself unless it is a trusted proxy naming a client in the
    /// configured header. A forwarded address without a port gets port 0.
    pub fn client(&self, headers: &HeaderMap, peer: SocketAddr) -> SocketAddr {
        let name = match self.forwarded_header {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => http::header::FORWARDED.as_str(),
            ForwardedHeader::None => return peer,
        };
        if !self.is_trusted(peer.ip()) || !headers.contains_key(name) {
            return peer;
        }
        // Every element of every field line, in order; `None` for what is not an address.
        let mut hops: Vec<Option<SocketAddr>> = Vec::new();
        for value in headers.get_all(name) {
            let Ok(value) = value.to_str() else {
                hops.push(None);
                continue;
            };
            match self.forwarded_header {
                ForwardedHeader::Forwarded => hops.extend(forwarded_for(value)),
                _ => hops.extend(
                    value
                        .split(',')
                        .map(str::trim)
                        .filter(|e| !e.is_empty())
                        .map(node),
                ),
            }
        }
        walk(&hops, peer, |ip| self.is_trusted(ip))
    }
}

/// The first untrusted hop from the right of `hops` (what `peer`, trusted, was told), the
/// nearest trusted one when a hop is not an address, the leftmost when all are trusted.
pub(crate) fn walk(
    hops: &[Option<SocketAddr>],
    peer: SocketAddr,
    trusted: impl Fn(IpAddr) -> bool,
) -> SocketAddr {
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Some(hop) = *hop else { return client };
        client = hop;
        if !trusted(hop.ip()) {
            return hop;
        }
    }
    client
}

/// A node of a forwarding header: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`, `[2001:db8::1]`,
/// `[2001:db8::1]:80`, an obfuscated port (`:_x`) read as 0; `None` for anything else
/// (`unknown`, `_hidden`, names, garbage).
pub(crate) fn node(s: &str) -> Option<SocketAddr> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (host.parse::<Ipv6Addr>().ok().map(IpAddr::V6)?, port)
    } else if let Ok(ip) = s.parse::<IpAddr>() {
        (ip, None)
    } else {
        let (host, port) = s.split_once(':')?;
        (host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)?, Some(port))
    };
    let port = match port {
        None => 0,
        Some(p) if p.starts_with('_') => 0,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse().ok()?
        }
        Some(_) => return None,
    };
    Some(SocketAddr::new(host, port))
}

/// The `for=` node of each element of a `Forwarded` field value (RFC 7239), `None` for an
/// element without exactly one, or whose value is not an address.
pub(crate) fn forwarded_for(value: &str) -> Vec<Option<SocketAddr>> {
    split_unquoted(value, ',')
        .into_iter()
        .filter(|element| !element.trim().is_empty())
        .map(|element| {
            let mut found = None;
            for pair in split_unquoted(element, ';') {
                let Some((name, v)) = pair.split_once('=') else {
                    continue;
                };
                if name.trim().eq_ignore_ascii_case("for") {
                    if found.is_some() {
                        return None;
                    }
                    found = Some(unquote(v.trim())?);
                }
            }
            node(&found?)
        })
        .collect()
}

/// `s` split at each `sep` outside quoted strings.
fn split_unquoted(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A token as is, a quoted string without its quotes and escapes; `None` when unterminated.
fn unquote(v: &str) -> Option<String> {
    let Some(inner) = v.strip_prefix('"') else {
        return (!v.contains('"')).then(|| v.to_owned());
    };
    let inner = inner.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// What a PROXY protocol header says about the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyHeader {
    /// The client's address (v2 `PROXY` over IPv4 or IPv6; v1 `TCP4`, `TCP6`).
    Client(SocketAddr),
    /// Keep the socket's peer: a v2 `LOCAL` command (the proxy's own health check), the
    /// `UNSPEC` or `UNIX` family, or v1 `UNKNOWN`.
    Local,
}

/// Why a connection's PROXY protocol header was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProxyHeaderError {
    /// The connection failed or ended inside the header.
    #[error("reading the PROXY header: {0}")]
    Io(#[from] std::io::Error),
    /// The connection starts with something else.
    #[error("the connection does not start with a PROXY protocol header")]
    Missing,
    /// A header we cannot read.
    #[error("malformed PROXY protocol header: {0}")]
    Malformed(&'static str),
    /// A v2 header announcing more than [`V2_MAX_PAYLOAD`] bytes.
    #[error(
        "a PROXY v2 header of {0} bytes after the fixed part, over the {V2_MAX_PAYLOAD}-byte bound"
    )]
    TooLarge(usize),
}

/// The v2 signature.
pub(crate) const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// The longest v1 line, `\r\n` included (the specification's bound).
pub(crate) const V1_MAX: usize = 107;
/// The most bytes of addresses and TLVs a v2 header may announce (the format allows 65535;
/// addresses take at most 216, and the TLVs proxies send — ALPN, authority, unique id, TLS
/// details — fit in a few hundred).
pub const V2_MAX_PAYLOAD: usize = 4096;

/// Reads one PROXY protocol header (v2, or v1) from the start of `io`, and not a byte more.
pub(crate) async fn read_header<R: AsyncRead + Unpin>(
    io: &mut R,
) -> Result<ProxyHeader, ProxyHeaderError> {
    // Both versions are at least 15 bytes long ("PROXY UNKNOWN\r\n", 16-byte v2 fixed part).
    let mut start = [0u8; 12];
    io.read_exact(&mut start).await?;
    if start == V2_SIGNATURE {
        let mut fixed = [0u8; 4];
        io.read_exact(&mut fixed).await?;
        let len = usize::from(u16::from_be_bytes([fixed[2], fixed[3]]));
        if len > V2_MAX_PAYLOAD {
            return Err(ProxyHeaderError::TooLarge(len));
        }
        let mut payload = vec![0u8; len];
        io.read_exact(&mut payload).await?;
        return parse_v2(fixed[0], fixed[1], &payload);
    }
    if !start.starts_with(b"PROXY ") {
        return Err(ProxyHeaderError::Missing);
    }
    if start.windows(2).any(|w| w == b"\r\n") {
        return Err(ProxyHeaderError::Malformed("v1 line too short"));
    }
    let mut line = Vec::with_capacity(V1_MAX);
    line.extend_from_slice(&start);
    while !line.ends_with(b"\r\n") {
        if line.len() >= V1_MAX {
            return Err(ProxyHeaderError::Malformed("v1 line longer than 107 bytes"));
        }
        // A byte at a time: what follows the line is the client's, not ours to consume.
        line.push(io.read_u8().await?);
    }
    parse_v1(&line)
}

/// A v2 header after its signature: version and command, family and transport, and the
/// `payload` (addresses, then TLVs, which are ignored).
pub(crate) fn parse_v2(
    version_command: u8,
    family_transport: u8,
    payload: &[u8],
) -> Result<ProxyHeader, ProxyHeaderError> {
    use ProxyHeaderError::Malformed;
    if version_command >> 4 != 2 {
        return Err(Malformed("v2 signature with a version other than 2"));
    }
    let proxy = match version_command & 0x0f {
        0 => false,
        1 => true,
        _ => return Err(Malformed("unknown v2 command")),
    };
    if family_transport & 0x0f > 2 {
        return Err(Malformed("unknown v2 transport protocol"));
    }
    let family = family_transport >> 4;
    let needed = match family {
        0 => 0,
        1 => 12,
        2 => 36,
        3 => 216,
        _ => return Err(Malformed("unknown v2 address family")),
    };
    if !proxy {
        // LOCAL: the proxy speaking for itself; addresses, if any, are to be ignored.
        return Ok(ProxyHeader::Local);
    }
    if payload.len() < needed {
        return Err(Malformed("v2 addresses shorter than their family"));
    }
    let port = |at: usize| u16::from_be_bytes([payload[at], payload[at + 1]]);
    Ok(match family {
        1 => {
            let ip = Ipv4Addr::new(payload[0], payload[1], payload[2], payload[3]);
            ProxyHeader::Client(SocketAddr::new(IpAddr::V4(ip), port(8)))
        }
        2 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&payload[..16]);
            ProxyHeader::Client(SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(octets)),
                port(32),
            ))
        }
        // UNSPEC or UNIX: no IP address to speak of.
        _ => ProxyHeader::Local,
    })
}

/// A v1 line, `\r\n` included: `PROXY TCP4|TCP6 SRC DST SPORT DPORT` or `PROXY UNKNOWN …`.
pub(crate) fn parse_v1(line: &[u8]) -> Result<ProxyHeader, ProxyHeaderError> {
    use ProxyHeaderError::Malformed;
    let line = line
        .strip_suffix(b"\r\n")
        .ok_or(Malformed("v1 line without CRLF"))?;
    let line = std::str::from_utf8(line).map_err(|_| Malformed("v1 line not ASCII"))?;
    let fields: Vec<&str> = line.split(' ').collect();
    match fields.as_slice() {
        ["PROXY", "UNKNOWN", ..] => Ok(ProxyHeader::Local),
        [
            "PROXY",
            family @ ("TCP4" | "TCP6"),
            source,
            destination,
            sport,
            dport,
        ] => {
            let v4 = *family == "TCP4";
            let ip = |s: &str| {
                if v4 {
                    s.parse::<Ipv4Addr>().map(IpAddr::V4).ok()
                } else {
                    s.parse::<Ipv6Addr>().map(IpAddr::V6).ok()
                }
            };
            let port = |p: &str| {
                (!p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse::<u16>().ok())
                    .flatten()
            };
            let source = ip(source).ok_or(Malformed("v1 source address"))?;
            ip(destination).ok_or(Malformed("v1 destination address"))?;
            let source_port = port(sport).ok_or(Malformed("v1 source port"))?;
            port(dport).ok_or(Malformed("v1 destination port"))?;
            Ok(ProxyHeader::Client(SocketAddr::new(source, source_port)))
        }
        _ => Err(Malformed("v1 line")),
    }
}

#[cfg(test)]
mod tests;
