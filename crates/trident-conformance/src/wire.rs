//! [`Wire`]: what the cases that look below `A2aService` need — the card as served, and raw
//! requests on one interface of it (HTTP for JSON-RPC and HTTP+JSON, tonic for gRPC) — so they
//! can check status codes, headers, error bodies and ErrorInfo details that a client turns
//! into an [`A2aError`](trident_core::A2aError) and so hides.

use std::time::Duration;

use trident_client::Binding;
use trident_proto as pb;

use crate::Skip;

/// The `domain` of every A2A ErrorInfo (spec: `google.rpc.ErrorInfo.domain`).
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// A task id no server has: what the raw cases ask for to get an A2A error without side effects.
pub const NO_SUCH_TASK: &str = "conformance-no-such-task";

/// Why a case that needs the wire skips on an in-process target.
const NO_WIRE: &str = "in process: there is no wire to check";

impl Skip {
    /// The skip of a case that needs the wire, on a target that calls the engine in process.
    pub fn no_wire() -> Self {
        Self::new(NO_WIRE)
    }

    /// Whether this is [`Skip::no_wire`].
    pub fn is_no_wire(&self) -> bool {
        self.0 == NO_WIRE
    }
}

/// One interface of a served card, reached on the wire.
#[derive(Debug, Clone)]
pub struct Wire {
    /// The interface's binding.
    pub binding: Binding,
    /// The interface (URL and tenant) as the card declares it.
    pub interface: pb::AgentInterface,
    /// Where the card was read.
    pub card_url: String,
    /// The card.
    pub card: pb::AgentCard,
}

/// A raw HTTP answer.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body, parsed when it is JSON.
    pub json: Option<serde_json::Value>,
    /// The body as text (at most 300 characters), for messages.
    pub text: String,
}

impl Answer {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC `error` member, or a panic saying what came instead.
    pub fn jsonrpc_error(&self) -> &serde_json::Value {
        match self.json.as_ref().and_then(|j| j.get("error")) {
            Some(e) => e,
            None => panic!(
                "expected a JSON-RPC error response, got HTTP {}: {}",
                self.status, self.text
            ),
        }
    }

    /// The JSON-RPC error code.
    pub fn jsonrpc_code(&self) -> i64 {
        let e = self.jsonrpc_error();
        e.get("code")
            .and_then(|c| c.as_i64())
            .unwrap_or_else(|| panic!("a JSON-RPC error without an integer code: {e}"))
    }

    /// The AIP-193 `error` member of an HTTP+JSON error, checked to carry `code` = the HTTP
    /// status and `status` = `grpc_status`.
    pub fn aip193(&self, grpc_status: &str) -> &serde_json::Value {
        let e = self
            .json
            .as_ref()
            .and_then(|j| j.get("error"))
            .filter(|e| e.is_object())
            .unwrap_or_else(|| {
                panic!(
                    "HTTP {}: expected an AIP-193 error body {{\"error\": {{code, status, message, \
                     details}}}}, got {:?}",
                    self.status, self.text
                )
            });
        assert_eq!(
            e.get("code").and_then(|c| c.as_u64()),
            Some(u64::from(self.status)),
            "error.code is the HTTP status: {e}"
        );
        assert_eq!(
            e.get("status").and_then(|s| s.as_str()),
            Some(grpc_status),
            "error.status: {e}"
        );
        e
    }
}

/// The ErrorInfo among `details` (JSON `Any` objects), checked to have `reason` and the A2A
/// domain.
pub fn assert_error_info(details: Option<&serde_json::Value>, reason: &str) {
    let infos: Vec<&serde_json::Value> = details
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .filter(|d| {
            d.get("@type")
                .and_then(|t| t.as_str())
                .is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"))
        })
        .collect();
    let Some(info) = infos.first() else {
        panic!(
            "expected a google.rpc.ErrorInfo with reason {reason} in the details, got {}",
            details.map_or_else(|| "no details".to_owned(), |d| d.to_string())
        )
    };
    assert_eq!(
        (
            info.get("reason").and_then(|r| r.as_str()),
            info.get("domain").and_then(|d| d.as_str())
        ),
        (Some(reason), Some(ERROR_DOMAIN)),
        "ErrorInfo reason and domain: {info}"
    );
}

/// The gRPC ErrorInfo of `status`, checked to have `reason` and the A2A domain.
pub fn assert_grpc_error_info(status: &tonic::Status, reason: &str) {
    use tonic_types::StatusExt;
    let Some(info) = status.get_details_error_info() else {
        panic!(
            "expected a google.rpc.ErrorInfo with reason {reason} in the status details, got \
             {:?}: {}",
            status.code(),
            status.message()
        )
    };
    assert_eq!(
        (info.reason.as_str(), info.domain.as_str()),
        (reason, ERROR_DOMAIN),
        "ErrorInfo reason and domain"
    );
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("an HTTP client")
}

/// Reads a response into an [`Answer`].
async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("the response body");
    Answer {
        status,
        headers,
        json: serde_json::from_slice(&bytes).ok(),
        text: String::from_utf8_lossy(&bytes).chars().take(300).collect(),
    }
}

impl Wire {
    /// The interfaces of the card for this binding and A2A 1.x, in card order.
    pub fn interfaces(&self) -> Vec<pb::AgentInterface> {
        self.card
            .supported_interfaces
            .iter()
            .filter(|i| {
                i.protocol_binding
                    .eq_ignore_ascii_case(self.binding.card_name())
                    && (i.protocol_version.is_empty() || i.protocol_version.starts_with("1."))
            })
            .cloned()
            .collect()
    }

    /// `scheme://authority` of the card's URL.
    pub fn origin(&self) -> String {
        let (scheme, rest) = self
            .card_url
            .split_once("://")
            .unwrap_or(("http", &self.card_url));
        let authority = rest.split('/').next().unwrap_or(rest);
        format!("{scheme}://{authority}")
    }

    /// `GET url` with these headers.
    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Answer {
        let mut request = http().get(url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        answer(
            request
                .send()
                .await
                .unwrap_or_else(|e| panic!("GET {url}: {e}")),
        )
        .await
    }

    /// A request to this HTTP interface: `method` on the interface URL plus `path` (with the
    /// interface's tenant as the first segment when it declares one), `A2A-Version: version`
    /// (none when empty), the body with this content type.
    pub async fn http(
        &self,
        method: reqwest::Method,
        path: &str,
        version: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Answer {
        let base = self.interface.url.trim_end_matches('/');
        let url = if path.is_empty() {
            base.to_owned()
        } else if self.interface.tenant.is_empty() {
            format!("{base}{path}")
        } else {
            format!("{base}/{}{path}", self.interface.tenant)
        };
        let mut request = http().request(method.clone(), &url);
        if !version.is_empty() {
            request = request.header("A2A-Version", version);
        }
        if !content_type.is_empty() {
            request = request.header(reqwest::header::CONTENT_TYPE, content_type);
        }
        answer(
            request
                .body(body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{method} {url}: {e}")),
        )
        .await
    }

    /// A JSON-RPC call of `method` with `params` (the interface's tenant added when it
    /// declares one), `A2A-Version: version`.
    pub async fn jsonrpc(
        &self,
        method: &str,
        mut params: serde_json::Value,
        version: &str,
    ) -> Answer {
        if !self.interface.tenant.is_empty()
            && let Some(p) = params.as_object_mut()
        {
            p.insert("tenant".into(), self.interface.tenant.clone().into());
        }
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.http(
            reqwest::Method::POST,
            "",
            version,
            "application/json",
            body.to_string(),
        )
        .await
    }

    /// The gRPC interface's URL as an `http://` URI (a card may carry a bare `host:port`).
    fn grpc_uri(&self) -> Result<String, Skip> {
        let url = self.interface.url.trim_end_matches('/');
        match url.split_once("://") {
            None => Ok(format!("http://{url}")),
            Some(("http" | "grpc", rest)) => Ok(format!("http://{rest}")),
            Some((scheme, _)) => Err(Skip::new(format!(
                "the raw gRPC checks speak plaintext HTTP/2 only, and the interface is {scheme}://"
            ))),
        }
    }

    /// A gRPC channel to this interface.
    pub async fn grpc_channel(&self) -> Result<tonic::transport::Channel, Skip> {
        let uri = self.grpc_uri()?;
        let endpoint = tonic::transport::Endpoint::from_shared(uri.clone())
            .unwrap_or_else(|e| panic!("gRPC URI {uri}: {e}"))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(15));
        Ok(endpoint
            .connect()
            .await
            .unwrap_or_else(|e| panic!("connect to {uri}: {e}")))
    }

    /// A unary gRPC call of `lf.a2a.v1.A2AService/<method>` with `request` and metadata
    /// `a2a-version: version` (none when empty).
    pub async fn grpc_unary<Req, Resp>(
        &self,
        method: &str,
        request: Req,
        version: &str,
    ) -> Result<Result<Resp, tonic::Status>, Skip>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let channel = self.grpc_channel().await?;
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready()
            .await
            .unwrap_or_else(|e| panic!("gRPC channel not ready: {e}"));
        let mut request = tonic::Request::new(request);
        if !version.is_empty() {
            request.metadata_mut().insert(
                "a2a-version",
                version.parse().expect("an ASCII metadata value"),
            );
        }
        let path = format!("/lf.a2a.v1.A2AService/{method}")
            .parse()
            .expect("a gRPC path");
        let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
        Ok(grpc
            .unary(request, path, codec)
            .await
            .map(tonic::Response::into_inner))
    }

    /// A GetTask request for [`NO_SUCH_TASK`] with the interface's tenant.
    pub fn get_no_such_task(&self) -> pb::GetTaskRequest {
        pb::GetTaskRequest {
            id: NO_SUCH_TASK.into(),
            tenant: self.interface.tenant.clone(),
            ..Default::default()
        }
    }

    /// An HTTP/2 request (prior knowledge, as gRPC speaks) to the gRPC interface with this
    /// content type: what a gRPC server answers to a body that is not gRPC.
    pub async fn grpc_http(&self, method: &str, content_type: &str) -> Result<Answer, Skip> {
        let url = format!("{}/lf.a2a.v1.A2AService/{method}", self.grpc_uri()?);
        let client = reqwest::Client::builder()
            .http2_prior_knowledge()
            .timeout(Duration::from_secs(15))
            .build()
            .expect("an HTTP/2 client");
        let response = client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .header("te", "trailers")
            .header("a2a-version", "1.0")
            .body("{}")
            .send()
            .await
            .unwrap_or_else(|e| {
                let mut chain = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    chain.push_str(&format!(": {s}"));
                    source = s.source();
                }
                panic!("POST {url} as {content_type}: no HTTP answer ({chain})")
            });
        Ok(answer(response).await)
    }
}
