use std::net::{IpAddr, SocketAddr};

use http::{HeaderMap, HeaderValue};

use super::{
    ForwardedHeader, IpNet, ProxyHeader, ProxyHeaderError, ProxyOptions, V1_MAX, V2_MAX_PAYLOAD,
    V2_SIGNATURE, forwarded_for, node, read_header, walk,
};

fn addr(s: &str) -> SocketAddr {
    s.parse().expect("a socket address")
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("an IP address")
}

/// A v2 header: signature, version/command, family/transport, length, `payload`.
fn v2(version_command: u8, family_transport: u8, payload: &[u8]) -> Vec<u8> {
    let mut header = V2_SIGNATURE.to_vec();
    header.push(version_command);
    header.push(family_transport);
    let len = u16::try_from(payload.len()).expect("a short payload");
    header.extend_from_slice(&len.to_be_bytes());
    header.extend_from_slice(payload);
    header
}

fn v4_payload() -> Vec<u8> {
    let mut p = vec![10, 1, 2, 3, 127, 0, 0, 1];
    p.extend_from_slice(&40000u16.to_be_bytes());
    p.extend_from_slice(&8080u16.to_be_bytes());
    p
}

/// Reads a header from `bytes`; the result and what is left for HTTP.
async fn read(bytes: &[u8]) -> (Result<ProxyHeader, ProxyHeaderError>, Vec<u8>) {
    let mut rest = bytes;
    let result = read_header(&mut rest).await;
    (result, rest.to_vec())
}

#[tokio::test]
async fn a_v2_ipv4_header_names_the_client_and_leaves_the_request_alone() {
    let mut bytes = v2(0x21, 0x11, &v4_payload());
    bytes.extend_from_slice(b"GET / HTTP/1.1\r\n");
    let (header, rest) = read(&bytes).await;
    assert_eq!(
        header.expect("a header"),
        ProxyHeader::Client(addr("10.1.2.3:40000"))
    );
    assert_eq!(rest, b"GET / HTTP/1.1\r\n");
}

#[tokio::test]
async fn a_v2_ipv6_header_with_tlvs_names_the_client() {
    let mut payload = Vec::new();
    let src: std::net::Ipv6Addr = "2001:db8::7".parse().expect("v6");
    let dst: std::net::Ipv6Addr = "::1".parse().expect("v6");
    payload.extend_from_slice(&src.octets());
    payload.extend_from_slice(&dst.octets());
    payload.extend_from_slice(&4711u16.to_be_bytes());
    payload.extend_from_slice(&443u16.to_be_bytes());
    // A TLV (PP2_TYPE_AUTHORITY "a.example"), ignored.
    payload.extend_from_slice(&[0x02, 0, 9]);
    payload.extend_from_slice(b"a.example");
    let (header, rest) = read(&v2(0x21, 0x21, &payload)).await;
    assert_eq!(
        header.expect("a header"),
        ProxyHeader::Client(addr("[2001:db8::7]:4711"))
    );
    assert!(rest.is_empty());
}

#[tokio::test]
async fn local_unspec_and_unix_keep_the_socket_peer() {
    // LOCAL (a health check), with or without addresses.
    assert_eq!(
        read(&v2(0x20, 0x00, &[])).await.0.expect("LOCAL"),
        ProxyHeader::Local
    );
    assert_eq!(
        read(&v2(0x20, 0x11, &v4_payload())).await.0.expect("LOCAL"),
        ProxyHeader::Local
    );
    // PROXY over UNSPEC, and over UNIX (two 108-byte paths).
    assert_eq!(
        read(&v2(0x21, 0x00, &[])).await.0.expect("UNSPEC"),
        ProxyHeader::Local
    );
    let (header, rest) = read(&v2(0x21, 0x31, &[0u8; 216])).await;
    assert_eq!(header.expect("UNIX"), ProxyHeader::Local);
    assert!(rest.is_empty());
    assert!(matches!(
        read(&v2(0x21, 0x31, &[0u8; 100])).await.0,
        Err(ProxyHeaderError::Malformed(_))
    ));
}

#[tokio::test]
async fn truncated_headers_are_errors() {
    let full = v2(0x21, 0x11, &v4_payload());
    for len in [0, 5, 12, 15, 16, full.len() - 1] {
        assert!(
            matches!(read(&full[..len]).await.0, Err(ProxyHeaderError::Io(_))),
            "{len} bytes"
        );
    }
    // Addresses shorter than the family needs.
    assert!(matches!(
        read(&v2(0x21, 0x11, &v4_payload()[..8])).await.0,
        Err(ProxyHeaderError::Malformed(_))
    ));
    assert!(matches!(
        read(&v2(0x21, 0x21, &v4_payload())).await.0,
        Err(ProxyHeaderError::Malformed(_))
    ));
    assert!(matches!(
        read(b"PROXY TCP4 10.1.2.3 127.0.0.1 1 2").await.0,
        Err(ProxyHeaderError::Io(_))
    ));
}

#[tokio::test]
async fn wrong_signatures_versions_commands_and_families_are_refused() {
    assert!(matches!(
        read(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.0,
        Err(ProxyHeaderError::Missing)
    ));
    let mut almost = v2(0x21, 0x11, &v4_payload());
    almost[11] = b'X';
    assert!(matches!(
        read(&almost).await.0,
        Err(ProxyHeaderError::Missing)
    ));
    for (vc, ft) in [
        (0x11, 0x11),
        (0x31, 0x11),
        (0x22, 0x11),
        (0x21, 0x41),
        (0x21, 0x13),
    ] {
        assert!(
            matches!(
                read(&v2(vc, ft, &v4_payload())).await.0,
                Err(ProxyHeaderError::Malformed(_))
            ),
            "{vc:#x} {ft:#x}"
        );
    }
}

#[tokio::test]
async fn an_oversized_v2_header_is_refused_before_it_is_read() {
    let mut bytes = V2_SIGNATURE.to_vec();
    bytes.extend_from_slice(&[0x21, 0x11]);
    let len = u16::try_from(V2_MAX_PAYLOAD + 1).expect("fits");
    bytes.extend_from_slice(&len.to_be_bytes());
    assert!(matches!(
        read(&bytes).await.0,
        Err(ProxyHeaderError::TooLarge(n)) if n == V2_MAX_PAYLOAD + 1
    ));
}

#[tokio::test]
async fn v1_lines() {
    let (header, rest) = read(b"PROXY TCP4 10.1.2.3 127.0.0.1 40000 8080\r\nGET /").await;
    assert_eq!(
        header.expect("TCP4"),
        ProxyHeader::Client(addr("10.1.2.3:40000"))
    );
    assert_eq!(rest, b"GET /");
    assert_eq!(
        read(b"PROXY TCP6 2001:db8::7 ::1 4711 443\r\n")
            .await
            .0
            .expect("TCP6"),
        ProxyHeader::Client(addr("[2001:db8::7]:4711"))
    );
    assert_eq!(
        read(b"PROXY UNKNOWN\r\n").await.0.expect("UNKNOWN"),
        ProxyHeader::Local
    );
    assert_eq!(
        read(b"PROXY UNKNOWN ffff::1 ::1 1 2\r\n")
            .await
            .0
            .expect("UNKNOWN with addresses"),
        ProxyHeader::Local
    );
    for bad in [
        &b"PROXY TCP4 2001:db8::7 127.0.0.1 1 2\r\n"[..],
        b"PROXY TCP6 10.1.2.3 ::1 1 2\r\n",
        b"PROXY TCP4 10.1.2.3 127.0.0.1 65536 2\r\n",
        b"PROXY TCP4 10.1.2.3 127.0.0.1 +1 2\r\n",
        b"PROXY TCP4 10.1.2.3 127.0.0.1 1\r\n",
        b"PROXY TCP4  10.1.2.3 127.0.0.1 1 2\r\n",
        b"PROXY UDP4 10.1.2.3 127.0.0.1 1 2\r\n",
        b"PROXY \r\nGET / HTTP/1.1\r\n",
    ] {
        assert!(
            matches!(read(bad).await.0, Err(ProxyHeaderError::Malformed(_))),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    // No CRLF within the bound: refused without reading on.
    let mut long = b"PROXY TCP6 ".to_vec();
    long.resize(V1_MAX + 50, b'1');
    let (header, rest) = read(&long).await;
    assert!(matches!(header, Err(ProxyHeaderError::Malformed(_))));
    assert_eq!(rest.len(), 50);
}

#[test]
fn networks_parse_and_match() {
    let net = |s: &str| s.parse::<IpNet>().expect("a network");
    assert!(net("10.0.0.0/8").contains(ip("10.200.1.1")));
    assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
    assert!(net("127.0.0.1").contains(ip("127.0.0.1")));
    assert!(!net("127.0.0.1").contains(ip("127.0.0.2")));
    assert!(net("127.0.0.1").contains(ip("::ffff:127.0.0.1")), "mapped");
    assert!(net("0.0.0.0/0").contains(ip("8.8.8.8")));
    assert!(!net("0.0.0.0/0").contains(ip("::1")));
    assert!(net("fd00::/8").contains(ip("fd12::1")));
    assert!(net("[::1]").contains(ip("::1")));
    assert!(net("::/0").contains(ip("2001:db8::1")));
    assert_eq!(net(" 10.1.0.0/16 ").to_string(), "10.1.0.0/16");
    for bad in [
        "",
        "10.0.0.0/33",
        "::/129",
        "10.0.0.0/",
        "10.0.0.0/-1",
        "host",
        "10.0.0/8",
    ] {
        assert!(bad.parse::<IpNet>().is_err(), "{bad:?}");
    }
}

#[test]
fn nodes() {
    assert_eq!(node("192.0.2.1"), Some(addr("192.0.2.1:0")));
    assert_eq!(node("192.0.2.1:80"), Some(addr("192.0.2.1:80")));
    assert_eq!(node("2001:db8::1"), Some(addr("[2001:db8::1]:0")));
    assert_eq!(node("[2001:db8::1]"), Some(addr("[2001:db8::1]:0")));
    assert_eq!(node("[2001:db8::1]:4711"), Some(addr("[2001:db8::1]:4711")));
    assert_eq!(node("192.0.2.1:_hidden"), Some(addr("192.0.2.1:0")));
    for bad in [
        "unknown",
        "_hidden",
        "example.com",
        "192.0.2.1:",
        "192.0.2.1:99999",
        "[192.0.2.1]",
        "[2001:db8::1]x",
        "",
    ] {
        assert_eq!(node(bad), None, "{bad:?}");
    }
}

#[test]
fn forwarded_elements() {
    assert_eq!(
        forwarded_for(
            r#"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711""#
        ),
        [
            Some(addr("192.0.2.60:0")),
            Some(addr("[2001:db8:cafe::17]:4711"))
        ]
    );
    // Quoted separators stay inside their value; escapes are undone.
    assert_eq!(
        forwarded_for(r#"by="a,b;c";for="192.0.2.1:80""#),
        [Some(addr("192.0.2.1:80"))]
    );
    assert_eq!(
        forwarded_for(r#"for="192.0.2\.1""#),
        [Some(addr("192.0.2.1:0"))]
    );
    // Not addresses: unknown, obfuscated, no for=, two for=, unterminated quote.
    assert_eq!(
        forwarded_for(r#"for=unknown, for=_x, proto=https, for=1.1.1.1;for=2.2.2.2, for="1.1.1.1"#),
        [None, None, None, None, None]
    );
}

#[test]
fn the_walk_takes_the_first_untrusted_hop_from_the_right() {
    let trusted = |ip: IpAddr| ip.to_string().starts_with("10.");
    let peer = addr("10.0.0.1:5000");
    let hops = |list: &[&str]| list.iter().map(|h| node(h)).collect::<Vec<_>>();
    // Spoofed entries left of the real client are never reached.
    assert_eq!(
        walk(&hops(&["6.6.6.6", "1.2.3.4", "10.0.0.2"]), peer, trusted),
        addr("1.2.3.4:0")
    );
    // A hop that is not an address stops the walk at the nearest trusted one.
    assert_eq!(
        walk(&hops(&["1.2.3.4", "unknown", "10.0.0.2"]), peer, trusted),
        addr("10.0.0.2:0")
    );
    assert_eq!(walk(&hops(&["1.2.3.4", "garbage"]), peer, trusted), peer);
    // All trusted: the furthest.
    assert_eq!(
        walk(&hops(&["10.0.0.3", "10.0.0.2"]), peer, trusted),
        addr("10.0.0.3:0")
    );
    assert_eq!(walk(&[], peer, trusted), peer);
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).expect("a name"),
            HeaderValue::from_str(value).expect("a value"),
        );
    }
    map
}

fn options(header: ForwardedHeader) -> ProxyOptions {
    ProxyOptions {
        trusted: vec![
            "127.0.0.1".parse().expect("net"),
            "10.0.0.0/8".parse().expect("net"),
        ],
        proxy_protocol: false,
        forwarded_header: header,
    }
}

#[test]
fn headers_are_read_only_from_trusted_peers_and_only_the_configured_one() {
    let xff = options(ForwardedHeader::XForwardedFor);
    let spoofed = headers(&[("x-forwarded-for", "1.2.3.4")]);
    let untrusted = addr("192.0.2.9:1234");
    assert_eq!(xff.client(&spoofed, untrusted), untrusted);
    let proxy = addr("127.0.0.1:1234");
    assert_eq!(xff.client(&spoofed, proxy), addr("1.2.3.4:0"));
    // Several field lines are one list, in order.
    let two_lines = headers(&[
        ("x-forwarded-for", "6.6.6.6, 1.2.3.4"),
        ("x-forwarded-for", "10.1.1.1"),
    ]);
    assert_eq!(xff.client(&two_lines, proxy), addr("1.2.3.4:0"));
    // The other header is the client's own: ignored.
    let forwarded = headers(&[("forwarded", "for=1.2.3.4")]);
    assert_eq!(xff.client(&forwarded, proxy), proxy);
    let fwd = options(ForwardedHeader::Forwarded);
    assert_eq!(fwd.client(&forwarded, proxy), addr("1.2.3.4:0"));
    assert_eq!(fwd.client(&spoofed, proxy), proxy);
    assert_eq!(
        options(ForwardedHeader::None).client(&spoofed, proxy),
        proxy
    );
    // Nobody trusted: nothing read.
    assert_eq!(ProxyOptions::default().client(&spoofed, proxy), proxy);
    // A value that is not text stops the walk.
    let mut opaque = HeaderMap::new();
    opaque.append("x-forwarded-for", HeaderValue::from_static("1.2.3.4"));
    opaque.append(
        "x-forwarded-for",
        HeaderValue::from_bytes(b"\xff").expect("opaque bytes"),
    );
    assert_eq!(xff.client(&opaque, proxy), proxy);
}
