//! `FakeModel`: a `ModelProvider` whose answers come from a closure over the request, with a
//! record of every request and a "park until cancelled" mode for cancel tests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tt_domain::error_codes;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{ModelError, ModelProvider};

type Responder = dyn Fn(&AgentModelRequest) -> Result<AgentModelResponse, ModelError> + Send + Sync;
type HangPredicate = dyn Fn(&AgentModelRequest) -> bool + Send + Sync;

#[derive(Default)]
struct Records {
    requests: Vec<AgentModelRequest>,
    closed_sessions: Vec<String>,
}

/// A model for application tests.
///
/// Each call is recorded, then either answered by the responder closure or, when the hang
/// predicate matches, parked until its cancel token fires (`ModelError::Cancelled`) or
/// [`release_parked`](Self::release_parked) lets it through to the responder. A call whose
/// token is already cancelled returns `ModelError::Cancelled` at once.
pub struct FakeModel {
    responder: Box<Responder>,
    hang_when: Mutex<Option<Arc<HangPredicate>>>,
    records: Mutex<Records>,
    parked: watch::Sender<usize>,
    /// Bumped by `release_parked`; parked calls wake on any change.
    releases: watch::Sender<u64>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeModel")
            .field("calls", &self.call_count())
            .field("parked", &self.parked_count())
            .finish_non_exhaustive()
    }
}

/// Decrements the parked count however the parked call ends.
struct ParkedGuard<'a>(&'a watch::Sender<usize>);

impl Drop for ParkedGuard<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl FakeModel {
    /// Answers every call with `responder(&request)`.
    pub fn new(
        responder: impl Fn(&AgentModelRequest) -> Result<AgentModelResponse, ModelError>
        + Send
        + Sync
        + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            responder: Box::new(responder),
            hang_when: Mutex::new(None),
            records: Mutex::new(Records::default()),
            parked: watch::Sender::new(0),
            releases: watch::Sender::new(0),
        })
    }

    /// Answers calls in order from `answers`, whatever they ask; once they run out every call
    /// fails with `ModelError::Unavailable` (`model.script_exhausted`).
    pub fn sequence(answers: Vec<Result<AgentModelResponse, ModelError>>) -> Arc<Self> {
        let queue = Mutex::new(VecDeque::from(answers));
        Self::new(move |request| {
            let next = queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
            next.unwrap_or_else(|| {
                Err(ModelError::Unavailable {
                    code: error_codes::MODEL_SCRIPT_EXHAUSTED,
                    message: format!(
                        "the fake model has no answer left for agent `{}` (round {})",
                        request.agent_profile_id, request.round
                    ),
                })
            })
        })
    }

    /// Parks every call until it is cancelled.
    pub fn hanging() -> Arc<Self> {
        let model = Self::new(|_| {
            Err(ModelError::Other(
                "a released call of FakeModel::hanging has no answer".into(),
            ))
        });
        model.hang_all();
        model
    }

    /// Parks the calls for which `predicate` is true (checked when the call arrives).
    pub fn hang_when(
        &self,
        predicate: impl Fn(&AgentModelRequest) -> bool + Send + Sync + 'static,
    ) {
        *self.hang_slot() = Some(Arc::new(predicate));
    }

    /// Parks every following call.
    pub fn hang_all(&self) {
        self.hang_when(|_| true);
    }

    /// Stops parking new calls (already parked calls stay parked; see `release_parked`).
    pub fn stop_hanging(&self) {
        *self.hang_slot() = None;
    }

    /// Lets every currently parked call through to the responder.
    pub fn release_parked(&self) {
        self.releases.send_modify(|generation| *generation += 1);
    }

    /// Number of calls currently parked.
    pub fn parked_count(&self) -> usize {
        *self.parked.borrow()
    }

    /// Resolves once at least `count` calls are parked.
    pub async fn wait_for_parked(&self, count: usize) {
        let mut parked = self.parked.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = parked.wait_for(|current| *current >= count).await;
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<AgentModelRequest> {
        self.records().requests.clone()
    }

    pub fn call_count(&self) -> usize {
        self.records().requests.len()
    }

    /// Session ids passed to `close_session`, in order.
    pub fn closed_sessions(&self) -> Vec<String> {
        self.records().closed_sessions.clone()
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hang_slot(&self) -> MutexGuard<'_, Option<Arc<HangPredicate>>> {
        self.hang_when
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ModelProvider for FakeModel {
    fn name(&self) -> &str {
        "fake"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.records().requests.push(request.clone());
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let predicate = self.hang_slot().clone();
        if predicate.is_some_and(|hang| hang(request)) {
            let mut releases = self.releases.subscribe();
            self.parked.send_modify(|count| *count += 1);
            let _guard = ParkedGuard(&self.parked);
            tokio::select! {
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                _ = releases.changed() => {}
            }
        }
        (self.responder)(request)
    }

    async fn close_session(&self, session_id: &str) {
        self.records().closed_sessions.push(session_id.to_owned());
    }
}

/// A connection whose default model is `model`, priced as a mid-size hosted model: $3 per
/// million prompt tokens and $15 per million answer tokens (cache reads and writes at the
/// prompt price). What spend limits and cost budgets need to count anything.
pub fn priced_model_info(model: &str) -> tt_ports::ConnectionModelInfo {
    let mut info = tt_ports::ConnectionModelInfo {
        default_model: Some(model.to_owned()),
        ..Default::default()
    };
    let price = tt_domain::cost::ModelPrice {
        input: 3.0,
        output: 15.0,
        cached_input: None,
        cache_write: None,
    };
    info.prices.insert(model.to_owned(), price);
    info
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fakes::responses;
    use serde_json::json;
    use tt_domain::ids::{InvocationId, ProfileId, RunId};
    use tt_domain::model::{AgentModelMessage, ModelRole, ProviderSession};

    /// A request of `agent` in round 1 of the call `invocation` of run `run_a`.
    pub(crate) fn request(agent: &str, invocation: &str) -> AgentModelRequest {
        AgentModelRequest::new(
            ProviderSession::new(
                &RunId::from_raw("run_a"),
                &InvocationId::from_raw(invocation),
            ),
            ProfileId::parse(agent).unwrap(),
            1,
            vec![AgentModelMessage::text(ModelRole::User, "go")],
        )
    }

    #[tokio::test]
    async fn answers_from_the_closure_and_records_requests() {
        let model = FakeModel::new(|request| {
            Ok(responses::tool_call(
                "call_1",
                "workspace_finish",
                json!({"agent": request.agent_profile_id.as_str()}),
            ))
        });
        let response = model
            .complete(&request("critic", "inv_a"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            response.tool_calls()[0].arguments,
            json!({"agent": "critic"})
        );
        assert_eq!(model.call_count(), 1);
        model.close_session("run_a:inv_a").await;
        assert_eq!(model.closed_sessions(), ["run_a:inv_a"]);
    }

    #[tokio::test]
    async fn sequence_runs_out_with_a_coded_error() {
        let model = FakeModel::sequence(vec![Ok(responses::text("one"))]);
        let token = CancellationToken::new();
        assert_eq!(
            model
                .complete(&request("critic", "inv_a"), token.clone())
                .await
                .unwrap()
                .text(),
            "one"
        );
        let err = model
            .complete(&request("critic", "inv_a"), token)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "model.script_exhausted");
    }

    #[tokio::test(start_paused = true)]
    async fn parked_calls_end_on_cancel_or_release() {
        let model = FakeModel::new(|_| Ok(responses::text("released")));
        model.hang_when(|request| request.session.invocation_id.as_str() != "inv_free");
        let token = CancellationToken::new();
        let cancelled = tokio::spawn({
            let model = model.clone();
            let token = token.clone();
            async move { model.complete(&request("critic", "inv_a"), token).await }
        });
        let released = tokio::spawn({
            let model = model.clone();
            async move {
                model
                    .complete(&request("critic", "inv_b"), CancellationToken::new())
                    .await
            }
        });
        model.wait_for_parked(2).await;
        let free = model
            .complete(&request("critic", "inv_free"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(free.text(), "released");
        token.cancel();
        assert_eq!(cancelled.await.unwrap(), Err(ModelError::Cancelled));
        model.release_parked();
        assert_eq!(released.await.unwrap().unwrap().text(), "released");
        assert_eq!(model.parked_count(), 0);

        let pre_cancelled = CancellationToken::new();
        pre_cancelled.cancel();
        assert_eq!(
            model
                .complete(&request("critic", "inv_c"), pre_cancelled)
                .await,
            Err(ModelError::Cancelled)
        );
    }
}
