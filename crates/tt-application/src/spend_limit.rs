//! The run's spend approval, the host's side and the ledger (docs/delegation.md, "Run spend
//! approval"): `limits.askAboveTotalCostUsd` of the run's root profile. Once the run's priced
//! spend reaches the limit, the run parks: every agent's next model call waits
//! (`engine::spend_gate`) until a person raises the limit or refuses.
//!
//! Parking and answering take the gate's turn (an async lock held across the journal append),
//! as approvals do: `spend_limit_reached` is journaled before anyone can answer, and an answer
//! (`spend_limit_answered`) is journaled before the host's call returns and counts once. The
//! spend counted here is the journal's: a resumed or branched run starts from the figures its
//! journal holds ([`JournaledSpend`]), and replayed answers are not counted again.

use serde::{Deserialize, Serialize};
use std::sync::{Mutex as StdMutex, MutexGuard, PoisonError};
use tokio::sync::{Mutex, watch};
use tt_domain::cost::Usd;
use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, EventLevel, RunEventType};
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId};

use crate::error::{ApplicationError, ApplicationResult};
use crate::events::EventSink;

/// A run parked at its spend limit, as `pending_spend_limit` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSpendLimit {
    /// What the run's priced model calls cost so far, in US dollars.
    pub spent_usd: f64,
    /// The limit it reached.
    pub limit_usd: f64,
}

/// A person's answer to a parked run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum SpendLimitDecision {
    /// Go on until the run has spent `limitUsd` (above what it spent so far).
    Raise {
        #[serde(rename = "limitUsd")]
        limit_usd: f64,
    },
    /// End the run: its agents stop with `agent.run_spend_refused`.
    Refuse,
}

/// What a host sends: the decision and who made it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerSpendLimitRequest {
    #[serde(flatten)]
    pub decision: SpendLimitDecision,
    /// The host's id of whoever decided; `host` when absent.
    pub decided_by: Option<String>,
}

/// The answer recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendLimitReceipt {
    /// `raise` or `refuse`.
    pub decision: String,
    /// The limit in force after the answer.
    pub limit_usd: f64,
    pub spent_usd: f64,
    pub decided_by: String,
}

/// The spend approval's state as a run's journal left it: read on resume and on a branch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JournaledSpend {
    /// The priced spend of every `model_completed` and `context_compacted`.
    pub spent: Usd,
    /// The limit the last raise set, if any.
    pub raised: Option<Usd>,
    /// `spend_limit_reached` was journaled and not answered yet.
    pub parked: bool,
    /// The last answer refused.
    pub refused: bool,
}

impl JournaledSpend {
    /// Folds one journal event in.
    pub(crate) fn read(&mut self, event: &AgentRunEvent) {
        let usd = |key: &str| {
            event
                .payload
                .get(key)
                .and_then(serde_json::Value::as_f64)
                .and_then(Usd::from_dollars)
        };
        match event.event_type {
            RunEventType::ModelCompleted | RunEventType::ContextCompacted => {
                self.spent = self
                    .spent
                    .saturating_add(usd("costUsd").unwrap_or_default());
            }
            RunEventType::SpendLimitReached => self.parked = true,
            RunEventType::SpendLimitAnswered => {
                self.parked = false;
                match event.payload.get("decision").and_then(|d| d.as_str()) {
                    Some("raise") => self.raised = usd("limitUsd"),
                    _ => self.refused = true,
                }
            }
            _ => {}
        }
    }
}

/// What an agent about to call its model may do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SpendCheck {
    /// Under the limit (or none).
    Go,
    /// Parked: wait for an answer.
    Wait,
    /// A person refused: end with this error.
    Refused(ApplicationError),
}

#[derive(Debug, Default)]
struct State {
    configured: bool,
    limit: Option<Usd>,
    spent: Usd,
    parked: bool,
    /// The limit that was reached when a person refused.
    refused: Option<Usd>,
}

impl State {
    fn reached(&self) -> bool {
        self.limit.is_some_and(|limit| self.spent >= limit)
    }

    fn check(&self) -> SpendCheck {
        if let Some(limit) = self.refused {
            return SpendCheck::Refused(refused_error(self.spent, limit));
        }
        if self.parked || self.reached() {
            SpendCheck::Wait
        } else {
            SpendCheck::Go
        }
    }
}

/// One run's spend against its spend limit, and the answers given.
pub(crate) struct SpendLimit {
    /// Held by whoever parks the run or answers it, across its journal append.
    turn: Mutex<()>,
    state: StdMutex<State>,
    /// Bumped on every answer, so waiting agents look again.
    changed: watch::Sender<u64>,
}

impl Default for SpendLimit {
    fn default() -> Self {
        Self {
            turn: Mutex::new(()),
            state: StdMutex::new(State::default()),
            changed: watch::channel(0).0,
        }
    }
}

impl SpendLimit {
    /// Sets the limit of a new run (its root profile's `limits.askAboveTotalCostUsd`); the
    /// first setting (or a [`restore`](Self::restore)) stands.
    pub(crate) fn configure(&self, limit: Option<Usd>) {
        let mut state = self.lock();
        if !state.configured {
            state.configured = true;
            state.limit = limit;
        }
    }

    /// Takes up where the journal left off: its spend, the limit in force (the last raise,
    /// else `limit`), and whether the run was parked or refused.
    pub(crate) fn restore(&self, limit: Option<Usd>, journaled: JournaledSpend) {
        let mut state = self.lock();
        state.configured = true;
        state.spent = journaled.spent;
        state.limit = journaled.raised.or(limit);
        state.parked = journaled.parked;
        state.refused = journaled
            .refused
            .then(|| state.limit.unwrap_or(state.spent));
    }

    /// Counts a model answer's priced cost (not a replayed one: the journal counted it).
    pub(crate) fn add(&self, cost: Usd) {
        let mut state = self.lock();
        state.spent = state.spent.saturating_add(cost);
    }

    /// What an agent about to call its model may do now.
    pub(crate) fn check(&self) -> SpendCheck {
        self.lock().check()
    }

    /// Parks the run when its spend reached the limit and it is not parked yet, journaling
    /// `spend_limit_reached` (the agent `invocation_id` found it) in the gate's turn. Then
    /// what the agent may do.
    pub(crate) async fn park(
        &self,
        events: &EventSink,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> ApplicationResult<SpendCheck> {
        let _turn = self.turn.lock().await;
        let reached = {
            let state = self.lock();
            match state.check() {
                SpendCheck::Wait if !state.parked => state.limit.map(|limit| (state.spent, limit)),
                check => return Ok(check),
            }
        };
        if let Some((spent, limit)) = reached {
            let event = payload::SpendLimitReached {
                invocation_id: invocation_id.clone(),
                spent_usd: spent.dollars(),
                limit_usd: limit.dollars(),
            };
            events.record(run_id, EventLevel::Warn, &event).await?;
            self.lock().parked = true;
        }
        Ok(self.check())
    }

    /// Waits for the next answer (or any change) after `seen`.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The run parked at its limit, if it is.
    pub(crate) fn pending(&self) -> Option<PendingSpendLimit> {
        let state = self.lock();
        let limit = state
            .limit
            .filter(|_| state.parked && state.refused.is_none())?;
        Some(PendingSpendLimit {
            spent_usd: state.spent.dollars(),
            limit_usd: limit.dollars(),
        })
    }

    /// A person's answer: refused with `agent.spend_limit_not_reached` unless the run is
    /// parked, and with `agent.spend_limit_invalid` for a raise not above the spend (or a
    /// `decidedBy` that is blank or over 200 characters). Journaled before it returns.
    pub(crate) async fn answer(
        &self,
        events: &EventSink,
        run_id: &RunId,
        request: AnswerSpendLimitRequest,
    ) -> ApplicationResult<SpendLimitReceipt> {
        let _turn = self.turn.lock().await;
        let (spent, previous) = {
            let state = self.lock();
            match state
                .limit
                .filter(|_| state.parked && state.refused.is_none())
            {
                Some(limit) => (state.spent, limit),
                None => {
                    return Err(ApplicationError::fatal(
                        error_codes::AGENT_SPEND_LIMIT_NOT_REACHED,
                        format!("run {run_id} is not waiting at its spend limit"),
                    ));
                }
            }
        };
        let decided_by = match request.decided_by {
            Some(who) if who.trim().is_empty() || who.chars().count() > 200 => {
                return Err(invalid("decidedBy must be 1 to 200 characters"));
            }
            Some(who) => who,
            None => tt_domain::approval::DECIDED_BY_HOST.to_owned(),
        };
        let (decision, limit) = match request.decision {
            SpendLimitDecision::Raise { limit_usd } => {
                let limit = Usd::from_dollars(limit_usd)
                    .filter(|limit| *limit > spent)
                    .ok_or_else(|| {
                        invalid(format!(
                            "the new limit must be above what the run has spent ({spent})"
                        ))
                    })?;
                ("raise", limit)
            }
            SpendLimitDecision::Refuse => ("refuse", previous),
        };
        let answered = payload::SpendLimitAnswered {
            decision: decision.to_owned(),
            limit_usd: limit.dollars(),
            previous_limit_usd: previous.dollars(),
            spent_usd: spent.dollars(),
            decided_by: decided_by.clone(),
        };
        events.record(run_id, EventLevel::Info, &answered).await?;
        {
            let mut state = self.lock();
            state.parked = false;
            if decision == "raise" {
                state.limit = Some(limit);
            } else {
                state.refused = Some(previous);
            }
        }
        self.changed.send_modify(|seen| *seen += 1);
        Ok(SpendLimitReceipt {
            decision: decision.to_owned(),
            limit_usd: limit.dollars(),
            spent_usd: spent.dollars(),
            decided_by,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `agent.run_spend_refused`: the run's end when a person refused to raise its limit.
fn refused_error(spent: Usd, limit: Usd) -> ApplicationError {
    ApplicationError::fatal(
        error_codes::AGENT_RUN_SPEND_REFUSED,
        format!(
            "the run cost {spent}, reaching its spend limit of {limit} (limits.askAboveTotalCostUsd), and a person refused to raise it"
        ),
    )
}

fn invalid(message: impl Into<String>) -> ApplicationError {
    ApplicationError::fatal(error_codes::AGENT_SPEND_LIMIT_INVALID, message.into())
}
