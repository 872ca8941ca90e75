//! `trident`: serves one A2A agent over gRPC, JSON-RPC 2.0 and HTTP+JSON.
//!
//! Wiring only: every behaviour lives in the crates under `crates/`.

fn main() {
    println!(
        "trident {}: the bindings and `trident serve` arrive with the bindings issue",
        env!("CARGO_PKG_VERSION")
    );
}
