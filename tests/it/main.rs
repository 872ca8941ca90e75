//! The one integration test binary.
#![allow(unreachable_pub, missing_docs)]

mod harness;
mod suite;
