//! The one service call of a v0.3 request, for every binding.
//!
//! A v0.3 request becomes one 1.0 call ([`A2aRequest::call`]), with one exception: v0.3's
//! push-config list has no pages (`tasks/pushNotificationConfig/list`, `GET
//! /v1/tasks/{id}/pushNotificationConfigs` and gRPC `ListTaskPushNotificationConfig` answer
//! every configuration), so it gathers every page of the 1.0 list, here, once for the three
//! bindings.

use std::collections::HashSet;

use trident_core::{A2aError, A2aReply, A2aRequest, A2aService, CallContext};
use trident_proto as pb;

/// The most pages a v0.3 list gathers; a service still offering more is answered with an error
/// rather than followed without bound.
pub const MAX_PAGES: usize = 1000;

/// Answers a v0.3 request translated into `request` with `svc`.
pub async fn call(
    svc: &dyn A2aService,
    cx: &CallContext,
    request: A2aRequest,
) -> Result<A2aReply, A2aError> {
    match request {
        A2aRequest::ListTaskPushNotificationConfigs(req) => list_push_configs(svc, cx, req)
            .await
            .map(A2aReply::ListTaskPushNotificationConfigs),
        other => svc.call(cx, other).await,
    }
}

/// Every push configuration of the task `req` names: the 1.0 list followed page by page, in
/// the service's order, in pages of the service's default size. The answer has no
/// `next_page_token`. v0.3's protobuf request has `page_size` and `page_token` fields that
/// v0.3 servers ignore: the size is ignored here too (a v0.3 client may not be refused for a
/// size 1.0 caps), a token is where the list starts (we never hand one to a v0.3 client).
pub async fn list_push_configs(
    svc: &dyn A2aService,
    cx: &CallContext,
    mut req: pb::ListTaskPushNotificationConfigsRequest,
) -> Result<pb::ListTaskPushNotificationConfigsResponse, A2aError> {
    req.page_size = 0;
    let mut all = Vec::new();
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let page = svc
            .list_task_push_notification_configs(cx, req.clone())
            .await?;
        all.extend(page.configs);
        if page.next_page_token.is_empty() {
            return Ok(pb::ListTaskPushNotificationConfigsResponse {
                configs: all,
                next_page_token: String::new(),
            });
        }
        if !seen.insert(page.next_page_token.clone()) {
            return Err(A2aError::internal(
                "the push configuration list repeated a page token; cannot list every \
                 configuration for a v0.3 client",
            ));
        }
        req.page_token = page.next_page_token;
    }
    Err(A2aError::internal(format!(
        "the task has more push configurations than {MAX_PAGES} pages; a v0.3 list (which has \
         no pages) cannot answer them all"
    )))
}
