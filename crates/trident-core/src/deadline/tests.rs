use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::{CallContext, StreamEvent};

#[test]
fn grpc_timeout_parses_and_formats() {
    assert_eq!(parse_timeout("5S"), Some(Duration::from_secs(5)));
    assert_eq!(parse_timeout("100m"), Some(Duration::from_millis(100)));
    assert_eq!(parse_timeout("2M"), Some(Duration::from_secs(120)));
    assert_eq!(parse_timeout("1H"), Some(Duration::from_secs(3600)));
    assert_eq!(parse_timeout("7u"), Some(Duration::from_micros(7)));
    assert_eq!(parse_timeout("9n"), Some(Duration::from_nanos(9)));
    for bad in ["", "S", "5", "5s", "123456789S", "-1S", "1.5S", "5é"] {
        assert_eq!(parse_timeout(bad), None, "{bad:?}");
    }
    for d in [
        Duration::ZERO,
        Duration::from_nanos(99_999_999),
        Duration::from_millis(1500),
        Duration::from_secs(30),
        Duration::from_secs(86_400 * 3),
    ] {
        let text = format_timeout(d);
        let back = parse_timeout(&text).expect("formatted values parse");
        assert!(
            back <= d && d - back < d / 1_000 + Duration::from_nanos(1),
            "{d:?} → {text}"
        );
    }
    assert_eq!(format_timeout(Duration::MAX), "99999999H");
}

#[test]
fn the_deadline_travels_as_a_header_and_is_read_back() {
    let cx = CallContext::new().with_timeout(Duration::from_secs(30));
    let params = cx.outgoing_service_params();
    let (_, value) = params
        .iter()
        .find(|(n, _)| *n == TIMEOUT_HEADER)
        .expect("the deadline is sent");
    let seen =
        CallContext::from_service_params(|n| (n == TIMEOUT_HEADER).then_some(value.as_bytes()));
    let left = seen
        .deadline
        .expect("read back")
        .saturating_duration_since(Instant::now());
    assert!(
        left > Duration::from_secs(25) && left <= Duration::from_secs(30),
        "{left:?}"
    );
    // A later timeout never extends an earlier deadline.
    let shorter = cx.clone().with_timeout(Duration::from_secs(1));
    let longer = shorter.clone().with_timeout(Duration::from_secs(60));
    assert_eq!(shorter.deadline, longer.deadline);
    assert!(
        CallContext::new()
            .outgoing_service_params()
            .iter()
            .all(|(n, _)| *n != TIMEOUT_HEADER)
    );
}

#[tokio::test]
async fn a_call_ends_at_the_deadline_or_when_its_caller_cancels() {
    let never = || std::future::pending::<Result<(), crate::A2aError>>();
    let cx = CallContext::new().with_timeout(Duration::from_millis(20));
    let e = bounded(&cx, "GetTask", never())
        .await
        .expect_err("deadline");
    assert_eq!(e.kind(), ErrorKind::DeadlineExceeded);
    assert!(e.is_transport());
    assert!(e.to_string().starts_with("GetTask: "), "{e}");

    let token = CancellationToken::new();
    let cx = CallContext::new().with_cancellation(token.clone());
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        token.cancel();
    };
    let (r, ()) = tokio::join!(bounded(&cx, "GetTask", never()), cancel);
    let e = r.expect_err("cancelled");
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("cancelled"), "{e}");

    // Past deadlines and fired tokens fail before the exchange starts.
    let past = CallContext::new().with_deadline(Instant::now());
    let e = bounded(&past, "x", async { panic!("must not run") }).await;
    assert_eq!(
        e.map_err(|e| e.kind()),
        Err::<(), _>(ErrorKind::DeadlineExceeded)
    );

    let ok = bounded(&CallContext::new(), "x", async { Ok(7) }).await;
    assert_eq!(ok, Ok(7));
}

fn event() -> Result<StreamEvent, crate::A2aError> {
    Ok(StreamEvent {
        seq: Some(1),
        response: std::sync::Arc::new(Default::default()),
    })
}

#[tokio::test]
async fn a_stream_ends_with_deadline_exceeded_or_quietly_when_cancelled() {
    let endless = || {
        futures::stream::iter([event()])
            .chain(futures::stream::pending())
            .boxed()
    };
    let cx = CallContext::new().with_timeout(Duration::from_millis(30));
    let items: Vec<_> = bounded_stream(&cx, "stream", endless()).collect().await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].is_ok());
    assert_eq!(
        items[1].as_ref().map_err(|e| e.kind()).err(),
        Some(ErrorKind::DeadlineExceeded)
    );

    let token = CancellationToken::new();
    let cx = CallContext::new().with_cancellation(token.clone());
    let mut s = bounded_stream(&cx, "stream", endless());
    assert!(s.next().await.is_some_and(|e| e.is_ok()));
    token.cancel();
    assert!(s.next().await.is_none());

    // A stream that finishes in time is passed through whole.
    let cx = CallContext::new().with_timeout(Duration::from_secs(30));
    let items: Vec<_> = bounded_stream(&cx, "s", futures::stream::iter([event(), event()]).boxed())
        .collect()
        .await;
    assert_eq!(items.len(), 2);
}
