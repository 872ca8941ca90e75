use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("addr")
}

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
        "fd00:ec2::254",
        "fe80::1",
        "fec0::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "::a9fe:a9fe",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::1",
        "2002:7f00:1::",
        "2002:a9fe:a9fe::1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "100::1",
    ] {
        assert!(non_public(ip(a)).is_some(), "{a} must be refused");
    }
    for a in [
        "8.8.8.8",
        "203.0.113.7",
        "172.32.0.1",
        "2001:4860::8888",
        "1.1.1.1",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert_eq!(non_public(ip(a)), None, "{a} is public");
    }
}

/// Every spelling of an IPv4 address that the WHATWG URL parser (and so the HTTP client)
/// reads as that address.
fn v4_forms(a: Ipv4Addr) -> Vec<String> {
    let [o0, o1, o2, o3] = a.octets();
    let n = u32::from(a);
    let dotted = a.to_string();
    let pct: String = dotted.bytes().map(|b| format!("%{b:02X}")).collect();
    let fullwidth: String = dotted
        .chars()
        .map(|c| match c {
            '0'..='9' => char::from_u32(0xFF10 + (c as u32 - '0' as u32)).unwrap_or(c),
            '.' => '\u{FF0E}',
            other => other,
        })
        .collect();
    let (hi, lo) = (n >> 16, n & 0xffff);
    vec![
        dotted.clone(),
        format!("{dotted}."),
        pct,
        format!("%{:02x}{}", dotted.as_bytes()[0], &dotted[1..]),
        fullwidth,
        format!("0x{o0:x}.0x{o1:x}.0x{o2:x}.0x{o3:x}"),
        format!("0X{o0:X}.{o1}.{o2}.{o3}"),
        format!("0{o0:o}.0{o1:o}.0{o2:o}.0{o3:o}"),
        format!("{n}"),
        format!("{n}."),
        format!("0x{n:x}"),
        format!("0{n:o}"),
        format!("{o0}.{}", n & 0x00ff_ffff),
        format!("0x{o0:x}.{}", n & 0x00ff_ffff),
        format!("{o0}.{o1}.{}", n & 0xffff),
        format!("[::ffff:{dotted}]"),
        format!("[::ffff:{hi:x}:{lo:x}]"),
        format!("[0:0:0:0:0:ffff:{hi:X}:{lo:X}]"),
        format!("[::{dotted}]"),
        format!("[64:ff9b::{dotted}]"),
        format!("[64:ff9b::{hi:x}:{lo:x}]"),
        format!("[2002:{hi:x}:{lo:x}::1]"),
    ]
}

const V4_TARGETS: [(&str, &str); 7] = [
    ("127.0.0.1", "loopback"),
    ("127.1.2.3", "loopback"),
    ("10.0.0.1", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "cloud metadata"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("0.0.0.0", "unspecified"),
];

#[test]
fn every_spelling_of_a_non_public_v4_address_is_seen_as_that_address() {
    for (target, what) in V4_TARGETS {
        let addr: Ipv4Addr = target.parse().expect("addr");
        for form in v4_forms(addr) {
            let url = format!("http://{form}:9/hook");
            match webhook_destination(&url) {
                Ok((Destination::Addr(seen), 9)) => assert!(
                    non_public(seen).is_some(),
                    "{url} ({what}) parsed as public {seen}"
                ),
                other => panic!("{url} ({what}): {other:?}"),
            }
        }
    }
}

#[test]
fn non_public_v6_spellings_are_seen_as_their_address() {
    for form in [
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[0000:0000::0001]",
        "[::]",
        "[FE80::1]",
        "[fd00:ec2::254]",
        "[FC00::1]",
    ] {
        let url = format!("https://{form}/hook");
        match webhook_destination(&url) {
            Ok((Destination::Addr(seen), 443)) => {
                assert!(non_public(seen).is_some(), "{url} parsed as public {seen}")
            }
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[test]
fn urls_the_client_cannot_parse_are_refused() {
    for url in [
        "ftp://x/",
        "http://[fe80::1%25eth0]/",
        "http://[::1%251]:9/",
        "http://256.0.0.1/",
        "http://0x100000000/",
        "http://1.2.3.4.5/",
        "not a url",
        "http://./",
        "data:text/plain,hi",
    ] {
        assert_eq!(webhook_destination(url), Err(PolicyError::BadUrl), "{url}");
    }
}

#[test]
fn names_and_ports_are_what_the_client_uses() {
    assert_eq!(
        webhook_destination("https://User:pw@Example.COM./x?y"),
        Ok((Destination::Name("example.com".into()), 443))
    );
    assert_eq!(
        webhook_destination("http://hooks.example:8080"),
        Ok((Destination::Name("hooks.example".into()), 8080))
    );
    // The WHATWG parser reads the first path segment as the host here, as reqwest does.
    assert_eq!(
        webhook_destination("http:///path"),
        Ok((Destination::Name("path".into()), 80))
    );
    assert_eq!(
        webhook_destination("HTTP://[::1]:80/"),
        Ok((Destination::Addr(ip("::1")), 80))
    );
}

#[test]
fn allow_lists_names_addresses_and_ranges() {
    let policy = WebhookPolicy::new()
        .allow("127.0.0.1")
        .and_then(|p| p.allow("10.0.0.0/8"))
        .and_then(|p| p.allow("Hooks.Internal."))
        .expect("policy");
    assert!(policy.check_addr("x", ip("127.0.0.1")).is_ok());
    assert!(policy.check_addr("x", ip("127.0.0.2")).is_err());
    assert!(policy.check_addr("x", ip("10.9.8.7")).is_ok());
    assert!(
        policy
            .check_addr("hooks.internal", ip("192.168.0.1"))
            .is_ok()
    );
    assert!(
        policy
            .check_addr("hooks.internal.", ip("192.168.0.1"))
            .is_ok()
    );
    assert!(policy.check_addr("x", ip("192.168.0.1")).is_err());
    assert!(policy.check_addr("x", ip("8.8.8.8")).is_ok());
    assert_eq!(
        WebhookPolicy::new().allow("10.0.0.0/33"),
        Err(AllowEntryError::Prefix {
            entry: "10.0.0.0/33".into(),
            max: 32
        })
    );
    assert_eq!(WebhookPolicy::new().allow(" "), Err(AllowEntryError::Empty));
    assert!(matches!(
        WebhookPolicy::new().allow("nope/8"),
        Err(AllowEntryError::NotARange(_))
    ));
}

#[tokio::test]
async fn every_spelling_is_refused_at_configuration_time() {
    let policy = WebhookPolicy::new();
    for (target, what) in V4_TARGETS {
        let addr: Ipv4Addr = target.parse().expect("addr");
        for form in v4_forms(addr) {
            let url = format!("http://{form}:9/hook");
            assert!(
                matches!(
                    policy.check_url(&url).await,
                    Err(PolicyError::Forbidden { .. })
                ),
                "{url} ({what}) must be refused"
            );
        }
    }
    // An allow-listed address is allowed in every spelling of that address (IPv4-mapped
    // included), and nothing else with it: NAT64, 6to4 and compatible forms name other hosts.
    let loopback = WebhookPolicy::new().allow("127.0.0.1").expect("policy");
    for form in v4_forms(Ipv4Addr::LOCALHOST) {
        let url = format!("http://{form}:9/hook");
        let same_host = !form.starts_with('[')
            || form.starts_with("[::ffff:")
            || form.starts_with("[0:0:0:0:0:ffff:");
        assert_eq!(loopback.check_url(&url).await.is_ok(), same_host, "{url}");
    }
    assert!(loopback.check_url("http://127.0.0.2/").await.is_err());
}

#[tokio::test]
async fn config_time_checks_literals_and_resolved_names() {
    let policy = WebhookPolicy::new();
    for url in [
        "http://127.0.0.1:9/hook",
        "http://[::1]/",
        "http://localhost:8080/hook",
        "http://localhost.:8080/hook",
        "http://LOCALHOST/hook",
    ] {
        assert!(
            matches!(
                policy.check_url(url).await,
                Err(PolicyError::Forbidden { .. })
            ),
            "{url}"
        );
    }
    assert!(matches!(
        policy.check_url("http://[fe80::1%25lo]/").await,
        Err(PolicyError::BadUrl)
    ));
    assert!(policy.check_url("https://203.0.113.7/hook").await.is_ok());
    assert!(
        WebhookPolicy::allow_any()
            .check_url("http://127.0.0.1:9/")
            .await
            .is_ok()
    );
}
