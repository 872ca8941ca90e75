//! The one integration test binary.
#![allow(unreachable_pub, missing_docs)]

mod agent_crate;
mod card;
mod cli;
mod client_deadlines;
mod cluster;
mod concurrency;
mod conformance;
mod durability;
mod example;
mod examples;
mod facade;
mod flood;
mod grpc_hygiene;
mod hardening;
mod harness;
mod list_property;
mod openapi;
#[cfg(feature = "otlp")]
mod otlp;
mod process;
mod proxied;
mod push;
mod push_v03;
mod readme;
mod recovery;
mod request_memory;
mod security;
mod slowloris;
mod store_contract;
mod streams;
mod suite;
mod tidy;
mod v03;
mod wait;
mod wire;
