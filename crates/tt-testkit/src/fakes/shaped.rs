//! `ShapedModel`: a wrapper around any `ModelProvider` (a [`FakeModel`](super::FakeModel), a
//! scripted provider, …) that gives its answers the shape a test needs: held at a gate,
//! streamed as deltas, held until released, refused for the first calls, with a stated context window, a settings
//! check and a record of every request.
//!
//! The inner provider only answers (its `complete`); everything else is the wrapper's.
//! Built step by step:
//!
//! ```ignore
//! let model = Arc::new(
//!     ShapedModel::around(FakeModel::sequence(answers))
//!         .named("upstream")
//!         .failing_first(1, ModelError::Transient { message: "502".into() })
//!         .streaming_words(),
//! );
//! ```

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tt_domain::generation::GenerationSettings;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelContentPart, ModelDelta};
use tt_ports::{DroppedSetting, ModelDeltaSink, ModelError, ModelProvider, ServerContextWindow};

type SettingsCheck = dyn Fn(&GenerationSettings, Option<u32>) -> Result<Vec<DroppedSetting>, ModelError>
    + Send
    + Sync;
type HoldPredicate = dyn Fn(&AgentModelResponse) -> bool + Send + Sync;

/// Deltas given up front: sent before the answer is asked for, each followed by its pause.
struct GivenDeltas {
    /// Only in this round; every call when `None`.
    round: Option<u32>,
    deltas: Vec<(ModelDelta, Duration)>,
}

/// An answer held back until `release` is notified (or the call is cancelled).
struct Hold {
    when: Box<HoldPredicate>,
    release: Arc<Notify>,
}

#[derive(Default)]
struct Records {
    requests: Vec<AgentModelRequest>,
    calls: usize,
    probes: usize,
}

/// `inner`'s answers, shaped. Each call (`complete` or `stream`) is recorded, then:
///
/// 1. fails with the configured error while it is one of the first `n` calls;
/// 2. (`stream` only) sends the given deltas of its round, pausing after each;
/// 3. asks `inner.complete` for the answer;
/// 4. (`stream` only) sends the answer's text word by word, when asked to;
/// 5. holds the answer while the hold predicate matches it, until released or cancelled.
///
/// `context_window` and `check_settings` answer as configured, else as `inner` does; every
/// other method goes to `inner` (the format goes by the name given with [`named`](Self::named)).
pub struct ShapedModel {
    inner: Arc<dyn ModelProvider>,
    name: Option<String>,
    given: Option<GivenDeltas>,
    words: bool,
    hold: Option<Hold>,
    gate: Option<Arc<Semaphore>>,
    fail_first: Option<(usize, ModelError)>,
    window: Option<Result<Option<ServerContextWindow>, ModelError>>,
    settings: Option<Box<SettingsCheck>>,
    records: Mutex<Records>,
}

impl std::fmt::Debug for ShapedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ShapedModel({:?}, {} calls)",
            self.name(),
            self.call_count()
        )
    }
}

impl ShapedModel {
    /// `inner`'s answers as they are (add shapes with the methods below).
    pub fn around(inner: Arc<dyn ModelProvider>) -> Self {
        Self {
            inner,
            name: None,
            given: None,
            words: false,
            hold: None,
            gate: None,
            fail_first: None,
            window: None,
            settings: None,
            records: Mutex::new(Records::default()),
        }
    }

    /// Goes by `name` (else by `inner`'s).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Streams `deltas` before every answer, each followed by its pause (paused time in tests).
    pub fn streaming_deltas(mut self, deltas: Vec<(ModelDelta, Duration)>) -> Self {
        self.given = Some(GivenDeltas {
            round: None,
            deltas,
        });
        self
    }

    /// Streams `deltas` (each followed by its pause) before the answers of round `round` only.
    pub fn streaming_in_round(mut self, round: u32, deltas: Vec<(ModelDelta, Duration)>) -> Self {
        self.given = Some(GivenDeltas {
            round: Some(round),
            deltas,
        });
        self
    }

    /// Streams each answer's text as deltas, word by word (every word with its trailing space).
    pub fn streaming_words(mut self) -> Self {
        self.words = true;
        self
    }

    /// Holds every answer whose text contains `text` (after its deltas) until `release` is
    /// notified; a cancelled held call answers `ModelError::Cancelled`.
    pub fn holding_text(self, text: impl Into<String>, release: Arc<Notify>) -> Self {
        let text = text.into();
        self.holding_when(move |answer| answer.text().contains(&text), release)
    }

    /// Holds every answer `when` matches until `release` is notified (or the call is
    /// cancelled).
    pub fn holding_when(
        mut self,
        when: impl Fn(&AgentModelResponse) -> bool + Send + Sync + 'static,
        release: Arc<Notify>,
    ) -> Self {
        self.hold = Some(Hold {
            when: Box::new(when),
            release,
        });
        self
    }

    /// Makes every call wait for a permit of `gate` (taken for good) once it is recorded, so a
    /// test decides when each call may go on (`gate.add_permits`), without timing.
    pub fn gated(mut self, gate: Arc<Semaphore>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Fails the first `calls` calls with `error` (`inner` is not asked).
    pub fn failing_first(mut self, calls: usize, error: ModelError) -> Self {
        self.fail_first = Some((calls, error));
        self
    }

    /// Answers every `context_window` probe with `answer` (counted: [`probe_count`]).
    ///
    /// [`probe_count`]: Self::probe_count
    pub fn stating_window(
        mut self,
        answer: Result<Option<ServerContextWindow>, ModelError>,
    ) -> Self {
        self.window = Some(answer);
        self
    }

    /// Answers `check_settings` with `check(settings, max_output_tokens)`.
    pub fn checking_settings(
        mut self,
        check: impl Fn(&GenerationSettings, Option<u32>) -> Result<Vec<DroppedSetting>, ModelError>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.settings = Some(Box::new(check));
        self
    }

    /// Every request received (`complete` and `stream`), in arrival order.
    pub fn requests(&self) -> Vec<AgentModelRequest> {
        self.records().requests.clone()
    }

    /// The requests received so far, forgetting them (the call count stays).
    pub fn take_requests(&self) -> Vec<AgentModelRequest> {
        std::mem::take(&mut self.records().requests)
    }

    /// Calls received (`complete` and `stream`), failed ones included.
    pub fn call_count(&self) -> usize {
        self.records().calls
    }

    /// `context_window` probes answered by the configured answer.
    pub fn probe_count(&self) -> usize {
        self.records().probes
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the call and waits at the gate, if there is one; the configured error while it
    /// is one of the first calls.
    async fn arrive(&self, request: &AgentModelRequest) -> Result<(), ModelError> {
        let call = {
            let mut records = self.records();
            records.requests.push(request.clone());
            records.calls += 1;
            records.calls
        };
        if let Some(gate) = &self.gate
            && let Ok(permit) = gate.acquire().await
        {
            permit.forget();
        }
        match &self.fail_first {
            Some((calls, error)) if call <= *calls => Err(error.clone()),
            _ => Ok(()),
        }
    }

    /// Sends the given deltas of `round`, pausing after each.
    async fn send_given(
        &self,
        round: u32,
        sink: &dyn ModelDeltaSink,
        cancel: &CancellationToken,
    ) -> Result<(), ModelError> {
        let Some(given) = &self.given else {
            return Ok(());
        };
        if given.round.is_some_and(|only| only != round) {
            return Ok(());
        }
        for (delta, pause) in &given.deltas {
            sink.delta(delta.clone());
            if !pause.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(*pause) => {}
                    () = cancel.cancelled() => return Err(ModelError::Cancelled),
                }
            }
        }
        Ok(())
    }

    /// Waits for the release of an answer the hold matches.
    async fn hold(
        &self,
        answer: AgentModelResponse,
        cancel: &CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        if let Some(hold) = &self.hold
            && (hold.when)(&answer)
        {
            tokio::select! {
                () = hold.release.notified() => {}
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            }
        }
        Ok(answer)
    }
}

/// Sends the text of `answer` to `sink`, word by word.
fn send_words(answer: &AgentModelResponse, sink: &dyn ModelDeltaSink) {
    for part in &answer.message.parts {
        if let ModelContentPart::Text { text } = part {
            for word in text.split_inclusive(' ') {
                sink.delta(ModelDelta::Text {
                    text: word.to_owned(),
                });
            }
        }
    }
}

tt_ports::decorated_model_provider!(ShapedModel, inner, forward [
    close_session, transport, remember_context_window,
], {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_else(|| self.inner.name())
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.arrive(request).await?;
        let answer = self.inner.complete(request, cancel.clone()).await?;
        self.hold(answer, &cancel).await
    }

    async fn stream(
        &self,
        request: &AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        self.arrive(request).await?;
        self.send_given(request.round, sink.as_ref(), &cancel)
            .await?;
        let answer = self.inner.complete(request, cancel.clone()).await?;
        if self.words {
            send_words(&answer, sink.as_ref());
        }
        self.hold(answer, &cancel).await
    }

    /// A renamed model's format is its name (as for a provider that keeps the default).
    fn provider_format(&self) -> &str {
        match &self.name {
            Some(name) => name,
            None => self.inner.provider_format(),
        }
    }

    async fn context_window(
        &self,
        model_id: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<Option<ServerContextWindow>, ModelError> {
        match &self.window {
            Some(answer) => {
                self.records().probes += 1;
                answer.clone()
            }
            None => self.inner.context_window(model_id, cancel).await,
        }
    }

    fn check_settings(
        &self,
        settings: &GenerationSettings,
        max_output_tokens: Option<u32>,
    ) -> Result<Vec<DroppedSetting>, ModelError> {
        match &self.settings {
            Some(check) => check(settings, max_output_tokens),
            None => self.inner.check_settings(settings, max_output_tokens),
        }
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fakes::FakeModel;
    use crate::fakes::model::tests::request;
    use crate::fakes::responses;

    #[derive(Default)]
    struct Collect(Mutex<Vec<ModelDelta>>);

    impl ModelDeltaSink for Collect {
        fn delta(&self, delta: ModelDelta) {
            self.0.lock().unwrap().push(delta);
        }
    }

    impl Collect {
        fn texts(&self) -> Vec<String> {
            let deltas = self.0.lock().unwrap();
            deltas
                .iter()
                .map(|delta| match delta {
                    ModelDelta::Text { text } => text.clone(),
                    other => format!("{other:?}"),
                })
                .collect()
        }
    }

    fn round(round: u32) -> AgentModelRequest {
        AgentModelRequest {
            round,
            ..request("critic", "inv_a")
        }
    }

    fn text(text: &str) -> (ModelDelta, Duration) {
        let text = text.to_owned();
        (ModelDelta::Text { text }, Duration::from_millis(5))
    }

    #[tokio::test(start_paused = true)]
    async fn streams_given_deltas_in_their_round_then_the_answers_words() {
        let model = ShapedModel::around(FakeModel::new(|_| Ok(responses::text("a storm came"))))
            .named("upstream")
            .streaming_in_round(1, vec![text("Wait"), text("ing.")])
            .streaming_words();
        assert_eq!(
            (model.name(), model.provider_format()),
            ("upstream", "upstream")
        );
        for (n, expected) in [
            (1, vec!["Wait", "ing.", "a ", "storm ", "came"]),
            (2, vec!["a ", "storm ", "came"]),
        ] {
            let sink = Arc::new(Collect::default());
            let answer = model
                .stream(&round(n), sink.clone(), CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(answer.text(), "a storm came");
            assert_eq!(sink.texts(), expected);
        }
        // `complete` answers without deltas.
        let answer = model.complete(&round(3), CancellationToken::new()).await;
        assert_eq!(answer.unwrap().text(), "a storm came");
        let rounds: Vec<u32> = model.take_requests().iter().map(|r| r.round).collect();
        assert_eq!(rounds, [1, 2, 3]);
        assert!(model.requests().is_empty());
        assert_eq!(model.call_count(), 3);
    }

    #[tokio::test]
    async fn the_first_calls_fail_with_the_given_error_and_are_recorded() {
        let inner = FakeModel::new(|_| Ok(responses::text("ok")));
        let refusal = ModelError::Transient {
            message: "502 bad gateway".into(),
        };
        let model = ShapedModel::around(inner.clone()).failing_first(2, refusal.clone());
        for _ in 0..2 {
            let failed = model.complete(&round(1), CancellationToken::new()).await;
            assert_eq!(failed, Err(refusal.clone()));
        }
        let answer = model.complete(&round(1), CancellationToken::new()).await;
        assert_eq!(answer.unwrap().text(), "ok");
        assert_eq!((model.call_count(), inner.call_count()), (3, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_answer_waits_for_its_release_or_its_cancellation() {
        let release = Arc::new(Notify::new());
        let model = Arc::new(
            ShapedModel::around(FakeModel::new(|request| {
                Ok(responses::text(if request.round == 1 {
                    "held"
                } else {
                    "free"
                }))
            }))
            .holding_text("held", Arc::clone(&release))
            .streaming_words(),
        );
        let sink = Arc::new(Collect::default());
        let held = tokio::spawn({
            let (model, sink) = (Arc::clone(&model), sink.clone());
            async move {
                model
                    .stream(&round(1), sink, CancellationToken::new())
                    .await
            }
        });
        let free = model.complete(&round(2), CancellationToken::new()).await;
        assert_eq!(free.unwrap().text(), "free");
        // The deltas went out before the hold.
        while sink.texts().is_empty() {
            tokio::task::yield_now().await;
        }
        assert!(!held.is_finished());
        release.notify_one();
        assert_eq!(held.await.unwrap().unwrap().text(), "held");

        let cancel = CancellationToken::new();
        let cancelled = tokio::spawn({
            let (model, cancel) = (Arc::clone(&model), cancel.clone());
            async move { model.complete(&round(1), cancel).await }
        });
        cancel.cancel();
        assert_eq!(cancelled.await.unwrap(), Err(ModelError::Cancelled));
    }

    #[tokio::test(start_paused = true)]
    async fn a_gated_call_waits_for_a_permit_of_its_own() {
        let gate = Arc::new(Semaphore::new(0));
        let model = Arc::new(
            ShapedModel::around(FakeModel::new(|_| Ok(responses::text("ok"))))
                .gated(Arc::clone(&gate)),
        );
        let call = || {
            let model = Arc::clone(&model);
            tokio::spawn(async move { model.complete(&round(1), CancellationToken::new()).await })
        };
        let (mut first, mut second) = (call(), call());
        while model.call_count() < 2 {
            tokio::task::yield_now().await;
        }
        assert!(!first.is_finished() && !second.is_finished());
        gate.add_permits(1);
        let (done, waiting) = tokio::select! {
            done = &mut first => (done, second),
            done = &mut second => (done, first),
        };
        assert_eq!(done.unwrap().unwrap().text(), "ok");
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "a permit is used up by one call");
        gate.add_permits(1);
        assert_eq!(waiting.await.unwrap().unwrap().text(), "ok");
    }

    #[tokio::test]
    async fn probes_and_settings_checks_answer_as_configured_else_as_the_inner_model() {
        let window = ServerContextWindow {
            tokens: 32_768,
            source: "/props".into(),
        };
        let seed = GenerationSettings {
            seed: Some(7),
            ..GenerationSettings::default()
        };
        let plain = ShapedModel::around(FakeModel::new(|_| Ok(responses::text("ok"))));
        let probe = plain.context_window(None, CancellationToken::new()).await;
        assert_eq!(probe, Ok(None));
        assert_eq!(plain.check_settings(&seed, None), Ok(Vec::new()));
        assert_eq!(plain.probe_count(), 0);

        let shaped = ShapedModel::around(FakeModel::new(|_| Ok(responses::text("ok"))))
            .stating_window(Ok(Some(window.clone())))
            .checking_settings(|settings, _| {
                Err(ModelError::SettingUnsupported {
                    message: format!("no seed {:?}", settings.seed),
                })
            });
        for _ in 0..2 {
            let probe = shaped.context_window(None, CancellationToken::new()).await;
            assert_eq!(probe, Ok(Some(window.clone())));
        }
        assert_eq!(shaped.probe_count(), 2);
        assert_eq!(
            shaped.check_settings(&seed, None).unwrap_err().to_string(),
            "model.setting_unsupported: no seed Some(7)"
        );
    }
}
