//! The A2A JSON-RPC 2.0 binding.
//!
//! - [`router`]: `POST` endpoint; method names are the RPC names, `params`/`result` ProtoJSON;
//!   the streaming methods answer `text/event-stream` where every `data:` is a complete
//!   JSON-RPC response wrapping one `StreamResponse` and `id:` is its sequence number.
//!   Dispatch goes through [`trident_core::Operation`] and [`trident_core::dispatch_json`]
//!   (jsonrpsee-types only parses envelopes and shapes error objects).
//! - [`JsonRpcClient`]: `A2aService` over JSON-RPC.

mod client;
mod server;

pub use client::JsonRpcClient;
pub use server::{JsonRpcOptions, error_object, error_reply, router};
