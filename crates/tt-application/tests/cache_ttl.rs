//! `model.cache.ttl`: the lifetime a profile asks for reaches every request of its agents (the
//! model turns and a compaction's summary call alike) and is journaled with the binding.

use crate::support::*;
use tt_domain::profile::{CacheTtl, ModelCachePolicy};

#[tokio::test]
async fn an_hour_long_cache_reaches_every_request_and_the_binding_event() {
    let h = happy_harness();
    h.put_profile(custom_profile("hour-writer", |p| {
        p.model.cache = ModelCachePolicy {
            ttl: Some("1h".into()),
        };
    }));
    let run = h.run_to_end(request(Some("hour-writer"))).await;
    assert_eq!(run.status.as_str(), "completed");
    let requests = h.model.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|request| request.cache_ttl == Some(CacheTtl::OneHour))
    );
    let binding = h.first_event(&run.id, "agent_model_binding_resolved");
    assert_eq!(binding.payload["cacheTtl"], "1h");
}

#[tokio::test]
async fn the_default_lifetime_sends_and_journals_nothing() {
    for ttl in [None, Some("default")] {
        let h = happy_harness();
        h.put_profile(custom_profile("plain-writer", |p| {
            p.model.cache = ModelCachePolicy {
                ttl: ttl.map(str::to_owned),
            };
        }));
        let run = h.run_to_end(request(Some("plain-writer"))).await;
        assert_eq!(run.status.as_str(), "completed");
        assert!(
            h.model
                .requests()
                .iter()
                .all(|request| request.cache_ttl.is_none())
        );
        let binding = h.first_event(&run.id, "agent_model_binding_resolved");
        assert!(binding.payload.get("cacheTtl").is_none(), "{ttl:?}");
    }
}
