//! Where push notifications may go: webhook URLs that resolve to loopback, private,
//! link-local (cloud metadata lives at 169.254.169.254), carrier-grade NAT, multicast or
//! reserved addresses are refused unless allow-listed — when a configuration is created
//! (so the client learns at once) and again when the sender connects (a name can resolve
//! elsewhere by then: DNS rebinding). See `trident_rest::HttpWebhooks` for the second check.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

    /// Also allows `entry`: a host name, an address, or a CIDR range (`10.0.0.0/8`,
    /// `fd00::/8`). Returns an error message for a malformed range.
    pub fn allow(mut self, entry: &str) -> Result<Self, String> {
        let entry = entry.trim();
        let parsed = match entry.split_once('/') {
            Some((addr, prefix)) => {
                let addr: IpAddr = addr
                    .parse()
                    .map_err(|_| format!("{entry:?}: not an address range"))?;
                let max = if addr.is_ipv4() { 32 } else { 128 };
                let prefix: u8 = prefix
                    .parse()
                    .ok()
                    .filter(|p| *p <= max)
                    .ok_or_else(|| format!("{entry:?}: prefix must be 0..={max}"))?;
                Allowed::Net { addr, prefix }
            }
            None => match entry.trim_matches(['[', ']']).parse::<IpAddr>() {
                Ok(addr) => Allowed::Net {
                    addr,
                    prefix: if addr.is_ipv4() { 32 } else { 128 },
                },
                Err(_) if !entry.is_empty() => Allowed::Host(entry.to_ascii_lowercase()),
                Err(_) => return Err("an empty allow-list entry".into()),
            },
        };
        self.allow.push(parsed);
        Ok(self)
    }

    /// Whether `host` is allow-listed by name.
    pub fn host_allowed(&self, host: &str) -> bool {
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
        let listed = self.allow.iter().any(|a| match a {
            Allowed::Net { addr: net, prefix } => in_net(addr, *net, *prefix),
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

    /// Checks a URL at configuration time: a literal address is checked as is; a name is
    /// resolved and every address checked. A name that does not resolve now is accepted (it
    /// is checked again at every connection).
    pub async fn check_url(&self, url: &str) -> Result<(), PolicyError> {
        let (host, port) = host_port(url).ok_or(PolicyError::BadUrl)?;
        if self.any || self.host_allowed(&host) {
            return Ok(());
        }
        if let Ok(addr) = host.parse::<IpAddr>() {
            return self.check_addr(&host, addr);
        }
        match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(addrs) => {
                for a in addrs {
                    self.check_addr(&host, a.ip())?;
                }
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }
}

/// The host (without brackets) and port of an http(s) URL.
pub fn host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_ascii_lowercase(), port.parse().ok()?)),
        None => Some((authority.to_ascii_lowercase(), default_port)),
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

/// What kind of non-public address `addr` is, or `None` for a public one.
pub fn non_public(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, ..] = a.octets();
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
    } else if o0 == 192 && o1 == 0 && a.octets()[2] == 0 {
        Some("IETF protocol assignment")
    } else if o0 == 198 && (o1 == 18 || o1 == 19) {
        Some("benchmarking")
    } else {
        None
    }
}

fn non_public_v6(a: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = a.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let first = a.segments()[0];
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("unique local (private)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if a.is_multicast() {
        Some("multicast")
    } else if a.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64: judge the embedded IPv4 address.
        let [.., g, h] = a.segments();
        let v4 = Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
        non_public_v4(v4)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_ranges() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            let addr: IpAddr = a.parse().expect("addr");
            assert!(non_public(addr).is_some(), "{a} must be refused");
        }
        for a in [
            "8.8.8.8",
            "203.0.113.7",
            "172.32.0.1",
            "2001:4860::8888",
            "1.1.1.1",
        ] {
            let addr: IpAddr = a.parse().expect("addr");
            assert_eq!(non_public(addr), None, "{a} is public");
        }
    }

    #[test]
    fn urls_split_into_host_and_port() {
        assert_eq!(
            host_port("http://127.0.0.1:9/hook"),
            Some(("127.0.0.1".into(), 9))
        );
        assert_eq!(
            host_port("https://User:pw@Example.COM/x?y"),
            Some(("example.com".into(), 443))
        );
        assert_eq!(host_port("http://[::1]:8080/"), Some(("::1".into(), 8080)));
        assert_eq!(host_port("http://[fe80::1]"), Some(("fe80::1".into(), 80)));
        assert_eq!(host_port("ftp://x/"), None);
        assert_eq!(host_port("http:///path"), None);
    }

    #[test]
    fn allow_lists_names_addresses_and_ranges() {
        let policy = WebhookPolicy::new()
            .allow("127.0.0.1")
            .and_then(|p| p.allow("10.0.0.0/8"))
            .and_then(|p| p.allow("hooks.internal"))
            .expect("policy");
        let ip = |s: &str| s.parse::<IpAddr>().expect("addr");
        assert!(policy.check_addr("x", ip("127.0.0.1")).is_ok());
        assert!(policy.check_addr("x", ip("127.0.0.2")).is_err());
        assert!(policy.check_addr("x", ip("10.9.8.7")).is_ok());
        assert!(
            policy
                .check_addr("hooks.internal", ip("192.168.0.1"))
                .is_ok()
        );
        assert!(policy.check_addr("x", ip("192.168.0.1")).is_err());
        assert!(policy.check_addr("x", ip("8.8.8.8")).is_ok());
        assert!(WebhookPolicy::new().allow("10.0.0.0/33").is_err());
    }

    #[tokio::test]
    async fn config_time_checks_literals_and_resolved_names() {
        let policy = WebhookPolicy::new();
        assert!(matches!(
            policy.check_url("http://127.0.0.1:9/hook").await,
            Err(PolicyError::Forbidden { .. })
        ));
        assert!(matches!(
            policy.check_url("http://[::1]/").await,
            Err(PolicyError::Forbidden { .. })
        ));
        // `localhost` resolves to loopback.
        assert!(matches!(
            policy.check_url("http://localhost:8080/hook").await,
            Err(PolicyError::Forbidden { .. })
        ));
        assert!(policy.check_url("https://203.0.113.7/hook").await.is_ok());
        assert!(
            WebhookPolicy::allow_any()
                .check_url("http://127.0.0.1:9/")
                .await
                .is_ok()
        );
    }
}
