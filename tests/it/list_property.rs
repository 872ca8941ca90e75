//! Property: for random task sets, filters and page sizes, following `nextPageToken` returns
//! every visible matching task exactly once, newest status first, with a correct `totalSize`;
//! another principal's tasks never appear.

use std::sync::Arc;

use proptest::prelude::*;
use trident_core::A2aService;
use trident_core::agents::Demo;
use trident_engine::Engine;
use trident_proto as pb;

use crate::harness::{cx_as, msg, req, task_of};

#[derive(Debug, Clone)]
struct Spec {
    owner_is_alice: bool,
    context: u8,
    kind: u8,
}

fn spec() -> impl Strategy<Value = Spec> {
    (any::<bool>(), 0u8..3, 0u8..4).prop_map(|(owner_is_alice, context, kind)| Spec {
        owner_is_alice,
        context,
        kind,
    })
}

#[derive(Debug, Clone)]
struct Filter {
    context: Option<u8>,
    state: Option<u8>,
    since_index: Option<usize>,
    page_size: i32,
}

fn filter() -> impl Strategy<Value = Filter> {
    (
        proptest::option::of(0u8..3),
        proptest::option::of(0u8..4),
        proptest::option::of(0usize..30),
        1i32..8,
    )
        .prop_map(|(context, state, since_index, page_size)| Filter {
            context,
            state,
            since_index,
            page_size,
        })
}

const KINDS: [(&str, pb::TaskState); 4] = [
    ("hello", pb::TaskState::Completed),
    ("input", pb::TaskState::InputRequired),
    ("reject", pb::TaskState::Rejected),
    ("fail", pb::TaskState::Failed),
];

async fn check(specs: Vec<Spec>, f: Filter) {
    let svc: Arc<dyn A2aService> = Arc::new(Engine::builder(Arc::new(Demo)).build());
    let (alice, bob) = (cx_as("alice"), cx_as("bob"));
    let mut mine = Vec::new();
    for s in &specs {
        let mut m = msg(KINDS[s.kind as usize].0);
        m.context_id = format!("ctx-{}", s.context);
        let who = if s.owner_is_alice { &alice } else { &bob };
        let task = task_of(svc.send_message(who, req(m)).await.expect("send"));
        if s.owner_is_alice {
            mine.push(task);
        }
    }
    let since = f
        .since_index
        .and_then(|i| mine.get(i % mine.len().max(1)))
        .and_then(|t| t.status.as_ref()?.timestamp.clone());
    let since_nanos = since.as_ref().map(|t| t.unix_nanos());
    let mut expected: Vec<_> = mine
        .iter()
        .filter(|t| f.context.is_none_or(|c| t.context_id == format!("ctx-{c}")))
        .filter(|t| f.state.is_none_or(|k| t.state() == KINDS[k as usize].1))
        .filter(|t| since_nanos.is_none_or(|n| trident_core::store::status_nanos(t) >= n))
        .map(|t| {
            (
                std::cmp::Reverse(trident_core::store::status_nanos(t)),
                t.id.clone(),
            )
        })
        .collect();
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();

    let mut got = Vec::new();
    let mut token = String::new();
    loop {
        let page = svc
            .list_tasks(
                &alice,
                pb::ListTasksRequest {
                    context_id: f.context.map(|c| format!("ctx-{c}")).unwrap_or_default(),
                    status: f.state.map_or(0, |k| KINDS[k as usize].1 as i32),
                    page_size: Some(f.page_size),
                    page_token: token.clone(),
                    status_timestamp_after: since.clone(),
                    ..Default::default()
                },
            )
            .await
            .expect("list");
        assert_eq!(
            page.total_size as usize,
            expected.len(),
            "totalSize counts all matches"
        );
        assert!(page.tasks.len() <= f.page_size as usize);
        got.extend(page.tasks.into_iter().map(|t| t.id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
        assert!(got.len() <= expected.len(), "pagination must end");
    }
    assert_eq!(
        got, expected,
        "every visible match exactly once, newest first"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn following_page_tokens_returns_every_visible_task_once_in_order(specs in proptest::collection::vec(spec(), 0..30), f in filter()) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        rt.block_on(check(specs, f));
    }
}
