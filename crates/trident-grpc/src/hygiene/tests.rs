//! The framing checks of [`Checked`], driven frame by frame with scripted bodies.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body as HttpBody, Frame};
use prost::Message as _;
use tonic::{Code, Status};
use trident_proto as pb;

use super::{Checked, Rules, is_grpc_proto};

/// A body that yields its frames, then ends or (with `hang`) stays pending.
struct Script {
    frames: VecDeque<Result<Frame<Bytes>, Status>>,
    hang: bool,
}

impl HttpBody for Script {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        match this.frames.pop_front() {
            Some(f) => Poll::Ready(Some(f)),
            None if this.hang => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0];
    f.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    f.extend_from_slice(payload);
    f
}

fn send(parts: usize) -> Vec<u8> {
    pb::SendMessageRequest {
        message: Some(pb::Message::user("m", vec![pb::Part::text("hi"); parts])),
        ..Default::default()
    }
    .encode_to_vec()
}

fn checked(chunks: Vec<Vec<u8>>, single: bool, hang: bool) -> Checked {
    let frames = chunks
        .into_iter()
        .map(|c| Ok(Frame::data(Bytes::from(c))))
        .collect();
    checked_frames(frames, single, hang)
}

fn checked_frames(
    frames: VecDeque<Result<Frame<Bytes>, Status>>,
    single: bool,
    hang: bool,
) -> Checked {
    let requests: HashMap<_, _> = trident_proto::scan::request_messages()
        .expect("descriptors")
        .into_iter()
        .collect();
    let message = requests.get("/lf.a2a.v1.A2AService/SendMessage").cloned();
    let rules = Rules {
        max_message: 1024 * 1024,
        single_message: single,
        requests,
    };
    let body = axum::body::Body::new(Script { frames, hang });
    Checked::new(body, Arc::new(rules), message, false)
}

fn poll(body: &mut Checked) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    Pin::new(body).poll_frame(&mut cx)
}

/// Polls to the end: the data passed on, the trailers, or the error.
fn drain(body: &mut Checked) -> Result<(Vec<Bytes>, Option<HeaderMap>), Status> {
    let (mut data, mut trailers) = (Vec::new(), None);
    loop {
        match poll(body) {
            Poll::Ready(Some(Ok(f))) => match f.into_data() {
                Ok(d) => data.push(d),
                Err(f) => trailers = f.into_trailers().ok(),
            },
            Poll::Ready(Some(Err(s))) => return Err(s),
            Poll::Ready(None) => return Ok((data, trailers)),
            Poll::Pending => panic!("pending"),
        }
    }
}

#[test]
fn a_message_split_into_single_bytes_is_passed_on_whole() {
    let message = frame(&send(3));
    let chunks = message.iter().map(|b| vec![*b]).collect();
    let (data, trailers) = drain(&mut checked(chunks, true, false)).expect("valid");
    assert_eq!(data, vec![Bytes::from(message)]);
    assert!(trailers.is_none());
}

#[test]
fn a_unary_message_is_held_until_the_body_ends() {
    let mut body = checked(vec![frame(&send(1))], true, true);
    assert!(poll(&mut body).is_pending());
    // Streaming: passed on as soon as it is complete.
    let mut body = checked(vec![frame(&send(1)), frame(&send(2))], false, true);
    assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
    assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
    assert!(poll(&mut body).is_pending());
}

#[test]
fn a_second_message_is_refused_in_a_unary_request_only() {
    let two = [frame(&send(1)), frame(&send(1))].concat();
    let err = drain(&mut checked(vec![two.clone()], true, false)).expect_err("refused");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("exactly one message"), "{err:?}");
    let (data, _) = drain(&mut checked(vec![two], false, false)).expect("streaming");
    assert_eq!(data.len(), 2);
}

#[test]
fn trailers_follow_the_message() {
    let mut trailers = HeaderMap::new();
    trailers.insert("x-t", http::HeaderValue::from_static("1"));
    let frames = VecDeque::from([
        Ok(Frame::data(Bytes::from(frame(&send(1))))),
        Ok(Frame::trailers(trailers.clone())),
    ]);
    let (data, got) = drain(&mut checked_frames(frames, true, false)).expect("valid");
    assert_eq!(data.len(), 1);
    assert_eq!(got, Some(trailers));
}

#[test]
fn an_inner_error_is_passed_on_with_its_status() {
    let frames = VecDeque::from([
        Ok(Frame::data(Bytes::from_static(&[0, 0]))),
        Err(Status::deadline_exceeded("too slow")),
    ]);
    let err = drain(&mut checked_frames(frames, true, false)).expect_err("error");
    assert_eq!(err.code(), Code::DeadlineExceeded);
    assert_eq!(err.message(), "too slow");
}

#[test]
fn framing_errors_are_invalid_argument_and_size_resource_exhausted() {
    let cases: [(Vec<u8>, Code, &str); 5] = [
        (
            vec![0, 0],
            Code::InvalidArgument,
            "inside a message header (2 of 5",
        ),
        (
            frame(&send(1))[..8].to_vec(),
            Code::InvalidArgument,
            "ends after 3",
        ),
        (vec![1, 0, 0, 0, 0], Code::InvalidArgument, "compressed"),
        (vec![7, 0, 0, 0, 0], Code::InvalidArgument, "flag 7"),
        (
            vec![0, 0, 0x10, 0, 1],
            Code::ResourceExhausted,
            "1048577 bytes; the limit (max_request_size) is 1048576",
        ),
    ];
    for (body, code, needle) in cases {
        let err = drain(&mut checked(vec![body.clone()], true, false)).expect_err("refused");
        assert_eq!(err.code(), code, "{body:?}: {err:?}");
        assert!(err.message().contains(needle), "{body:?}: {err:?}");
    }
    let err = drain(&mut checked(Vec::new(), true, false)).expect_err("no message");
    assert!(err.message().contains("no message"), "{err:?}");
    // An empty streaming request is fine.
    assert!(drain(&mut checked(Vec::new(), false, false)).is_ok());
}

#[test]
fn the_pre_scan_refuses_before_anything_is_passed_on() {
    let many = pb::SendMessageRequest {
        message: Some(pb::Message::user("m", vec![pb::Part::default(); 70_000])),
        ..Default::default()
    }
    .encode_to_vec();
    let err = drain(&mut checked(vec![frame(&many)], true, false)).expect_err("refused");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "the message holds more than 65536 protobuf values"
    );
    // Malformed bytes are a parse error.
    let err =
        drain(&mut checked(vec![frame(&[0x0a, 0x05, 0x01])], true, false)).expect_err("refused");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("not valid protobuf"), "{err:?}");
}

#[test]
fn content_types() {
    let headers = |ct: Option<&'static str>| {
        let mut h = HeaderMap::new();
        if let Some(ct) = ct {
            h.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static(ct),
            );
        }
        h
    };
    for ok in [
        "application/grpc",
        "application/grpc+proto",
        "Application/GRPC; charset=utf-8",
    ] {
        assert!(is_grpc_proto(&headers(Some(ok))), "{ok}");
    }
    for bad in [
        "text/plain",
        "application/grpc-web",
        "application/grpc+json",
        "application/grpcx",
        "",
    ] {
        assert!(!is_grpc_proto(&headers(Some(bad))), "{bad}");
    }
    assert!(!is_grpc_proto(&headers(None)));
}
