//! A2A **v0.3** compatibility: the one place where v0.3 and 1.0 meet.
//!
//! v0.3 requests are decoded into the v0.3 model ([`trident_proto::v03`], generated from
//! `proto/a2a/v1/a2a.proto`), translated once into the 1.0 request ([`convert`]), served by the
//! one `A2aService`, and the answer translated back. The bindings only frame v0.3 requests
//! (method names, routes, the gRPC service) and call this crate:
//!
//! - [`convert`]: one conversion per type each way ([`ToV03`], [`ToV1`], [`TryToV1`] for
//!   requests whose v0.3 form holds a resource name such as `tasks/{id}`);
//! - [`json`]: v0.3's JSON-RPC JSON (`kind` discriminators, lower-case states) over the model;
//!   v0.3's HTTP+JSON bodies are plain ProtoJSON of the model;
//! - [`jsonrpc`]: the v0.3 JSON-RPC methods;
//! - [`error`]: v0.3 error codes and bodies, derived from the one `ErrorKind` table;
//! - [`card`]: the v0.3 card members and the combined card (the form of the card served to
//!   requests that do not say `A2A-Version: 1.x`; 1.0 clients get the 1.0 card alone);
//! - [`push`]: the body of a push notification to a configuration created through v0.3;
//! - [`call`]: the one service call of a v0.3 request (a push-config list gathers every page);
//! - [`version`]: which protocol version a request speaks.
//!
//! # Lossy
//!
//! What 1.0 can say and v0.3 cannot (dropped or approximated on the way to a v0.3 peer):
//!
//! - `tenant` (every request, `AgentInterface.tenant`): v0.3 has no tenancy; v0.3 requests are
//!   served for the default tenant.
//! - `ListTasks` (and with it `statusTimestampAfter`, `pageSize`, `includeArtifacts`): no v0.3
//!   method or route; `ListTaskPushNotificationConfigs` pagination (v0.3 lists have no pages:
//!   a v0.3 list gathers every page of the 1.0 list, see [`call`]).
//! - `Part.mediaType`/`filename` of text and data parts (v0.3 has them on file parts only).
//! - A data part whose value is not a JSON object: v0.3 data must be an object, so it travels
//!   as `{"value": <the value>}` and comes back as that object.
//! - A part with no content: sent to v0.3 as an empty text part.
//! - `AuthenticationInfo.scheme` is one scheme; v0.3's `schemes` list keeps only its first.
//! - `historyLength: 0`: v0.3 cannot tell 0 from "not set" (both mean the whole history).
//! - `SendMessageConfiguration` absent in 1.0 = blocking; v0.3's `blocking` defaults to false
//!   in protobuf, so the v0.3 form always carries `blocking` explicitly. On v0.3 JSON-RPC a
//!   missing `blocking` means blocking, as v0.3 servers read it.
//! - `TaskStatusUpdateEvent.final`: computed (terminal or interrupted state) on the way to
//!   v0.3, dropped on the way back (1.0 ends the stream instead).
//! - Card: 1.0's `DeviceCodeOAuthFlow` and `pkceRequired`, the interfaces' `tenant`; skills'
//!   security requirements keep their 1.0 member name in the combined card.
//! - Errors: `ExtensionSupportRequired` and `VersionNotSupported` (1.0's -32008/-32009) reach
//!   a v0.3 client as `InvalidRequest` (-32600) with the reason in `data`.
//! - v0.3-only members dropped on the way in: `metadata` of `tasks/get`, `tasks/cancel` and
//!   the push-config params.

pub mod call;
pub mod card;
pub mod client;
pub mod convert;
pub mod error;
pub mod json;
pub mod jsonrpc;
pub mod push;
pub mod rest;
pub mod version;

pub use convert::{ToV1, ToV03, TryToV1};

#[cfg(test)]
mod tests;
