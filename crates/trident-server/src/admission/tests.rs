use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::Arc;

use trident_core::{A2aService, CallContext, ErrorKind, Principal};
use trident_engine::Engine;
use trident_proto as pb;

use super::{CREDIT, spend_credit};
use crate::{CallerLimits, Limited};

#[tokio::test]
async fn a_credit_pays_for_one_call_of_its_own_caller() {
    let credit = CREDIT.scope(Cell::new(Some("address 10.0.0.1".into())), async {
        let other = spend_credit("address 10.0.0.2");
        let first = spend_credit("address 10.0.0.1");
        let second = spend_credit("address 10.0.0.1");
        (other, first, second)
    });
    assert_eq!(credit.await, (false, true, false));
    // Outside any request: nothing is prepaid.
    assert!(!spend_credit("address 10.0.0.1"));
}

fn get_task() -> pb::GetTaskRequest {
    pb::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    }
}

/// What `n` GetTask calls by `cx` come to: `true` for an answer (NOT_FOUND), `false` for
/// ResourceExhausted.
async fn served(limited: &Limited, cx: &CallContext, n: usize) -> Vec<bool> {
    let mut out = Vec::new();
    for _ in 0..n {
        match limited.get_task(cx, get_task()).await {
            Err(e) if e.kind() == ErrorKind::ResourceExhausted => out.push(false),
            _ => out.push(true),
        }
    }
    out
}

/// A request charged at the HTTP layer is not charged again by its call; a second call in
/// the same request, or a call by another caller, is.
#[tokio::test]
async fn a_charged_request_is_charged_once() {
    let engine = Engine::builder(Arc::new(trident_core::agents::Echo)).build();
    let limits = CallerLimits {
        rate: 0.001,
        burst: 4,
        max_streams: 0,
    };
    let limited = Arc::new(Limited::new(Arc::new(engine), limits));
    let peer: SocketAddr = "10.0.0.1:4000".parse().expect("addr");
    let mut cx = CallContext::new().with_principal(Principal::named("alice"));
    cx.peer = Some(peer);
    // Two requests, each charged once at the HTTP layer and making one call.
    for _ in 0..2 {
        let key = limited
            .charge(Principal::named("alice"), Some(peer))
            .expect("within the burst");
        let calls = CREDIT.scope(Cell::new(Some(key)), served(&limited, &cx, 1));
        assert_eq!(calls.await, [true]);
    }
    // Two tokens left: a request making two calls spends both.
    let key = limited
        .charge(Principal::named("alice"), Some(peer))
        .expect("within the burst");
    let calls = CREDIT.scope(Cell::new(Some(key)), served(&limited, &cx, 2));
    assert_eq!(calls.await, [true, true]);
    assert_eq!(
        served(&limited, &cx, 1).await,
        [false],
        "the burst is spent"
    );
    // The address's own bucket (anonymous) is untouched by alice's requests.
    let mut anonymous = CallContext::new();
    anonymous.peer = Some(peer);
    assert_eq!(served(&limited, &anonymous, 4).await, [true; 4]);
}
