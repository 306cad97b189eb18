//! Tool approvals, the host's side: one broker per active run between the agents parked on a
//! call (`engine::approval_gate`) and the host's answers (`AgentRunService::resolve_tool_approval`).
//!
//! Deciding takes the broker's turn (an async lock held across the journal append), so a call
//! is answered at most once: the first of the host's answer, the profile's timeout and the
//! agent's cancel to take the turn journals `tool_approval_resolved` or
//! `tool_approval_cancelled`; the others find it gone. Listing needs no turn (a plain lock), so
//! hosts can read the parked calls synchronously.
//! An answer is journaled before the host's call returns, so a crash after it cannot lose it:
//! resume runs the call with the journaled decision instead of asking again.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex as StdMutex, MutexGuard, PoisonError};
use tokio::sync::{Mutex, oneshot};
use tt_domain::approval::{ApprovalDecision, MAX_DENY_MESSAGE_CHARS};
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, ProfileId, RunId};

use crate::error::{ApplicationError, ApplicationResult};
use crate::events::EventSink;

/// The decider recorded when the host names none.
pub const DEFAULT_DECIDED_BY: &str = tt_domain::approval::DECIDED_BY_HOST;

/// A call waiting for a person, as `pending_approvals` lists it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolApproval {
    pub approval_id: String,
    pub invocation_id: InvocationId,
    pub profile_id: ProfileId,
    pub round: u32,
    pub call_id: String,
    /// The tool's canonical name.
    pub tool: String,
    /// The arguments the model sent.
    pub arguments: Value,
    /// The rule that asked.
    pub reason: String,
    /// When the call is denied unanswered (`tools.approvalTimeoutMs`).
    pub timeout_ms: Option<u64>,
    /// For `agent.delegate`: what the delegation is expected to cost (docs/delegation.md,
    /// "Spend-aware approval").
    pub estimate: Option<tt_domain::approval::DelegationEstimate>,
}

/// A host's answer: the decision and who made it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveToolApprovalRequest {
    #[serde(flatten)]
    pub decision: ApprovalDecision,
    /// The host's id of whoever decided (a user id, "inspector"); `host` when absent.
    pub decided_by: Option<String>,
}

impl ResolveToolApprovalRequest {
    pub fn new(decision: ApprovalDecision) -> Self {
        Self {
            decision,
            decided_by: None,
        }
    }

    pub fn decided_by(mut self, who: impl Into<String>) -> Self {
        self.decided_by = Some(who.into());
        self
    }
}

/// The answer recorded for an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalReceipt {
    pub approval_id: String,
    /// `approve`, `approve_with_arguments` or `deny`: the recorded decision, which is the
    /// first answer's when `already_resolved`.
    pub decision: String,
    pub decided_by: String,
    /// The approval had been answered before (this answer changed nothing).
    pub already_resolved: bool,
}

/// What a parked call receives.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApprovalAnswer {
    pub decision: ApprovalDecision,
    pub decided_by: String,
}

/// How the arguments of an edit are checked before it is accepted.
#[derive(Debug, Clone)]
pub(crate) struct ArgumentCheck {
    /// The tool's input schema as the agent was offered it.
    pub input_schema: Value,
    /// `limits.maxToolArgumentBytes`.
    pub max_bytes: u64,
}

struct Waiting {
    order: u64,
    pending: PendingToolApproval,
    check: ArgumentCheck,
    reply: oneshot::Sender<ApprovalAnswer>,
}

#[derive(Default)]
struct State {
    next_order: u64,
    waiting: HashMap<String, Waiting>,
    /// Decision and decider of every approval answered in this process.
    resolved: HashMap<String, (String, String)>,
}

/// One run's parked calls and the answers given to them.
#[derive(Default)]
pub(crate) struct ApprovalBroker {
    /// Held by whoever decides a call, across its journal append.
    turn: Mutex<()>,
    state: StdMutex<State>,
}

impl ApprovalBroker {
    /// Parks a call and journals `requested`, in the broker's turn: a host that reacts to the
    /// event finds the call waiting, and no answer can be journaled before the request. The
    /// receiver gets the answer.
    pub(crate) async fn ask(
        &self,
        events: &EventSink,
        run_id: &RunId,
        pending: PendingToolApproval,
        check: ArgumentCheck,
        requested: &payload::ToolApprovalRequested,
    ) -> ApplicationResult<oneshot::Receiver<ApprovalAnswer>> {
        let _turn = self.turn.lock().await;
        let answer = self.park(pending, check);
        if let Err(err) = events.record(run_id, EventLevel::Info, requested).await {
            // Nobody was told it waits.
            self.lock().waiting.remove(&requested.approval_id);
            return Err(err);
        }
        Ok(answer)
    }

    fn park(
        &self,
        pending: PendingToolApproval,
        check: ArgumentCheck,
    ) -> oneshot::Receiver<ApprovalAnswer> {
        let (reply, answer) = oneshot::channel();
        let mut state = self.lock();
        state.next_order += 1;
        let order = state.next_order;
        state.waiting.insert(
            pending.approval_id.clone(),
            Waiting {
                order,
                pending,
                check,
                reply,
            },
        );
        answer
    }

    /// Notes an answer journaled before a resume, so answering it again gives it back.
    pub(crate) fn remember(&self, approval_id: &str, answer: &ApprovalAnswer) {
        self.lock().resolved.insert(
            approval_id.to_owned(),
            (
                answer.decision.as_str().to_owned(),
                answer.decided_by.clone(),
            ),
        );
    }

    /// The parked calls, oldest first.
    pub(crate) fn pending(&self) -> Vec<PendingToolApproval> {
        let state = self.lock();
        let mut waiting: Vec<&Waiting> = state.waiting.values().collect();
        waiting.sort_by_key(|waiting| waiting.order);
        waiting
            .into_iter()
            .map(|waiting| waiting.pending.clone())
            .collect()
    }

    /// The host's answer. Refused, with the call still parked, when the approval is unknown
    /// (`agent.approval_not_found`) or the answer is unusable (`agent.approval_invalid`). An
    /// approval answered before gives its first answer back (`already_resolved`).
    pub(crate) async fn resolve(
        &self,
        events: &EventSink,
        run_id: &RunId,
        approval_id: &str,
        request: ResolveToolApprovalRequest,
    ) -> ApplicationResult<ToolApprovalReceipt> {
        let _turn = self.turn.lock().await;
        let check = {
            let state = self.lock();
            if let Some((decision, decided_by)) = state.resolved.get(approval_id) {
                return Ok(ToolApprovalReceipt {
                    approval_id: approval_id.to_owned(),
                    decision: decision.clone(),
                    decided_by: decided_by.clone(),
                    already_resolved: true,
                });
            }
            let Some(waiting) = state.waiting.get(approval_id) else {
                return Err(not_found(run_id, approval_id));
            };
            waiting.check.clone()
        };
        let decided_by = match request.decided_by {
            Some(who) if who.trim().is_empty() || who.chars().count() > 200 => {
                return Err(invalid("decidedBy must be 1 to 200 characters"));
            }
            Some(who) => who,
            None => DEFAULT_DECIDED_BY.to_owned(),
        };
        check_decision(&request.decision, &check)?;
        let answer = ApprovalAnswer {
            decision: request.decision,
            decided_by,
        };
        self.record_resolution(events, run_id, approval_id, answer)
            .await
    }

    /// Ends a wait with the profile's timeout: a denial decided by `timeout`. `None` when the
    /// call was answered or withdrawn first.
    pub(crate) async fn time_out(
        &self,
        events: &EventSink,
        run_id: &RunId,
        approval_id: &str,
    ) -> ApplicationResult<Option<ApprovalAnswer>> {
        let _turn = self.turn.lock().await;
        if !self.lock().waiting.contains_key(approval_id) {
            return Ok(None);
        }
        let answer = ApprovalAnswer {
            decision: ApprovalDecision::Deny { message: None },
            decided_by: tt_domain::approval::DECIDED_BY_TIMEOUT.to_owned(),
        };
        self.record_resolution(events, run_id, approval_id, answer.clone())
            .await?;
        Ok(Some(answer))
    }

    /// Withdraws a parked call whose agent is stopping, journaling `tool_approval_cancelled`
    /// with `reason`. False when it had been answered first.
    pub(crate) async fn withdraw(
        &self,
        events: &EventSink,
        run_id: &RunId,
        approval_id: &str,
        reason: &str,
    ) -> ApplicationResult<bool> {
        let _turn = self.turn.lock().await;
        let Some(waiting) = self.lock().waiting.remove(approval_id) else {
            return Ok(false);
        };
        let pending = waiting.pending;
        let cancelled = payload::ToolApprovalCancelled {
            approval_id: pending.approval_id,
            invocation_id: pending.invocation_id,
            round: pending.round,
            call_id: pending.call_id,
            tool: pending.tool,
            reason: reason.to_owned(),
        };
        events.record(run_id, EventLevel::Warn, &cancelled).await?;
        Ok(true)
    }

    /// Journals the answer, then hands it to the parked call. The caller holds the turn.
    async fn record_resolution(
        &self,
        events: &EventSink,
        run_id: &RunId,
        approval_id: &str,
        answer: ApprovalAnswer,
    ) -> ApplicationResult<ToolApprovalReceipt> {
        let pending = match self.lock().waiting.get(approval_id) {
            Some(waiting) => waiting.pending.clone(),
            None => return Err(not_found(run_id, approval_id)),
        };
        let (message, arguments) = match &answer.decision {
            ApprovalDecision::Approve => (None, None),
            ApprovalDecision::ApproveWithArguments { arguments } => (None, Some(arguments.clone())),
            ApprovalDecision::Deny { message } => (message.clone(), None),
        };
        let resolved = payload::ToolApprovalResolved {
            approval_id: approval_id.to_owned(),
            invocation_id: pending.invocation_id,
            round: pending.round,
            call_id: pending.call_id,
            tool: pending.tool,
            decision: answer.decision.as_str().to_owned(),
            decided_by: answer.decided_by.clone(),
            message,
            arguments,
        };
        events.record(run_id, EventLevel::Info, &resolved).await?;
        let receipt = ToolApprovalReceipt {
            approval_id: approval_id.to_owned(),
            decision: answer.decision.as_str().to_owned(),
            decided_by: answer.decided_by.clone(),
            already_resolved: false,
        };
        let mut state = self.lock();
        state.resolved.insert(
            approval_id.to_owned(),
            (receipt.decision.clone(), receipt.decided_by.clone()),
        );
        // Only a turn holder removes a parked call, so it is still there.
        if let Some(waiting) = state.waiting.remove(approval_id) {
            // A call whose agent stopped meanwhile has dropped its receiver; the journaled
            // answer then applies when the run is resumed.
            let _ = waiting.reply.send(answer);
        }
        Ok(receipt)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn not_found(run_id: &RunId, approval_id: &str) -> ApplicationError {
    ApplicationError::fatal(
        error_codes::AGENT_APPROVAL_NOT_FOUND,
        format!("run {run_id} has no tool call waiting for approval {approval_id}"),
    )
}

fn invalid(message: impl Into<String>) -> ApplicationError {
    ApplicationError::fatal(error_codes::AGENT_APPROVAL_INVALID, message)
}

/// Checks a decision before it is accepted: a denial's message length, and an edit's
/// arguments against the tool's whole schema (a built-in tool's every argument, even one a
/// compact spec does not show; `agent.approval_invalid`).
/// What the schema cannot say (a path the agent may not write) fails when the call runs, and
/// the agent reads that error as it would its own.
fn check_decision(decision: &ApprovalDecision, check: &ArgumentCheck) -> ApplicationResult<()> {
    match decision {
        ApprovalDecision::Approve => Ok(()),
        ApprovalDecision::Deny { message } => match message {
            Some(message) if message.chars().count() > MAX_DENY_MESSAGE_CHARS => Err(invalid(
                format!("a denial message is at most {MAX_DENY_MESSAGE_CHARS} characters"),
            )),
            _ => Ok(()),
        },
        ApprovalDecision::ApproveWithArguments { arguments } => {
            let bytes = arguments.to_string().len() as u64;
            if bytes > check.max_bytes {
                return Err(invalid(format!(
                    "the edited arguments are {bytes} bytes; at most {} are accepted",
                    check.max_bytes
                )));
            }
            schema_errors(&check.input_schema, arguments).map_err(invalid)
        }
    }
}

/// The first way `value` breaks `schema` (an object schema: `required`, `properties` with
/// their `type`, `additionalProperties: false`), or `Ok`.
pub(crate) fn schema_errors(schema: &Value, value: &Value) -> Result<(), String> {
    let Value::Object(fields) = value else {
        return Err("the edited arguments must be a JSON object".to_owned());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                return Err(format!("the edited arguments lack `{name}`"));
            }
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (name, field) in fields {
        let Some(property) = properties.and_then(|properties| properties.get(name)) else {
            if closed {
                return Err(format!("the tool takes no argument `{name}`"));
            }
            continue;
        };
        if let Some(expected) = property.get("type") {
            let types: Vec<&str> = match expected {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            if !types.iter().any(|kind| has_type(field, kind)) {
                return Err(format!("`{name}` must be {}", types.join(" or ")));
            }
        }
    }
    Ok(())
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edited_arguments_are_checked_against_the_offered_schema() {
        let schema = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                           "mode": {"type": "string"}, "n": {"type": ["integer", "null"]}},
            "required": ["path", "content"],
            "additionalProperties": false
        });
        assert_eq!(
            schema_errors(&schema, &json!({"path": "a.md", "content": "x", "n": null})),
            Ok(())
        );
        assert_eq!(
            schema_errors(&schema, &json!({"path": "a.md"})).unwrap_err(),
            "the edited arguments lack `content`"
        );
        assert_eq!(
            schema_errors(&schema, &json!({"path": 3, "content": "x"})).unwrap_err(),
            "`path` must be string"
        );
        assert_eq!(
            schema_errors(&schema, &json!({"path": "a", "content": "x", "extra": 1})).unwrap_err(),
            "the tool takes no argument `extra`"
        );
        assert!(schema_errors(&schema, &json!(["a"])).is_err());
    }

    #[test]
    fn a_denial_message_over_the_limit_is_refused() {
        let check = ArgumentCheck {
            input_schema: json!({"type": "object"}),
            max_bytes: 10,
        };
        let long = ApprovalDecision::Deny {
            message: Some("x".repeat(MAX_DENY_MESSAGE_CHARS + 1)),
        };
        assert_eq!(
            check_decision(&long, &check).unwrap_err().code(),
            "agent.approval_invalid"
        );
        let big = ApprovalDecision::ApproveWithArguments {
            arguments: json!({"content": "far more than ten bytes"}),
        };
        assert_eq!(
            check_decision(&big, &check).unwrap_err().code(),
            "agent.approval_invalid"
        );
    }
}
