//! The one integration test binary.
#![allow(unreachable_pub, missing_docs)]

mod card;
mod cli;
mod cluster;
mod concurrency;
mod conformance;
mod durability;
mod facade;
mod grpc_hygiene;
mod hardening;
mod harness;
mod list_property;
mod openapi;
mod process;
mod proxied;
mod push;
mod readme;
mod recovery;
mod security;
mod slowloris;
mod store_contract;
mod streams;
mod suite;
mod tidy;
mod wire;
