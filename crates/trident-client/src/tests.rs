use reqwest::header::{CACHE_CONTROL, ETAG, HeaderMap, HeaderValue};
use trident_proto as pb;

use crate::cache::{CardCache, Freshness, max_age};
use crate::{Binding, choose, no_match};

fn headers(pairs: &[(reqwest::header::HeaderName, &'static str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in pairs {
        h.append(n.clone(), HeaderValue::from_static(v));
    }
    h
}

#[test]
fn cache_control_is_read_as_caches_read_it() {
    use std::time::Duration;
    let age = |v: &'static str| max_age(&headers(&[(CACHE_CONTROL, v)]));
    assert_eq!(age("public, max-age=300"), Some(Duration::from_secs(300)));
    assert_eq!(age("MAX-AGE=\"5\""), Some(Duration::from_secs(5)));
    assert_eq!(age("no-cache, max-age=300"), Some(Duration::ZERO));
    assert_eq!(age("max-age=300, no-store"), None);
    assert_eq!(age("max-age=soon"), Some(Duration::ZERO));
    assert_eq!(max_age(&HeaderMap::new()), Some(Duration::ZERO));
}

fn card(name: &str) -> pb::AgentCard {
    pb::AgentCard {
        name: name.to_owned(),
        ..Default::default()
    }
}

#[test]
fn the_cache_keeps_what_it_may_and_nothing_else() {
    let cache = CardCache::default();
    let url = "http://a/.well-known/agent-card.json";
    cache.store(url, &card("a"), &headers(&[(CACHE_CONTROL, "max-age=60")]));
    assert!(matches!(cache.lookup(url), Freshness::Fresh(c) if c.name == "a"));

    cache.store(
        url,
        &card("b"),
        &headers(&[(CACHE_CONTROL, "no-cache"), (ETAG, "\"v2\"")]),
    );
    assert!(matches!(cache.lookup(url), Freshness::Stale { etag: Some(e) } if e == "\"v2\""));
    let again = cache.revalidated(url, &headers(&[(CACHE_CONTROL, "max-age=60")]));
    assert_eq!(again.map(|c| c.name), Some("b".to_owned()));
    assert!(matches!(cache.lookup(url), Freshness::Fresh(_)));

    cache.store(
        url,
        &card("c"),
        &headers(&[(CACHE_CONTROL, "no-store"), (ETAG, "\"v3\"")]),
    );
    assert!(matches!(cache.lookup(url), Freshness::Missing));
    // Neither a max-age nor an ETag: nothing to reuse it by.
    cache.store(url, &card("d"), &HeaderMap::new());
    assert!(matches!(cache.lookup(url), Freshness::Missing));
    assert!(cache.revalidated(url, &HeaderMap::new()).is_none());
}

#[test]
fn a_card_without_a_match_says_what_it_offers() {
    let card = pb::AgentCard {
        supported_interfaces: vec![
            pb::AgentInterface {
                url: "127.0.0.1:50051".to_owned(),
                protocol_binding: "GRPC".to_owned(),
                protocol_version: "1.0".to_owned(),
                ..Default::default()
            },
            pb::AgentInterface {
                url: "http://127.0.0.1:8080/rpc".to_owned(),
                protocol_binding: "JSONRPC".to_owned(),
                protocol_version: "0.3".to_owned(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    assert!(choose(&card, &[Binding::JsonRpc]).is_none());
    let e = no_match(
        "http://127.0.0.1:8080",
        &card,
        &[Binding::JsonRpc, Binding::Rest],
    );
    assert_eq!(
        e.message(),
        "http://127.0.0.1:8080 offers none of the bindings JSONRPC, HTTP+JSON for A2A 1.x; its \
         card lists GRPC at 127.0.0.1:50051 (version 1.0), JSONRPC at \
         http://127.0.0.1:8080/rpc (version 0.3)"
    );
    let empty = no_match("x", &pb::AgentCard::default(), &[]);
    assert!(
        empty.message().ends_with("its card lists no interfaces"),
        "{empty}"
    );
    assert_eq!(choose(&card, &[]).map(|(b, _)| b), Some(Binding::Grpc));
}

#[test]
fn bad_options_fail_the_build() {
    let e = crate::ClientBuilder::new()
        .header("bad header", "x")
        .build()
        .expect_err("a header name with a space");
    assert_eq!(e.kind(), trident_core::ErrorKind::InvalidParams);
    let e = crate::ClientBuilder::new()
        .api_key("x-api-key", "line\nbreak")
        .build()
        .expect_err("a header value with a newline");
    assert_eq!(e.kind(), trident_core::ErrorKind::InvalidParams);
}

#[tokio::test]
async fn a_query_api_key_stays_out_of_debug_and_off_grpc() {
    let builder = crate::ClientBuilder::new().api_key_query("team_key", "k-secret");
    let shown = format!("{builder:?}");
    assert!(shown.contains("team_key=[redacted]"), "{shown}");
    assert!(!shown.contains("k-secret"), "{shown}");
    let client = builder.build().expect("client");
    assert!(!format!("{client:?}").contains("k-secret"));
    let interface = pb::AgentInterface {
        url: "http://127.0.0.1:1".into(),
        protocol_binding: "GRPC".into(),
        protocol_version: "1.0".into(),
        ..Default::default()
    };
    let e = match client.client(Binding::Grpc, &interface).await {
        Ok(_) => panic!("gRPC cannot carry a query parameter"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), trident_core::ErrorKind::InvalidParams);
    assert!(e.message().contains("team_key"), "{e}");
    assert!(!e.message().contains("k-secret"), "{e}");
}

mod preview {
    use std::sync::{Arc, Mutex};

    use futures::StreamExt;
    use trident_core::{
        A2aError, A2aReply, A2aRequest, AroundCall, CallContext, ErrorKind, StreamEvent,
    };
    use trident_proto as pb;
    use trident_proto::stream_response::Payload as Event;

    use crate::preview::{GapCheck, Verdict};
    use crate::{Binding, Preview, choose, preview_interface, speaks_preview};

    fn task(generation: i64) -> pb::Task {
        pb::Task {
            id: "t-1".into(),
            context_id: "c-1".into(),
            generation,
            ..Default::default()
        }
    }

    fn status(generation: i64) -> pb::StreamResponse {
        pb::StreamResponse::new(Event::StatusUpdate(pb::TaskStatusUpdateEvent {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            generation,
            ..Default::default()
        }))
    }

    fn artifact(generation: i64) -> pb::StreamResponse {
        pb::StreamResponse::new(Event::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            generation,
            ..Default::default()
        }))
    }

    fn gap() -> Verdict {
        Verdict::Gap {
            task_id: "t-1".into(),
        }
    }

    #[test]
    fn events_in_order_pass_from_the_task_event_on() {
        let mut check = GapCheck::new(None);
        let first = pb::StreamResponse::new(Event::Task(task(1)));
        assert_eq!(check.observe(&first), Verdict::Pass);
        assert_eq!(check.observe(&status(2)), Verdict::Pass);
        assert_eq!(check.observe(&artifact(3)), Verdict::Pass);
        assert_eq!(check.observe(&artifact(4)), Verdict::Pass);
        assert_eq!(check.last(), Some(4));
        // A message is no change of the task.
        let reply = pb::StreamResponse::new(Event::Message(pb::Message::agent("m", vec![])));
        assert_eq!(check.observe(&reply), Verdict::Pass);
        assert_eq!(check.last(), Some(4));
    }

    #[test]
    fn a_skipped_generation_is_a_gap_and_an_old_one_is_dropped() {
        let mut check = GapCheck::new(None);
        check.observe(&pb::StreamResponse::new(Event::Task(task(3))));
        assert_eq!(check.observe(&status(5)), gap());
        // Nothing moved: the view is still at 3 until the task is read again.
        assert_eq!(check.last(), Some(3));
        // The task read includes generation 5: the event is not yielded again.
        assert!(!check.refetched(&task(6), 5));
        assert_eq!(check.last(), Some(6));
        assert_eq!(check.observe(&artifact(6)), Verdict::Skip);
        assert_eq!(check.observe(&artifact(4)), Verdict::Skip);
        assert_eq!(check.observe(&status(7)), Verdict::Pass);
        // A task read that is behind the event (a lagging replica): the event still goes on.
        assert_eq!(check.observe(&status(9)), gap());
        assert!(check.refetched(&task(8), 9));
        assert_eq!(check.last(), Some(9));
        assert_eq!(check.observe(&status(10)), Verdict::Pass);
    }

    #[test]
    fn a_resumed_stream_counts_from_what_the_caller_saw() {
        // Resumed after generation 4: 5 follows, 6 would be a gap.
        let mut check = GapCheck::new(Some(4));
        assert_eq!(check.observe(&status(5)), Verdict::Pass);
        let mut check = GapCheck::new(Some(4));
        assert_eq!(check.observe(&status(6)), gap());
        // No view at all and an update first: the task is read to start one.
        let mut check = GapCheck::new(None);
        assert_eq!(check.observe(&artifact(2)), gap());
    }

    #[test]
    fn events_without_a_generation_pass_unchecked() {
        // An agent that does not speak the preview stamps none: nothing to check.
        let mut check = GapCheck::new(None);
        assert_eq!(
            check.observe(&pb::StreamResponse::new(Event::Task(task(0)))),
            Verdict::Pass
        );
        assert_eq!(check.observe(&status(0)), Verdict::Pass);
        assert_eq!(check.observe(&artifact(0)), Verdict::Pass);
        assert_eq!(check.last(), None);
    }

    /// An agent whose GetTask answers with the task at `generation` (and records the versions
    /// and generations it was asked with); every other call is refused.
    struct Agent {
        generation: i64,
        asked: Mutex<Vec<(Option<String>, Option<i64>)>>,
        sent: Mutex<Vec<Option<i64>>>,
    }

    impl Agent {
        fn new(generation: i64) -> Arc<Self> {
            Arc::new(Self {
                generation,
                asked: Mutex::new(Vec::new()),
                sent: Mutex::new(Vec::new()),
            })
        }
    }

    #[async_trait::async_trait]
    impl AroundCall for Agent {
        async fn call(&self, cx: &CallContext, req: A2aRequest) -> Result<A2aReply, A2aError> {
            match req {
                A2aRequest::GetTask(r) => {
                    self.asked
                        .lock()
                        .expect("lock")
                        .push((cx.version.clone(), r.current_generation));
                    Ok(A2aReply::GetTask(task(self.generation)))
                }
                A2aRequest::SendMessage(r) => {
                    let g = r.configuration.and_then(|c| c.if_generation_match);
                    self.sent.lock().expect("lock").push(g);
                    Err(A2aError::new(ErrorKind::TaskGenerationMismatch, "moved on"))
                }
                _ => Err(A2aError::unsupported("not in this test")),
            }
        }
    }

    fn events(items: Vec<pb::StreamResponse>) -> trident_core::EventStream {
        futures::stream::iter(items.into_iter().map(|r| {
            Ok(StreamEvent {
                seq: None,
                response: Arc::new(r),
            })
        }))
        .boxed()
    }

    fn generations(got: &[Result<StreamEvent, A2aError>]) -> Vec<(&'static str, i64)> {
        got.iter()
            .map(|e| {
                let e = e.as_ref().expect("an event");
                match &e.response.payload {
                    Some(Event::Task(t)) => ("task", t.generation),
                    Some(Event::StatusUpdate(u)) => ("status", u.generation),
                    Some(Event::ArtifactUpdate(a)) => ("artifact", a.generation),
                    _ => ("other", 0),
                }
            })
            .collect()
    }

    #[tokio::test]
    async fn a_gap_in_a_stream_is_mended_with_the_task_read_again() {
        let agent = Agent::new(5);
        let preview = Preview::new(agent.clone());
        let stream = events(vec![
            pb::StreamResponse::new(Event::Task(task(1))),
            status(2),
            // 3 and 4 are lost; the task read is at 5, so the event of 5 is in it.
            artifact(5),
            artifact(6),
            status(7),
        ]);
        let got: Vec<_> = preview
            .mend_gaps(CallContext::new(), stream, None)
            .collect()
            .await;
        assert_eq!(
            generations(&got),
            [
                ("task", 1),
                ("status", 2),
                ("task", 5),
                ("artifact", 6),
                ("status", 7)
            ]
        );
        let read = got[2].as_ref().expect("the task read");
        assert_eq!(read.seq, Some(5));
        // One read, in the preview, not a long poll.
        assert_eq!(
            *agent.asked.lock().expect("lock"),
            [(Some("1.1".to_owned()), None)]
        );
    }

    #[tokio::test]
    async fn a_stream_without_gaps_is_untouched_and_a_failed_read_ends_it() {
        let agent = Agent::new(3);
        let preview = Preview::new(agent.clone());
        let whole = events(vec![
            pb::StreamResponse::new(Event::Task(task(1))),
            status(2),
            status(3),
        ]);
        let got: Vec<_> = preview
            .mend_gaps(CallContext::new(), whole, None)
            .collect()
            .await;
        assert_eq!(
            generations(&got),
            [("task", 1), ("status", 2), ("status", 3)]
        );
        assert!(agent.asked.lock().expect("lock").is_empty());

        // The task read after a gap behind the event: the task, then the event.
        let behind = events(vec![
            pb::StreamResponse::new(Event::Task(task(1))),
            status(4),
        ]);
        let got: Vec<_> = preview
            .mend_gaps(CallContext::new(), behind, None)
            .collect()
            .await;
        assert_eq!(generations(&got), [("task", 1), ("task", 3), ("status", 4)]);

        // A read that fails ends the stream with its error.
        let refusing = Preview::new(Arc::new(Refusing));
        let got: Vec<_> = refusing
            .mend_gaps(CallContext::new(), events(vec![status(2), status(3)]), None)
            .collect()
            .await;
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].as_ref().err().map(A2aError::kind),
            Some(ErrorKind::TaskNotFound)
        );
    }

    struct Refusing;

    #[async_trait::async_trait]
    impl AroundCall for Refusing {
        async fn call(&self, _: &CallContext, _: A2aRequest) -> Result<A2aReply, A2aError> {
            Err(A2aError::new(ErrorKind::TaskNotFound, "gone"))
        }
    }

    #[tokio::test]
    async fn the_long_poll_and_the_precondition_set_their_fields_in_1_1() {
        let agent = Agent::new(4);
        let preview = Preview::new(agent.clone());
        let get = pb::GetTaskRequest {
            id: "t-1".into(),
            ..Default::default()
        };
        let got = preview
            .long_poll(&CallContext::new(), get.clone(), 3)
            .await
            .expect("the task");
        assert_eq!(got.generation, 4);
        assert_eq!(
            *agent.asked.lock().expect("lock"),
            [(Some("1.1".to_owned()), Some(3))]
        );
        let e = preview
            .send_message_if(&CallContext::new(), pb::SendMessageRequest::default(), 2)
            .await
            .expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::TaskGenerationMismatch);
        assert_eq!(*agent.sent.lock().expect("lock"), [Some(2)]);

        // An agent that answers without a generation does not speak the preview: an error,
        // not an answer a loop would spin on.
        let plain = Preview::new(Agent::new(0));
        let e = plain
            .long_poll(&CallContext::new(), get, 1)
            .await
            .expect_err("no generation");
        assert_eq!(e.kind(), ErrorKind::VersionNotSupported);
    }

    #[test]
    fn preview_interfaces_are_found_only_on_purpose() {
        let interface = |binding: &str, version: &str| pb::AgentInterface {
            url: "http://127.0.0.1:8080/rpc".into(),
            protocol_binding: binding.into(),
            protocol_version: version.into(),
            ..Default::default()
        };
        // What a server with the preview serves to a card request that says 1.1.
        let card = pb::AgentCard {
            supported_interfaces: vec![
                interface("JSONRPC", "1.1"),
                interface("JSONRPC", "1.0"),
                interface("GRPC", "1.0"),
            ],
            ..Default::default()
        };
        assert!(speaks_preview(&card.supported_interfaces[0]));
        assert!(speaks_preview(&interface("JSONRPC", "1.1.0")));
        assert!(!speaks_preview(&interface("JSONRPC", "1.0")));
        assert!(!speaks_preview(&interface("JSONRPC", "1.10")));
        // The 1.0 choice never lands on it, though it comes first.
        let (binding, chosen) = choose(&card, &[Binding::JsonRpc]).expect("JSON-RPC");
        assert_eq!(
            (binding, chosen.protocol_version.as_str()),
            (Binding::JsonRpc, "1.0")
        );
        assert_eq!(
            preview_interface(&card, Binding::JsonRpc).map(|i| i.protocol_version),
            Some("1.1".to_owned())
        );
        assert!(preview_interface(&card, Binding::Grpc).is_none());
    }
}
