//! What the two JSON bindings' clients share: the `A2aService` impl generated per RPC
//! ([`json_client!`](crate::json_client)) and, behind the `client` feature, the HTTP side
//! ([`HttpClient`]).

#[cfg(feature = "client")]
use trident_core::{A2aError, CallContext};

/// The `A2aService` impl of a JSON binding's client, one method per RPC of
/// `trident_proto::for_each_rpc!`. The client's inherent methods do the exchange:
/// `unary::<T, R>(&self, &CallContext, Operation, &T) -> Result<R, A2aError>` (the request
/// and answer as ProtoJSON) and `stream::<T>(&self, &CallContext, Operation, &T) ->
/// Result<EventStream, A2aError>`; an RPC answering `google.protobuf.Empty` reads no answer.
///
/// `for_each_rpc!` passes nothing but the list to its macro, so a client names itself in a
/// one-line wrapper:
///
/// ```ignore
/// macro_rules! rpcs { ($($rpc:tt)*) => { trident_http::json_client!(MyClient; $($rpc)*); } }
/// trident_proto::for_each_rpc!(rpcs);
/// ```
#[macro_export]
macro_rules! json_client {
    (@call unary, $client:expr, $cx:expr, $op:ident, $req:expr) => {
        $client.unary($cx, ::trident_core::Operation::$op, $req).await
    };
    (@call stream, $client:expr, $cx:expr, $op:ident, $req:expr) => {
        $client.stream($cx, ::trident_core::Operation::$op, $req).await
    };
    (@call empty, $client:expr, $cx:expr, $op:ident, $req:expr) => {
        $client
            .unary::<_, ::serde_json::Value>($cx, ::trident_core::Operation::$op, $req)
            .await
            .map(drop)
    };
    ($client:ty; $({ $op:ident, $method:ident, $req:ident, $resp:ident, $kind:ident })*) => {
        #[::async_trait::async_trait]
        impl ::trident_core::A2aService for $client {
            $(
                async fn $method(
                    &self,
                    cx: &::trident_core::CallContext,
                    req: ::trident_proto::$req,
                ) -> ::std::result::Result<
                    ::trident_core::reply_type!($kind, ::trident_proto::$resp),
                    ::trident_core::A2aError,
                > {
                    $crate::json_client!(@call $kind, self, cx, $op, &req)
                }
            )*
        }
    };
}

/// What every HTTP client of a JSON binding (JSON-RPC or HTTP+JSON, 1.0 or v0.3) holds and
/// does the same way: the reqwest client, the headers and query parameters sent with every
/// request, the bound on what it reads of an answer, and its transport errors (named after
/// the binding, the query cut from their URL: it may carry a credential).
#[cfg(feature = "client")]
#[derive(Debug, Clone)]
pub struct HttpClient {
    http: reqwest::Client,
    binding: &'static str,
    headers: reqwest::header::HeaderMap,
    query: Vec<(String, String)>,
    max_response: usize,
    tap: Option<crate::WireTap>,
}

#[cfg(feature = "client")]
impl HttpClient {
    /// A client with its own reqwest client; `binding` (`"JSON-RPC"`, `"HTTP+JSON"`) names
    /// it in errors.
    pub fn new(binding: &'static str) -> Result<Self, A2aError> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| transport_error(binding, "client", e))?;
        Ok(Self::with_client(http, binding))
    }

    /// A client sharing an existing reqwest client.
    pub fn with_client(http: reqwest::Client, binding: &'static str) -> Self {
        Self {
            http,
            binding,
            headers: reqwest::header::HeaderMap::new(),
            query: Vec::new(),
            max_response: crate::DEFAULT_MAX_RESPONSE_BYTES,
            tap: None,
        }
    }

    /// Shows every exchange to `tap` (`None`, the default: nothing is formatted): each
    /// request's method, URL, headers and body as sent, each response's status line, headers
    /// and body as received, and each line of an SSE stream, credentials redacted.
    pub fn set_wire_tap(&mut self, tap: Option<crate::WireTap>) {
        self.tap = tap;
    }

    /// Sends `headers` with every request, except those a call sets itself.
    pub fn set_headers(&mut self, headers: reqwest::header::HeaderMap) {
        self.headers = headers;
    }

    /// Adds `query` to every request.
    pub fn set_query(&mut self, query: Vec<(String, String)>) {
        self.query = query;
    }

    /// Reads at most `bytes` of a response body, or of one event of a stream.
    pub fn set_max_response_size(&mut self, bytes: usize) {
        self.max_response = bytes;
    }

    /// The bound on a response body, or on one event of a stream.
    pub fn max_response_size(&self) -> usize {
        self.max_response
    }

    /// A request of `method` to `url`.
    pub fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        self.http.request(method, url)
    }

    /// `builder` with the client's headers, then the call's service parameters
    /// ([`CallContext::outgoing_service_params`]), which win over a header of the same name,
    /// then the client's query parameters.
    pub fn with_call(
        &self,
        mut builder: reqwest::RequestBuilder,
        cx: &CallContext,
    ) -> reqwest::RequestBuilder {
        let params = cx.outgoing_service_params();
        for (name, value) in &self.headers {
            if !params.iter().any(|(n, _)| name.as_str() == *n) {
                builder = builder.header(name, value);
            }
        }
        for (name, value) in params {
            builder = builder.header(name, value);
        }
        if self.query.is_empty() {
            builder
        } else {
            builder.query(&self.query)
        }
    }

    /// Sends `request` (`what` names it in the error).
    pub async fn send(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, A2aError> {
        let Some(tap) = &self.tap else {
            return request
                .send()
                .await
                .map_err(|e| transport_error(self.binding, what, e));
        };
        let (http, request) = request.build_split();
        let request = request.map_err(|e| transport_error(self.binding, what, e))?;
        self.tap_request(tap, &request);
        match http.execute(request).await {
            Ok(response) => {
                self.tap_response(tap, &response);
                Ok(response)
            }
            Err(e) => {
                let e = transport_error(self.binding, what, e);
                tap.line(&format!(
                    "{} ✗ {}",
                    self.binding,
                    trident_core::error_chain(&e)
                ));
                Err(e)
            }
        }
    }

    /// The request line, headers and body of `request`, as it goes out.
    fn tap_request(&self, tap: &crate::WireTap, request: &reqwest::Request) {
        let out = format!("{} → ", self.binding);
        tap.lines(
            &out,
            &format!("{} {}", request.method(), tap.url(request.url().as_str())),
        );
        for (name, value) in request.headers() {
            tap.lines(
                &out,
                &tap.header(name.as_str(), value.as_bytes(), value.is_sensitive()),
            );
        }
        if let Some(body) = request.body().and_then(|b| b.as_bytes()) {
            tap.lines(&out, &String::from_utf8_lossy(body));
        }
    }

    /// The status line and headers of `response`, as they came.
    fn tap_response(&self, tap: &crate::WireTap, response: &reqwest::Response) {
        let inn = format!("{} ← ", self.binding);
        tap.lines(
            &inn,
            &format!("{:?} {}", response.version(), response.status()),
        );
        for (name, value) in response.headers() {
            tap.lines(
                &inn,
                &tap.header(name.as_str(), value.as_bytes(), value.is_sensitive()),
            );
        }
    }

    /// The whole body of `response`, at most [`max_response_size`](Self::max_response_size)
    /// (shown to the wire tap as it came, when there is one).
    pub async fn body(&self, response: reqwest::Response) -> Result<Vec<u8>, A2aError> {
        let body = crate::read_body(
            self.raw_chunks(response, "response body"),
            self.max_response,
        )
        .await
        .map_err(|e| e.into_described(format_args!("{} response", self.binding)));
        if let Some(tap) = &self.tap {
            let inn = format!("{} ← ", self.binding);
            match &body {
                Ok(body) => tap.lines(&inn, &String::from_utf8_lossy(body)),
                Err(e) => tap.lines(&inn, &format!("✗ {}", e.message())),
            }
        }
        body
    }

    /// The chunks of a response body, their failures described with their cause.
    fn raw_chunks(
        &self,
        response: reqwest::Response,
        what: &'static str,
    ) -> impl futures::Stream<Item = Result<bytes::Bytes, A2aError>> + use<> {
        use futures::TryStreamExt;
        let binding = self.binding;
        response
            .bytes_stream()
            .map_err(move |e| transport_error(binding, what, e))
    }

    /// The chunks of a streamed (SSE) response body, their failures described with their
    /// cause. With a wire tap, each line of the stream is shown to it as it completes.
    pub fn chunks(
        &self,
        response: reqwest::Response,
        what: &'static str,
    ) -> impl futures::Stream<Item = Result<bytes::Bytes, A2aError>> + use<> {
        use futures::StreamExt;
        let raw = self.raw_chunks(response, what);
        let Some(tap) = self.tap.clone() else {
            return raw.left_stream();
        };
        let inn = format!("{} ← ", self.binding);
        let limit = self.max_response;
        let mut pending: Vec<u8> = Vec::new();
        raw.map(move |item| {
            match &item {
                Ok(chunk) => {
                    pending.extend_from_slice(chunk);
                    while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=end).collect();
                        let line = String::from_utf8_lossy(&line);
                        let line = line.trim_end_matches(['\r', '\n']);
                        if !line.is_empty() {
                            tap.lines(&inn, line);
                        }
                    }
                    // A line longer than a whole response is shown in pieces.
                    if pending.len() > limit {
                        tap.lines(&inn, &String::from_utf8_lossy(&pending));
                        pending.clear();
                    }
                }
                Err(e) => tap.lines(&inn, &format!("✗ {}", trident_core::error_chain(e))),
            }
            item
        })
        .right_stream()
    }

    /// The events of an SSE `response`, each at most
    /// [`max_response_size`](Self::max_response_size).
    pub fn sse(
        &self,
        response: reqwest::Response,
    ) -> impl futures::Stream<Item = Result<crate::SseEvent, A2aError>> + use<> {
        use futures::StreamExt;
        let binding = self.binding;
        crate::sse_events(self.chunks(response, "SSE stream"), self.max_response).map(move |item| {
            item.map_err(|e| e.into_described(format_args!("{binding} SSE event")))
        })
    }
}

/// A failed exchange of a `binding`'s client, with its cause: `Unavailable`
/// (`DeadlineExceeded` for reqwest's own timeout) and the whole chain (connection refused,
/// DNS, TLS, reset, ...) in the message; the query is cut from the URL (it may carry a
/// credential, an API key the card wants there).
#[cfg(feature = "client")]
pub fn transport_error(
    binding: &str,
    what: impl std::fmt::Display,
    mut e: reqwest::Error,
) -> A2aError {
    if let Some(url) = e.url_mut() {
        url.set_query(None);
    }
    let timed_out = e.is_timeout();
    A2aError::caused_by(format_args!("{binding} {what}"), e, timed_out)
}

/// The setters of a JSON binding's client over an [`HttpClient`] in its field `http`:
/// `with_headers`, `with_query` and `with_max_response_size`.
#[cfg(feature = "client")]
#[macro_export]
macro_rules! http_client_setters {
    () => {
        /// Sends `headers` (authentication, an API key, ...) with every request, except those
        /// the call sets itself from its `CallContext` (a call's own credentials win).
        pub fn with_headers(mut self, headers: ::reqwest::header::HeaderMap) -> Self {
            self.http.set_headers(headers);
            self
        }

        /// Adds the query parameters `query` (an API key a card wants in the query, ...) to
        /// every request. Their values never appear in this client's errors: the query is cut
        /// from the URL of every transport error.
        pub fn with_query(mut self, query: Vec<(String, String)>) -> Self {
            self.http.set_query(query);
            self
        }

        /// Shows every exchange to `tap` (`None`: nothing is formatted): requests and
        /// responses as they cross the wire, SSE lines as they arrive, credentials redacted
        /// (`trident_http::WireTap`).
        pub fn with_wire_tap(mut self, tap: Option<::trident_http::WireTap>) -> Self {
            self.http.set_wire_tap(tap);
            self
        }

        /// Reads at most `bytes` of a response body, or of one event of a stream (default
        /// `trident_http::DEFAULT_MAX_RESPONSE_BYTES`); a larger one is an
        /// `InvalidAgentResponse` error.
        pub fn with_max_response_size(mut self, bytes: usize) -> Self {
            self.http.set_max_response_size(bytes);
            self
        }
    };
}
