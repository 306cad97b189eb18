//! Human approval of tool calls (docs/host-api.md, "Approving tool calls"): the profile's
//! policy (`tools.approval`), the decisions a host can give, and the approval id of a call.
//!
//! Pure rules only: the engine asks [`ApprovalPolicy::asks`] before a call starts, parks the
//! agent and journals the request; the host's answer is an [`ApprovalDecision`].

use crate::error_codes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::error::{DomainError, DomainResult};
use crate::tool::ToolName;
use crate::tool_model::{ToolFacts, ToolId, ToolPermission};
use crate::workspace::WorkspacePath;

/// The group name that stands for the tools that change the workspace or anything outside the
/// run (the chat, the host's data, an MCP server's): those whose facts say
/// [`ToolFacts::in_writes_group`].
pub const WRITES_GROUP: &str = "writes";

/// The built-in tools of the `writes` group.
pub fn write_tools() -> impl Iterator<Item = ToolName> {
    ToolName::ALL
        .into_iter()
        .filter(|tool| tool.facts().in_writes_group())
}

/// Whether a call of one tool waits for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalRule {
    /// Never asks (the default for every tool).
    Never,
    /// Asks for every call.
    Always,
    /// Asks only for a call whose `path` is outside these workspace roots (each a workspace
    /// path: `scratch`, `output/drafts`).
    Outside(Vec<String>),
    /// `agent.delegate` only: asks only for a delegation whose estimated cost is over this
    /// many US dollars, or unknown ([`DelegationEstimate`]).
    WhenEstimatedCostOverUsd(crate::cost::Usd),
}

/// What a delegation is expected to cost, shown in every approval request of
/// `agent.delegate` and compared by [`ApprovalRule::WhenEstimatedCostOverUsd`]
/// (docs/delegation.md, "Spend-aware approval"). A figure that needs a price the target's
/// model does not have is `unknown` (serialized as that string), never 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegationEstimate {
    /// The agent the task would go to.
    pub target_profile_id: String,
    /// Estimated input tokens of the task's first request (its system prompt, tools and brief,
    /// or, in fork mode, the delegating agent's request and the brief).
    pub first_request_tokens: u64,
    /// That request priced at the target's model's input price.
    #[serde(with = "usd_or_unknown")]
    pub first_request_usd: Option<f64>,
    /// The target's most rounds (`tools.maxRounds`, or the call's `budget.maxRounds`).
    pub max_rounds: u32,
    /// The task's token budget (the call's `budget.maxTokens`, else `delegation.maxTaskTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// The most the task may cost: `delegation.maxTaskCostUsd`, or its token budget priced at
    /// the dearer of the model's input and output prices, whichever is lower.
    #[serde(with = "usd_or_unknown")]
    pub budget_usd: Option<f64>,
    /// The estimate the approval rule compares: the first request's price times its most
    /// rounds, bounded by the budget's; the budget's alone when the first request's is unknown.
    #[serde(with = "usd_or_unknown")]
    pub estimated_usd: Option<f64>,
}

/// A dollar figure, or the string `unknown` for `None`.
mod usd_or_unknown {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    pub(super) fn serialize<S: Serializer>(usd: &Option<f64>, out: S) -> Result<S::Ok, S::Error> {
        match usd {
            Some(usd) => out.serialize_f64(*usd),
            None => out.serialize_str("unknown"),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        input: D,
    ) -> Result<Option<f64>, D::Error> {
        Ok(Value::deserialize(input)?.as_f64())
    }
}

/// `tools.approval`: tool (canonical name, or the group `writes`) to rule. A tool's own entry
/// wins over its group's.
pub type ApprovalPolicy = BTreeMap<String, ApprovalRule>;

/// Why a call waits, as the host sees it: the rule that asked.
///
/// The tool's own entry wins over its group's; with neither, a tool whose facts say
/// [`ToolPermission::Ask`] (an outside tool registered or allowed that way) always asks.
///
/// `estimated_usd` is a delegation's estimate (`None`: not known, or not made): a
/// cost rule asks when it is over the limit or unknown.
pub fn asks(
    policy: &ApprovalPolicy,
    tool: &ToolId,
    facts: &ToolFacts,
    path: Option<&WorkspacePath>,
    estimated_usd: Option<f64>,
) -> Option<String> {
    let Some((key, rule)) = rule_for(policy, tool, facts) else {
        return (facts.permission == ToolPermission::Ask)
            .then(|| format!("{tool} asks before every call"));
    };
    match rule {
        ApprovalRule::Never => None,
        ApprovalRule::Always => Some(format!("tools.approval.{key} is always")),
        ApprovalRule::WhenEstimatedCostOverUsd(limit) => match estimated_usd {
            Some(usd) if usd <= limit.dollars() => None,
            Some(usd) => Some(format!(
                "the estimated cost ${usd:.4} is over tools.approval.{key} ({limit})"
            )),
            None => Some(format!(
                "the estimated cost is unknown (tools.approval.{key} asks above {limit})"
            )),
        },
        ApprovalRule::Outside(roots) => {
            let inside = path.is_some_and(|path| {
                roots.iter().any(|root| {
                    WorkspacePath::parse(root).is_ok_and(|root| path.is_under_or_equal(&root))
                })
            });
            (!inside).then(|| match path {
                Some(path) => format!(
                    "{} is outside tools.approval.{key} ({})",
                    path.as_str(),
                    roots.join(", ")
                ),
                None => format!("the call names no path (tools.approval.{key} is outside)"),
            })
        }
    }
}

fn rule_for<'a>(
    policy: &'a ApprovalPolicy,
    tool: &ToolId,
    facts: &ToolFacts,
) -> Option<(&'a str, &'a ApprovalRule)> {
    if let Some((key, rule)) = policy.get_key_value(tool.canonical()) {
        return Some((key.as_str(), rule));
    }
    if facts.in_writes_group() {
        return policy
            .get_key_value(WRITES_GROUP)
            .map(|(key, rule)| (key.as_str(), rule));
    }
    None
}

/// Checks `tools.approval` (`agent.profile_approval_invalid`): every key is a built-in tool,
/// an outside tool's id (`host/…`, `mcp/…`) or `writes`, `task.return` included (it is added
/// to delegated agents); `outside` is only for tools that name a path, with at least one root,
/// each a usable workspace path.
pub fn validate_policy(policy: &ApprovalPolicy, timeout_ms: Option<u64>) -> DomainResult<()> {
    let invalid =
        |message: String| DomainError::new(error_codes::AGENT_PROFILE_APPROVAL_INVALID, message);
    for (key, rule) in policy {
        // Whether every tool the key stands for names a path (`None`: an outside tool).
        let names_paths: Vec<(String, bool)> = if key == WRITES_GROUP {
            write_tools()
                .map(|tool| (tool.canonical().to_owned(), tool.facts().names_path))
                .collect()
        } else {
            match ToolId::parse(key) {
                Ok(ToolId::Builtin(tool)) => vec![(key.clone(), tool.facts().names_path)],
                Ok(ToolId::External(_)) => vec![(key.clone(), false)],
                Err(_) => {
                    return Err(invalid(format!(
                        "tools.approval names `{key}`, which is neither a tool nor the group `{WRITES_GROUP}`"
                    )));
                }
            }
        };
        if matches!(rule, ApprovalRule::WhenEstimatedCostOverUsd(_))
            && key != ToolName::AgentDelegate.canonical()
        {
            return Err(invalid(format!(
                "tools.approval.{key}: `whenEstimatedCostOverUsd` is only for `agent.delegate`"
            )));
        }
        if let ApprovalRule::Outside(roots) = rule {
            if let Some((tool, _)) = names_paths.iter().find(|(_, path)| !path) {
                return Err(invalid(format!(
                    "tools.approval.{key}: `outside` needs a tool whose calls name a path; `{tool}` has none (use always or never)"
                )));
            }
            if roots.is_empty() {
                return Err(invalid(format!(
                    "tools.approval.{key}: `outside` needs at least one root"
                )));
            }
            for root in roots {
                WorkspacePath::parse(root)
                    .map_err(|err| invalid(format!("tools.approval.{key}: {}", err.message)))?;
            }
        }
    }
    if timeout_ms == Some(0) {
        return Err(invalid("tools.approvalTimeoutMs must be > 0".to_owned()));
    }
    Ok(())
}

/// What a person decided about one call.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "decision")]
pub enum ApprovalDecision {
    /// Run the call as the model asked.
    Approve,
    /// Run it with these arguments instead (checked like the model's).
    ApproveWithArguments { arguments: Value },
    /// Do not run it; the agent reads `message` as the call's error.
    Deny { message: Option<String> },
}

impl ApprovalDecision {
    /// `approve`, `approve_with_arguments` or `deny`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ApprovalDecision::Approve => "approve",
            ApprovalDecision::ApproveWithArguments { .. } => "approve_with_arguments",
            ApprovalDecision::Deny { .. } => "deny",
        }
    }
}

/// Most characters of a denial message.
pub const MAX_DENY_MESSAGE_CHARS: usize = 4_000;

/// Who decided when no host did: the profile's `tools.approvalTimeoutMs` ran out.
pub const DECIDED_BY_TIMEOUT: &str = "timeout";

/// Who decided when the host's answer names no one.
pub const DECIDED_BY_HOST: &str = "host";

/// The approval id of a call: `apr_` and the hex of its call file key (`call_<hex16>`), so the
/// same call asks under the same id again after a resume.
pub fn approval_id_for(call_file_key: &str) -> String {
    let hex = call_file_key.strip_prefix("call_").unwrap_or(call_file_key);
    format!("apr_{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(
        policy: &ApprovalPolicy,
        tool: ToolName,
        path: Option<&WorkspacePath>,
    ) -> Option<String> {
        asks(policy, &tool.into(), &tool.facts(), path, None)
    }

    fn policy(entries: &[(&str, ApprovalRule)]) -> ApprovalPolicy {
        entries
            .iter()
            .map(|(key, rule)| ((*key).to_owned(), rule.clone()))
            .collect()
    }

    fn path(raw: &str) -> WorkspacePath {
        WorkspacePath::parse(raw).unwrap()
    }

    #[test]
    fn a_tool_rule_wins_over_its_group_and_other_tools_never_ask() {
        let policy = policy(&[
            (WRITES_GROUP, ApprovalRule::Always),
            ("workspace.commit", ApprovalRule::Never),
        ]);
        let write = path("output/main.md");
        assert!(ask(&policy, ToolName::WorkspaceWriteFile, Some(&write)).is_some());
        assert!(ask(&policy, ToolName::WorkspaceApplyPatch, Some(&write)).is_some());
        assert_eq!(ask(&policy, ToolName::WorkspaceCommit, Some(&write)), None);
        assert_eq!(
            ask(&policy, ToolName::WorkspaceReadFile, Some(&write)),
            None
        );
        assert_eq!(
            ask(&ApprovalPolicy::new(), ToolName::AgentDelegate, None),
            None
        );
    }

    #[test]
    fn outside_asks_only_for_paths_outside_its_roots() {
        let policy = policy(&[(
            "workspace.write_file",
            ApprovalRule::Outside(vec!["scratch".into(), "output/drafts".into()]),
        )]);
        let tool = ToolName::WorkspaceWriteFile;
        assert_eq!(ask(&policy, tool, Some(&path("scratch/a.md"))), None);
        assert_eq!(ask(&policy, tool, Some(&path("output/drafts/b.md"))), None);
        let reason = ask(&policy, tool, Some(&path("output/main.md"))).unwrap();
        assert_eq!(
            reason,
            "output/main.md is outside tools.approval.workspace.write_file (scratch, output/drafts)"
        );
        assert!(ask(&policy, tool, Some(&path("scratchpad/x.md"))).is_some());
        assert!(ask(&policy, tool, None).is_some());
    }

    #[test]
    fn a_cost_rule_asks_above_its_limit_or_when_the_estimate_is_unknown() {
        let limit = crate::cost::Usd::from_dollars(0.5).unwrap();
        let policy = policy(&[(
            "agent.delegate",
            ApprovalRule::WhenEstimatedCostOverUsd(limit),
        )]);
        let tool = ToolName::AgentDelegate;
        let asks_at = |usd| asks(&policy, &tool.into(), &tool.facts(), None, usd);
        assert_eq!(asks_at(Some(0.4)), None);
        assert_eq!(asks_at(Some(0.5)), None);
        assert!(asks_at(Some(0.51)).unwrap().contains("$0.5100 is over"));
        assert!(asks_at(None).unwrap().contains("unknown"));
        let rule: ApprovalRule =
            serde_json::from_value(serde_json::json!({"whenEstimatedCostOverUsd": 0.5})).unwrap();
        assert_eq!(rule, ApprovalRule::WhenEstimatedCostOverUsd(limit));
        let elsewhere = self::policy(&[(
            "workspace.write_file",
            ApprovalRule::WhenEstimatedCostOverUsd(limit),
        )]);
        assert_eq!(
            validate_policy(&elsewhere, None).unwrap_err().code,
            "agent.profile_approval_invalid"
        );
        assert!(validate_policy(&policy, None).is_ok());
    }

    #[test]
    fn an_estimate_writes_unknown_for_a_missing_price_never_zero() {
        let estimate = DelegationEstimate {
            target_profile_id: "critic".into(),
            first_request_tokens: 1200,
            first_request_usd: None,
            max_rounds: 8,
            budget_tokens: None,
            budget_usd: Some(0.25),
            estimated_usd: None,
        };
        let value = serde_json::to_value(&estimate).unwrap();
        assert_eq!(value["firstRequestUsd"], "unknown");
        assert_eq!(value["budgetUsd"], 0.25);
        assert_eq!(value["estimatedUsd"], "unknown");
        assert_eq!(
            serde_json::from_value::<DelegationEstimate>(value).unwrap(),
            estimate
        );
    }

    #[test]
    fn invalid_policies_are_refused_with_one_code() {
        let cases = [
            policy(&[("workspace.nope", ApprovalRule::Always)]),
            policy(&[(
                "agent.delegate",
                ApprovalRule::Outside(vec!["scratch".into()]),
            )]),
            policy(&[("workspace.write_file", ApprovalRule::Outside(vec![]))]),
            policy(&[(
                "workspace.write_file",
                ApprovalRule::Outside(vec!["../up".into()]),
            )]),
        ];
        for case in cases {
            let err = validate_policy(&case, None).unwrap_err();
            assert_eq!(err.code, "agent.profile_approval_invalid", "{case:?}");
        }
        assert!(validate_policy(&ApprovalPolicy::new(), Some(0)).is_err());
        let good = policy(&[
            (WRITES_GROUP, ApprovalRule::Outside(vec!["scratch".into()])),
            ("agent.delegate", ApprovalRule::Always),
            ("task.return", ApprovalRule::Never),
        ]);
        validate_policy(&good, Some(60_000)).unwrap();
    }

    #[test]
    fn decisions_read_and_write_their_wire_shape() {
        let deny: ApprovalDecision =
            serde_json::from_value(serde_json::json!({"decision": "deny", "message": "no"}))
                .unwrap();
        assert_eq!(
            deny,
            ApprovalDecision::Deny {
                message: Some("no".into())
            }
        );
        let edit: ApprovalDecision = serde_json::from_value(serde_json::json!({
            "decision": "approve_with_arguments", "arguments": {"path": "a.md"}
        }))
        .unwrap();
        assert_eq!(edit.as_str(), "approve_with_arguments");
        assert_eq!(
            serde_json::to_value(ApprovalDecision::Approve).unwrap(),
            serde_json::json!({"decision": "approve"})
        );
        assert_eq!(
            approval_id_for("call_0123456789abcdef"),
            "apr_0123456789abcdef"
        );
    }
}
