//! Request hygiene in front of a tonic service: [`Hygiene`].

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::response::IntoResponse;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::FutureExt;
use futures::future::BoxFuture;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body::{Body as HttpBody, Frame};
use tonic::Status;
use tonic::server::NamedService;
use trident_core::{A2aError, ErrorKind};
use trident_proto::scan::{Bounds, MessageDescriptor, ScanError, scan};

use crate::status;

/// The bounds of one request message, the same on every binding: at most
/// [`MAX_JSON_VALUES`] values (here: field occurrences at every level of nesting) and
/// [`MAX_JSON_DEPTH`] levels (the top-level message's fields are at depth 1).
pub use trident_core::{MAX_JSON_DEPTH, MAX_JSON_VALUES};

/// The gRPC message header: a compressed flag and a big-endian `u32` length.
const HEADER: usize = 5;
/// The request header naming the messages' compression (a constant: no name parsing per
/// request).
const GRPC_ENCODING: http::HeaderName = http::HeaderName::from_static("grpc-encoding");
/// The request header carrying the caller's deadline.
const TIMEOUT_HEADER: http::HeaderName =
    http::HeaderName::from_static(trident_core::deadline::TIMEOUT_HEADER);

/// What [`Hygiene`] checks for one service.
#[derive(Debug)]
struct Rules {
    /// Largest message payload, in bytes.
    max_message: usize,
    /// Every method takes exactly one request message (no client streaming).
    single_message: bool,
    /// Request message types by path, for the pre-scan (empty: no scan).
    requests: HashMap<String, MessageDescriptor>,
}

/// A tower service in front of a tonic server that refuses what is not gRPC and checks the
/// length-prefixed message framing of the request body as it arrives, so that what tonic
/// decodes is exactly one well-formed message (or a stream of them, for services with
/// client streaming) within the size limit — and, for `lf.a2a.v1.A2AService`, within
/// [`MAX_JSON_VALUES`] values nested at most [`MAX_JSON_DEPTH`] deep (the
/// [`trident_proto::scan`] pre-scan), before prost allocates anything.
///
/// | request | tonic 0.14 alone | with `Hygiene` |
/// |---|---|---|
/// | `content-type` missing or not `application/grpc[+proto][;…]` | served as gRPC | HTTP 415, `grpc-status` INVALID_ARGUMENT |
/// | HTTP/1.x (but gRPC-Web, through [`Web`](crate::Web)) | served, 200 with no `grpc-status` | HTTP 505, `grpc-status` INVALID_ARGUMENT |
/// | `grpc-timeout` not 1-8 digits and a unit | ignored (no deadline) | INVALID_ARGUMENT |
/// | message over `max_request_size` | OUT_OF_RANGE | RESOURCE_EXHAUSTED naming the limit |
/// | compressed flag, no `grpc-encoding` | INTERNAL | INVALID_ARGUMENT |
/// | flag other than 0 or 1 | INTERNAL | INVALID_ARGUMENT |
/// | body ends inside a frame header or payload | INTERNAL | INVALID_ARGUMENT |
/// | no message | INTERNAL | INVALID_ARGUMENT |
/// | a second message in a unary request | decoded, ignored | INVALID_ARGUMENT, nothing decoded |
/// | more values than the bound, or nested too deep | decoded | INVALID_ARGUMENT, nothing decoded |
///
/// Body errors reach tonic as the body's `tonic::Status` error, which its decoder turns into
/// the RPC's status as is (`Status::from_error` downcasts it). A unary request's message is held
/// until the body has ended cleanly, so nothing of a request that is refused is decoded.
#[derive(Debug, Clone)]
pub struct Hygiene<S> {
    inner: S,
    rules: Arc<Rules>,
}

impl<S> Hygiene<S> {
    /// `inner`, whose methods each take one request message of at most `max_message` bytes,
    /// without the pre-scan.
    pub fn unary(inner: S, max_message: usize) -> Self {
        Self::with_rules(inner, max_message, true, HashMap::new())
    }

    /// `inner`, whose methods may take a stream of messages (server reflection).
    pub fn streaming(inner: S, max_message: usize) -> Self {
        Self::with_rules(inner, max_message, false, HashMap::new())
    }

    /// `inner` serving `lf.a2a.v1.A2AService`: one request message per call, pre-scanned
    /// against its descriptor. Without descriptors (a build whose descriptor set does not
    /// decode, which the tests rule out) the scan is skipped with a warning.
    pub fn a2a(inner: S, max_message: usize) -> Self {
        let requests = match trident_proto::scan::request_messages() {
            Ok(methods) => methods.into_iter().collect(),
            Err(e) => {
                tracing::warn!("gRPC request pre-scan disabled: {e}");
                HashMap::new()
            }
        };
        Self::with_rules(inner, max_message, true, requests)
    }

    fn with_rules(
        inner: S,
        max_message: usize,
        single_message: bool,
        requests: HashMap<String, MessageDescriptor>,
    ) -> Self {
        Self {
            inner,
            rules: Arc::new(Rules {
                max_message,
                single_message,
                requests,
            }),
        }
    }
}

impl<S: NamedService> NamedService for Hygiene<S> {
    const NAME: &'static str = S::NAME;
}

/// Whether `content-type` names gRPC with the protobuf codec: `application/grpc` or
/// `application/grpc+proto`, with or without parameters.
fn is_grpc_proto(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = ct.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/grpc")
        || media.eq_ignore_ascii_case("application/grpc+proto")
}

/// The answer to a request that is not gRPC: HTTP 415, as the gRPC spec asks of servers (so
/// that no HTTP client takes it for a success), with the status in the headers as well for
/// gRPC clients that sent a content type of their own.
fn unsupported_media_type(headers: &HeaderMap) -> axum::response::Response {
    let sent = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let message = match sent {
        Some(ct) => format!("content-type {ct:?} is not gRPC: send application/grpc"),
        None => "no content-type: send application/grpc".to_owned(),
    };
    http_refusal(StatusCode::UNSUPPORTED_MEDIA_TYPE, message)
}

/// The answer to a gRPC request over HTTP/1.x: HTTP 505, as grpc-go answers it. gRPC's status
/// travels in trailers, which an HTTP/1.1 response here does not carry, so serving it would
/// answer 200 with no status at all (a success to a careless client).
fn http_version_not_supported(version: http::Version) -> axum::response::Response {
    http_refusal(
        StatusCode::HTTP_VERSION_NOT_SUPPORTED,
        format!("gRPC requires HTTP/2; this request is {version:?} (use h2c or HTTP/2 over TLS)"),
    )
}

/// A refusal at the HTTP level: `http` with `message` as plain text, and the message as an
/// `INVALID_ARGUMENT` status in the headers too, for gRPC clients that read them.
fn http_refusal(code: StatusCode, message: String) -> axum::response::Response {
    let error = A2aError::new(ErrorKind::InvalidRequest, message.clone());
    let (mut parts, ()) = status(&error).into_http::<()>().into_parts();
    parts.status = code;
    parts.headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Response::from_parts(parts, axum::body::Body::from(message))
}

/// Refuses what gRPC's transport rules forbid before the call is decoded: HTTP/1.x (505), and
/// a malformed `grpc-timeout` (`INVALID_ARGUMENT`; a call would otherwise run without the
/// caller's deadline — tonic alone ignores it).
///
/// A gRPC-Web call ([`Web`](crate::Web)) carries its status in the body, so it may come over
/// HTTP/1.1.
fn transport_refusal(request: &Request<axum::body::Body>) -> Option<axum::response::Response> {
    if request.version() < http::Version::HTTP_2
        && request.extensions().get::<crate::web::WebCall>().is_none()
    {
        return Some(http_version_not_supported(request.version()));
    }
    let timeout = request.headers().get(TIMEOUT_HEADER)?;
    let readable = timeout
        .to_str()
        .ok()
        .and_then(trident_core::deadline::parse_timeout);
    match readable {
        Some(_) => None,
        None => {
            let error = trident_core::deadline::malformed_timeout(timeout.as_bytes());
            Some(status(&error).into_http::<axum::body::Body>())
        }
    }
}

impl<S, B> tonic::codegen::Service<Request<axum::body::Body>> for Hygiene<S>
where
    S: tonic::codegen::Service<Request<Checked>, Response = Response<B>, Error = Infallible>,
    S::Future: Send + 'static,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError>,
{
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<axum::body::Body>) -> Self::Future {
        if !is_grpc_proto(request.headers()) {
            tracing::debug!(path = %request.uri().path(), "gRPC request refused: content-type");
            let response = unsupported_media_type(request.headers());
            return futures::future::ready(Ok(response)).boxed();
        }
        if let Some(response) = transport_refusal(&request) {
            tracing::debug!(path = %request.uri().path(), "gRPC request refused: transport");
            return futures::future::ready(Ok(response)).boxed();
        }
        // Compressed messages are allowed when the request names an encoding (tonic refuses
        // the ones the service does not accept, before reading the body).
        let encoded = request
            .headers()
            .get(&GRPC_ENCODING)
            .is_some_and(|v| v.as_bytes() != b"identity");
        let message = self.rules.requests.get(request.uri().path()).cloned();
        let (parts, body) = request.into_parts();
        let body = Checked::new(body, self.rules.clone(), message, encoded);
        let call = self.inner.call(Request::from_parts(parts, body));
        async move {
            match call.await {
                Ok(response) => Ok(response.into_response()),
                Err(never) => match never {},
            }
        }
        .boxed()
    }
}

/// The header of the message being read.
#[derive(Debug, Clone, Copy)]
struct Header {
    compressed: bool,
    len: usize,
}

/// A request body whose gRPC message framing is checked as it arrives; its error is the
/// `tonic::Status` the RPC ends with. Complete messages are passed on whole (a unary request's
/// only once the body has ended).
#[derive(Debug)]
pub struct Checked {
    inner: axum::body::Body,
    rules: Arc<Rules>,
    /// The request message type, when pre-scanned.
    message: Option<MessageDescriptor>,
    /// The request names a `grpc-encoding`: compressed messages are allowed.
    encoded: bool,
    /// The incomplete frame read so far (header and payload).
    buf: BytesMut,
    /// Its header, once read.
    current: Option<Header>,
    /// Complete, checked frames not yet passed on.
    ready: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    /// Complete messages read.
    messages: usize,
    /// The inner body has ended (and the framing was complete).
    ended: bool,
    /// Everything was passed on, or an error was.
    done: bool,
}

impl Checked {
    fn new(
        inner: axum::body::Body,
        rules: Arc<Rules>,
        message: Option<MessageDescriptor>,
        encoded: bool,
    ) -> Self {
        Self {
            inner,
            rules,
            message,
            encoded,
            buf: BytesMut::new(),
            current: None,
            ready: VecDeque::new(),
            trailers: None,
            messages: 0,
            ended: false,
            done: false,
        }
    }

    /// Takes in one chunk of the body.
    fn feed(&mut self, mut data: Bytes) -> Result<(), A2aError> {
        while data.has_remaining() {
            if self.rules.single_message && self.messages > 0 {
                return Err(A2aError::new(
                    ErrorKind::InvalidRequest,
                    "a unary request holds exactly one message; more bytes follow it",
                ));
            }
            let header = match self.current {
                Some(header) => header,
                None if self.buf.is_empty() && data.len() >= HEADER => {
                    // A whole frame at the start of the chunk (the usual case) is passed on
                    // as a slice of it, without a copy.
                    let header = self.header(&data[..HEADER])?;
                    if data.len() >= HEADER + header.len {
                        let frame = data.split_to(HEADER + header.len);
                        self.complete(header, frame)?;
                        continue;
                    }
                    self.buf.reserve(HEADER + header.len);
                    self.buf.put(data.split_to(HEADER));
                    self.current = Some(header);
                    header
                }
                None => {
                    let take = (HEADER - self.buf.len()).min(data.len());
                    self.buf.put(data.split_to(take));
                    if self.buf.len() < HEADER {
                        continue;
                    }
                    let header = self.header(&self.buf[..HEADER])?;
                    self.buf.reserve(header.len);
                    self.current = Some(header);
                    header
                }
            };
            let missing = HEADER + header.len - self.buf.len();
            let take = missing.min(data.len());
            self.buf.put(data.split_to(take));
            if take == missing {
                let frame = self.buf.split().freeze();
                self.complete(header, frame)?;
            }
        }
        Ok(())
    }

    /// Reads and checks a message header (`HEADER` bytes).
    fn header(&self, mut bytes: &[u8]) -> Result<Header, A2aError> {
        let flag = bytes.get_u8();
        let len = usize::try_from(bytes.get_u32()).unwrap_or(usize::MAX);
        let compressed = match flag {
            0 => false,
            1 if self.encoded => true,
            1 => {
                return Err(A2aError::new(
                    ErrorKind::ParseError,
                    "the message is marked compressed but the request names no grpc-encoding",
                ));
            }
            f => {
                return Err(A2aError::new(
                    ErrorKind::ParseError,
                    format!("invalid compressed flag {f} in a message header (only 0 and 1)"),
                ));
            }
        };
        let max = self.rules.max_message;
        if len > max {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "the request message is {len} bytes; the limit (max_request_size) is {max} bytes"
                ),
            )
            .with_meta("maxBytes", max.to_string()));
        }
        Ok(Header { compressed, len })
    }

    /// `frame` (header and payload) is complete: pre-scan it and queue it.
    fn complete(&mut self, header: Header, frame: Bytes) -> Result<(), A2aError> {
        self.current = None;
        if let (Some(message), false) = (&self.message, header.compressed) {
            let bounds = Bounds {
                values: MAX_JSON_VALUES,
                depth: MAX_JSON_DEPTH,
            };
            scan(message, &frame[HEADER..], bounds).map_err(|e| scan_error(&e))?;
        }
        self.messages += 1;
        self.ready.push_back(frame);
        Ok(())
    }

    /// The body has ended: the last frame must be complete, and a unary request must have
    /// had its message.
    fn finish(&self) -> Result<(), A2aError> {
        match self.current {
            None if !self.buf.is_empty() => {
                return Err(A2aError::new(
                    ErrorKind::ParseError,
                    format!(
                        "the request body ends inside a message header ({} of {HEADER} bytes)",
                        self.buf.len()
                    ),
                ));
            }
            Some(header) => {
                return Err(A2aError::new(
                    ErrorKind::ParseError,
                    format!(
                        "the message header announces {} bytes but the request body ends after {}",
                        header.len,
                        self.buf.len() - HEADER
                    ),
                ));
            }
            None => {}
        }
        if self.rules.single_message && self.messages == 0 {
            return Err(A2aError::new(
                ErrorKind::InvalidRequest,
                "the request body holds no message",
            ));
        }
        Ok(())
    }

    fn fail(&mut self, status: Status) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        tracing::debug!(code = ?status.code(), message = status.message(), "gRPC request refused");
        self.done = true;
        self.ready.clear();
        self.buf.clear();
        Poll::Ready(Some(Err(status)))
    }

    fn end(&mut self) -> Result<(), Status> {
        self.finish().map_err(|e| status(&e))?;
        self.ended = true;
        Ok(())
    }
}

/// A refused pre-scan as the A2A error: too many values or too deep is a parameter problem,
/// malformed bytes a parse error (prost would refuse them too).
fn scan_error(e: &ScanError) -> A2aError {
    match e {
        ScanError::TooManyValues(max) => A2aError::new(ErrorKind::InvalidParams, e.to_string())
            .with_meta("maxValues", max.to_string()),
        ScanError::TooDeep(max) => A2aError::new(ErrorKind::InvalidParams, e.to_string())
            .with_meta("maxDepth", max.to_string()),
        ScanError::Malformed(_) => A2aError::new(ErrorKind::ParseError, e.to_string()),
    }
}

impl HttpBody for Checked {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if (this.ended || !this.rules.single_message)
                && let Some(frame) = this.ready.pop_front()
            {
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            if this.ended {
                this.done = true;
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        if let Err(e) = this.feed(data) {
                            return this.fail(status(&e));
                        }
                    }
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            this.trailers = Some(trailers);
                            if let Err(s) = this.end() {
                                return this.fail(s);
                            }
                        }
                    }
                },
                // The transport's error (a reset, the body timeout) as tonic would see it.
                Some(Err(e)) => return this.fail(Status::from_error(Box::new(e))),
                None => {
                    if let Err(s) = this.end() {
                        return this.fail(s);
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests;
