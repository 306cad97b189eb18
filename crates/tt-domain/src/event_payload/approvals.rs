//! Tool approvals: a call waits for a person, who approves, edits or denies it; and the run's
//! spend approval (`limits.askAboveTotalCostUsd`): the run parks until a person raises its
//! limit or refuses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::InvocationId;

/// `tool_approval_requested`: the call waits; its agent is `awaiting_approval`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalRequested {
    pub approval_id: String,
    pub invocation_id: InvocationId,
    pub round: u32,
    pub call_id: String,
    pub tool: String,
    /// The stored arguments (`tool-args/call_<hex16>.json`).
    pub arguments_ref: String,
    /// The rule that asked.
    pub reason: String,
    /// When the call is denied unanswered (`tools.approvalTimeoutMs`).
    pub timeout_ms: Option<u64>,
    /// For `agent.delegate`: what the delegation is expected to cost.
    pub estimate: Option<crate::approval::DelegationEstimate>,
}

/// `tool_approval_resolved`: the decision, who made it, and (edited) the arguments it runs with.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalResolved {
    pub approval_id: String,
    pub invocation_id: InvocationId,
    pub round: u32,
    pub call_id: String,
    pub tool: String,
    /// `approve`, `approve_with_arguments` or `deny`.
    pub decision: String,
    /// The host's id of whoever decided, or `timeout`.
    pub decided_by: String,
    /// A denial's message.
    pub message: Option<String>,
    /// The edited arguments of `approve_with_arguments`.
    pub arguments: Option<Value>,
}

/// `tool_approval_cancelled`: the wait ended without an answer (run cancel, task cancel,
/// deadline, budget); the call does not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalCancelled {
    pub approval_id: String,
    pub invocation_id: InvocationId,
    pub round: u32,
    pub call_id: String,
    pub tool: String,
    pub reason: String,
}

/// `spend_limit_reached`: the run's priced spend reached `limits.askAboveTotalCostUsd` (or
/// the limit a person raised it to); no agent of the run makes another model call until a
/// person answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendLimitReached {
    /// The agent whose next model call found the limit reached.
    pub invocation_id: InvocationId,
    /// What the run's priced model calls cost so far, in US dollars.
    pub spent_usd: f64,
    /// The limit in force.
    pub limit_usd: f64,
}

/// `spend_limit_answered`: a person raised the run's spend limit (the run goes on) or refused
/// (the run's agents end with `agent.run_spend_refused`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendLimitAnswered {
    /// `raise` or `refuse`.
    pub decision: String,
    /// The limit in force after the answer (the new one when raised).
    pub limit_usd: f64,
    /// The limit that was reached.
    pub previous_limit_usd: f64,
    /// The run's spend when the answer was given.
    pub spent_usd: f64,
    /// The host's id of whoever decided.
    pub decided_by: String,
}
