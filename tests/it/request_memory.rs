//! Memory a client can make the server hold with requests it never finishes (issue 27): an
//! HTTP/1.1 request head is refused at `max_header_bytes` (hyper alone buffered about 400 KiB
//! of one).

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use trident_server::{ConnectionLimits, DEFAULT_MAX_HEADER_BYTES, ServerOptions};

use crate::slowloris::{MARGIN, connect, read_until_closed, relaxed, serve, still_open};

/// Exactly `len` bytes of an HTTP/1.1 request head that never ends (no blank line).
fn unfinished_head(len: usize) -> Vec<u8> {
    let mut head = b"POST / HTTP/1.1\r\nHost: x\r\n".to_vec();
    while head.len() < len {
        let room = len - head.len();
        let line = format!("X-Pad: {}\r\n", "a".repeat(1000));
        head.extend_from_slice(&line.as_bytes()[..line.len().min(room)]);
    }
    head
}

/// Writes `bytes`, ignoring a server that already closed the connection (it may refuse
/// before the client is done).
async fn send(socket: &mut TcpStream, bytes: &[u8]) {
    let _ = socket.write_all(bytes).await;
}

/// A card request with one header of `len` bytes over `client`.
async fn card_with_header(
    client: &reqwest::Client,
    origin: &str,
    len: usize,
) -> reqwest::StatusCode {
    client
        .get(format!("{origin}{}", trident_server::CARD_PATH))
        .header("x-pad", "a".repeat(len))
        .send()
        .await
        .expect("a response")
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_at_the_head_limit_is_answered_431_and_closed() {
    // The header timeout is a minute: only the head limit can end these quickly.
    let server = serve(relaxed(), ServerOptions::default()).await;
    let mut socket = connect(server.addr).await;
    send(&mut socket, &unfinished_head(DEFAULT_MAX_HEADER_BYTES)).await;
    let (response, closed) = read_until_closed(&mut socket, MARGIN).await;
    assert!(
        closed,
        "a head at the limit is not buffered on: the connection closes"
    );
    assert!(
        response.starts_with("HTTP/1.1 431"),
        "431 Request Header Fields Too Large first: {response:?}"
    );
    // Under the limit, an unfinished head waits for the rest (until the header timeout).
    let mut under = connect(server.addr).await;
    send(
        &mut under,
        &unfinished_head(DEFAULT_MAX_HEADER_BYTES - 4096),
    )
    .await;
    assert!(still_open(&mut under).await);
    // HTTP/2: a header list over the limit is refused for its stream (431).
    let h1 = reqwest::Client::new();
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    assert_eq!(
        card_with_header(&h2, &server.interfaces.rest, 20_000).await,
        reqwest::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert!(
        card_with_header(&h1, &server.interfaces.rest, 8_000)
            .await
            .is_success()
    );
    // The limit is the server's to set, for both protocols.
    let roomy = serve(
        ConnectionLimits {
            max_header_bytes: Some(64 << 10),
            ..relaxed()
        },
        ServerOptions::default(),
    )
    .await;
    for (name, client) in [("HTTP/1.1", &h1), ("HTTP/2", &h2)] {
        assert!(
            card_with_header(client, &roomy.interfaces.rest, 40_000)
                .await
                .is_success(),
            "{name}: a 40 KB header under a 64 KiB limit"
        );
    }
}
