//! Where push notifications may go: webhook URLs that resolve to loopback, private,
//! link-local (cloud metadata lives at 169.254.169.254), carrier-grade NAT, multicast or
//! reserved addresses are refused unless allow-listed — when a configuration is created
//! (so the client learns at once) and again when the sender connects (a name can resolve
//! elsewhere by then: DNS rebinding). See `trident_http::HttpWebhooks` for the second check.
//!
//! The host is judged exactly as the HTTP client will connect to it: the URL is parsed with
//! the WHATWG parser the client uses (`url::Url`), so every spelling of an address that the
//! client would normalise — `127.0.0.1.`, `%31%32%37.0.0.1`, `0x7f.1`, `0177.0.0.1`,
//! `2130706433`, `[::ffff:7f00:1]` — is seen as the address it is. [`WebhookPolicy::check_url`]
//! is the one function both checks call.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// An allow-list entry: a host name (exact, case-insensitive) or an address range.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    Host(String),
    Net { addr: IpAddr, prefix: u8 },
}

/// Which webhook destinations are allowed. The default refuses every non-public address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookPolicy {
    allow: Vec<Allowed>,
    any: bool,
}

/// Why a destination was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The URL is not an absolute http(s) URL with a host.
    #[error("not an absolute http(s) URL with a host")]
    BadUrl,
    /// The host is or resolves to an address the policy refuses.
    #[error(
        "{host} is {addr}, a {kind} address; webhooks may only reach public addresses unless allow-listed"
    )]
    Forbidden {
        /// The URL's host.
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// What kind of address it is.
        kind: &'static str,
    },
}

/// A malformed allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowEntryError {
    /// The entry is empty.
    #[error("an empty allow-list entry")]
    Empty,
    /// `ADDR/PREFIX` whose address part is not an IP address.
    #[error("{0:?}: not an address range")]
    NotARange(String),
    /// A prefix longer than the address.
    #[error("{entry:?}: prefix must be 0..={max}")]
    Prefix {
        /// The entry.
        entry: String,
        /// The longest prefix for its address family.
        max: u8,
    },
}

/// Where a webhook URL points, as the HTTP client will see it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    /// A literal address (in any spelling the URL parser accepts).
    Addr(IpAddr),
    /// A domain name, lower-cased and without a trailing dot; the client resolves it.
    Name(String),
}

/// Parses a webhook URL the way the HTTP client does and returns its destination and port.
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use trident_engine::{Destination, webhook_destination};
///
/// let loopback = Destination::Addr(IpAddr::V4(Ipv4Addr::LOCALHOST));
/// assert_eq!(webhook_destination("http://0x7f.1:9/hook"), Ok((loopback.clone(), 9)));
/// assert_eq!(webhook_destination("http://127.0.0.1.:9/"), Ok((loopback, 9)));
/// ```
pub fn webhook_destination(url: &str) -> Result<(Destination, u16), PolicyError> {
    let parsed = Url::parse(url).map_err(|_| PolicyError::BadUrl)?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(PolicyError::BadUrl);
    }
    let port = parsed.port_or_known_default().ok_or(PolicyError::BadUrl)?;
    let destination = match parsed.host().ok_or(PolicyError::BadUrl)? {
        Host::Ipv4(a) => Destination::Addr(IpAddr::V4(a)),
        Host::Ipv6(a) => Destination::Addr(IpAddr::V6(a)),
        Host::Domain(name) => {
            // The parser keeps a trailing dot on names it does not read as addresses;
            // `localhost.` is `localhost` to a resolver.
            let name = name.strip_suffix('.').unwrap_or(name);
            if name.is_empty() {
                return Err(PolicyError::BadUrl);
            }
            Destination::Name(name.to_ascii_lowercase())
        }
    };
    Ok((destination, port))
}

impl WebhookPolicy {
    /// Public addresses only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every destination (for tests and trusted networks only).
    pub fn allow_any() -> Self {
        Self {
            allow: Vec::new(),
            any: true,
        }
    }

    /// Whether every destination is allowed.
    pub fn allows_any(&self) -> bool {
        self.any
    }

    /// Also allows `entry`: a host name, an address, or a CIDR range (`10.0.0.0/8`,
    /// `fd00::/8`).
    ///
    /// ```
    /// use trident_engine::WebhookPolicy;
    ///
    /// let policy = WebhookPolicy::new().allow("127.0.0.1")?.allow("fd00::/8")?;
    /// assert!(WebhookPolicy::new().allow("10.0.0.0/33").is_err());
    /// # Ok::<(), trident_engine::AllowEntryError>(())
    /// ```
    pub fn allow(mut self, entry: &str) -> Result<Self, AllowEntryError> {
        let entry = entry.trim();
        let parsed = match entry.split_once('/') {
            Some((addr, prefix)) => {
                let addr: IpAddr = addr
                    .parse()
                    .map_err(|_| AllowEntryError::NotARange(entry.to_owned()))?;
                let max = if addr.is_ipv4() { 32 } else { 128 };
                let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max).ok_or_else(|| {
                    AllowEntryError::Prefix {
                        entry: entry.to_owned(),
                        max,
                    }
                })?;
                Allowed::Net { addr, prefix }
            }
            None => match entry.trim_matches(['[', ']']).parse::<IpAddr>() {
                Ok(addr) => Allowed::Net {
                    addr,
                    prefix: if addr.is_ipv4() { 32 } else { 128 },
                },
                Err(_) if !entry.is_empty() => Allowed::Host(
                    entry
                        .strip_suffix('.')
                        .unwrap_or(entry)
                        .to_ascii_lowercase(),
                ),
                Err(_) => return Err(AllowEntryError::Empty),
            },
        };
        self.allow.push(parsed);
        Ok(self)
    }

    /// Whether `host` is allow-listed by name (a trailing dot is ignored).
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        self.any
            || self
                .allow
                .iter()
                .any(|a| matches!(a, Allowed::Host(h) if h.eq_ignore_ascii_case(host)))
    }

    /// Checks one address `host` resolved to (or is).
    pub fn check_addr(&self, host: &str, addr: IpAddr) -> Result<(), PolicyError> {
        if self.host_allowed(host) {
            return Ok(());
        }
        let Some(kind) = non_public(addr) else {
            return Ok(());
        };
        // An IPv4-mapped IPv6 address is the IPv4 host itself.
        let canonical = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            v4 => v4,
        };
        let listed = self.allow.iter().any(|a| match a {
            Allowed::Net { addr: net, prefix } => {
                in_net(addr, *net, *prefix) || in_net(canonical, *net, *prefix)
            }
            Allowed::Host(_) => false,
        });
        if listed {
            Ok(())
        } else {
            Err(PolicyError::Forbidden {
                host: host.to_owned(),
                addr,
                kind,
            })
        }
    }

    /// Checks a webhook URL: parsed as the HTTP client parses it ([`webhook_destination`]); a
    /// literal address is checked as is, a name is resolved and every address checked. A
    /// name that does not resolve now is accepted: the sender's resolver checks it again at
    /// every connection. Called when a configuration is created and before each delivery.
    pub async fn check_url(&self, url: &str) -> Result<(), PolicyError> {
        let (destination, port) = webhook_destination(url)?;
        if self.any {
            return Ok(());
        }
        match &destination {
            Destination::Addr(addr) => self.check_addr(&addr.to_string(), *addr)?,
            Destination::Name(name) if self.host_allowed(name) => {}
            Destination::Name(name) => {
                if let Ok(addrs) = tokio::net::lookup_host((name.as_str(), port)).await {
                    for a in addrs {
                        self.check_addr(name, a.ip())?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn in_net(addr: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// What kind of non-public address `addr` is, or `None` for a public one. IPv6 forms that
/// carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that address.
pub fn non_public(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, o2, _] = a.octets();
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_private() {
        Some("private")
    } else if a.is_link_local() {
        Some("link-local (cloud metadata)")
    } else if a.is_unspecified() || o0 == 0 {
        Some("unspecified")
    } else if o0 == 100 && (64..128).contains(&o1) {
        Some("carrier-grade NAT")
    } else if a.is_multicast() {
        Some("multicast")
    } else if o0 >= 240 {
        Some("reserved")
    } else if o0 == 192 && o1 == 0 && o2 == 0 {
        Some("IETF protocol assignment")
    } else if o0 == 198 && (o1 == 18 || o1 == 19) {
        Some("benchmarking")
    } else {
        None
    }
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}

fn non_public_v6(a: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = a.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let s = a.segments();
    let first = s[0];
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_unspecified() {
        Some("unspecified")
    } else if s[..6] == [0; 6] {
        // IPv4-compatible (::a.b.c.d, deprecated): judge the embedded address.
        non_public_v4(embedded_v4(s[6], s[7])).or(Some("IPv4-compatible"))
    } else if first & 0xfe00 == 0xfc00 {
        Some("unique local (private)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if first & 0xffc0 == 0xfec0 {
        Some("site-local (private)")
    } else if a.is_multicast() {
        Some("multicast")
    } else if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 (well-known prefix): judge the embedded IPv4 address.
        non_public_v4(embedded_v4(s[6], s[7]))
    } else if s[..3] == [0x64, 0xff9b, 1] {
        Some("local-use NAT64")
    } else if first == 0x2002 {
        // 6to4: the relay forwards to the IPv4 address in bits 16..48.
        non_public_v4(embedded_v4(s[1], s[2]))
    } else if s[..2] == [0x2001, 0] {
        Some("Teredo")
    } else if s[..4] == [0x100, 0, 0, 0] {
        Some("discard-only")
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
