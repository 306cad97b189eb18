//! The delegation policy, free of any running agent: who may delegate to or hand off to whom
//! (`admit`, one typed `Denial` per reason the contract names), and the profile a delegated
//! agent runs with (`apply_nested_invocation_policy`). `agent.list`, `agent.delegate`,
//! `agent.handoff` and the delegated worker all decide through these.

use tt_domain::profile::ResolvedProfile;
use tt_domain::run::Presentation;
use tt_domain::task::AgentTaskBudget;
use tt_domain::tool::ToolName;

/// How the caller wants to use the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Delegate,
    Handoff,
}

/// Why the delegation policy refuses an operation: one variant per reason the contract names.
/// The tools turn it into their error (`agent.delegation_policy_denied`,
/// `agent.handoff_policy_denied`) with [`Denial::code`] as its `reason` (journaled as
/// `errorReason`) and, as the contract has it, the message's first words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denial {
    /// The caller's profile may not delegate (`delegation.canDelegate`).
    CallerCannotDelegate,
    /// The caller's profile may not hand off (`delegation.canHandoff`).
    CallerCannotHandoff,
    /// The target is not callable by other agents at all.
    TargetNotCallable,
    /// The target does not take delegated tasks.
    TargetNotSubagent,
    /// The target does not take handoffs.
    TargetNotHandoff,
    /// The target's allow-list of callers leaves the caller out.
    CallerNotAllowed,
    /// The target has no model configured.
    TargetModelUnconfigured,
}

impl Denial {
    /// The contract's code for this reason.
    pub(crate) fn code(self) -> tt_domain::error_codes::Code {
        use tt_domain::error_codes as codes;
        match self {
            Denial::CallerCannotDelegate => codes::AGENT_PROFILE_CANNOT_DELEGATE,
            Denial::CallerCannotHandoff => codes::AGENT_PROFILE_CANNOT_HANDOFF,
            Denial::TargetNotCallable => codes::AGENT_TARGET_NOT_CALLABLE,
            Denial::TargetNotSubagent => codes::AGENT_TARGET_NOT_SUBAGENT,
            Denial::TargetNotHandoff => codes::AGENT_TARGET_NOT_HANDOFF,
            Denial::CallerNotAllowed => codes::AGENT_TARGET_CALLER_DENIED,
            Denial::TargetModelUnconfigured => codes::AGENT_PROFILE_MODEL_REQUIRES_CONFIGURATION,
        }
    }
}

/// The caller's side of the policy: may this agent delegate, or hand off, at all?
pub(crate) fn admit_caller(caller: &ResolvedProfile, operation: Operation) -> Result<(), Denial> {
    let policy = &caller.definition.delegation;
    match operation {
        Operation::Delegate if !policy.can_delegate => Err(Denial::CallerCannotDelegate),
        Operation::Handoff if !policy.can_handoff => Err(Denial::CallerCannotHandoff),
        _ => Ok(()),
    }
}

/// The delegation policy, in one place: may `caller` delegate to (or hand off to) `target`?
/// The caller's side first, then the target's, in the order the contract checks them.
/// `agent.list` shows exactly the targets and operations this admits.
pub(crate) fn admit(
    caller: &ResolvedProfile,
    target: &ResolvedProfile,
    operation: Operation,
) -> Result<(), Denial> {
    admit_caller(caller, operation)?;
    let policy = &target.definition.delegation;
    let accepts = match operation {
        Operation::Delegate => policy.allow_as_subagent,
        Operation::Handoff => policy.allow_as_handoff_target,
    };
    if !policy.callable {
        Err(Denial::TargetNotCallable)
    } else if !accepts {
        Err(match operation {
            Operation::Delegate => Denial::TargetNotSubagent,
            Operation::Handoff => Denial::TargetNotHandoff,
        })
    } else if !policy.allows_caller(caller.id()) {
        Err(Denial::CallerNotAllowed)
    } else if crate::profiles::check_model_configured(target).is_err() {
        Err(Denial::TargetModelUnconfigured)
    } else {
        Ok(())
    }
}

/// The delegating tools a nested delegator keeps.
const NESTED_DELEGATION_TOOLS: [ToolName; 4] = [
    ToolName::AgentList,
    ToolName::AgentDelegate,
    ToolName::AgentAwait,
    ToolName::AgentCancelTask,
];

/// The target profile as a delegated agent runs it: background presentation, no parent-only
/// tools (commit, finish, handoff and the agent tools), and the task's downward budget; with
/// `may_delegate` (the profile allows nested delegation and the run's depth has room) the
/// agent keeps its delegation tools.
pub(crate) fn apply_nested_invocation_policy(
    profile: &ResolvedProfile,
    budget: Option<AgentTaskBudget>,
    may_delegate: bool,
) -> ResolvedProfile {
    let mut profile = profile.clone();
    let definition = &mut profile.definition;
    definition.run.presentation = Presentation::Background;
    definition.tools.allow.retain(|name| {
        ToolName::from_canonical(name).is_none_or(|tool| {
            !tool.facts().parent_only || (may_delegate && NESTED_DELEGATION_TOOLS.contains(&tool))
        })
    });
    if let Some(budget) = budget {
        if let Some(rounds) = budget.max_rounds {
            definition.tools.max_rounds = rounds.min(definition.tools.max_rounds);
        }
        if let Some(calls) = budget.max_tool_calls {
            definition.tools.max_calls_per_run = calls.min(definition.tools.max_calls_per_run);
        }
    }
    profile
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::ids::ProfileId;
    use tt_domain::profile::{
        AgentProfileDefinition, ModelMode, ProfileSource, default_writer_definition,
        resolve_profile,
    };

    fn profile(id: &str, edit: impl FnOnce(&mut AgentProfileDefinition)) -> ResolvedProfile {
        let mut definition = default_writer_definition();
        definition.id = ProfileId::parse(id).unwrap();
        edit(&mut definition);
        ResolvedProfile {
            definition,
            ..resolve_profile(default_writer_definition(), ProfileSource::built_in()).unwrap()
        }
    }

    #[test]
    fn admit_names_the_first_rule_that_refuses() {
        let lead = profile("lead", |d| {
            d.delegation.can_delegate = true;
            d.delegation.can_handoff = true;
        });
        let open = profile("helper", |d| {
            d.delegation.callable = true;
            d.delegation.allow_as_subagent = true;
            d.delegation.allow_as_handoff_target = true;
            d.delegation.allowed_callers = vec!["*".to_owned()];
        });
        assert_eq!(admit(&lead, &open, Operation::Delegate), Ok(()));
        assert_eq!(admit(&lead, &open, Operation::Handoff), Ok(()));

        let quiet = profile("quiet", |d| {
            d.delegation.can_delegate = false;
            d.delegation.can_handoff = false;
        });
        let cases = [
            (
                admit(&quiet, &open, Operation::Delegate),
                Denial::CallerCannotDelegate,
            ),
            (
                admit(&quiet, &open, Operation::Handoff),
                Denial::CallerCannotHandoff,
            ),
            (
                admit(
                    &lead,
                    &profile("h", |d| d.delegation.callable = false),
                    Operation::Delegate,
                ),
                Denial::TargetNotCallable,
            ),
            (
                admit(
                    &lead,
                    &profile("h", |d| {
                        d.delegation = open.definition.delegation.clone();
                        d.delegation.allow_as_subagent = false;
                    }),
                    Operation::Delegate,
                ),
                Denial::TargetNotSubagent,
            ),
            (
                admit(
                    &lead,
                    &profile("h", |d| {
                        d.delegation = open.definition.delegation.clone();
                        d.delegation.allow_as_handoff_target = false;
                    }),
                    Operation::Handoff,
                ),
                Denial::TargetNotHandoff,
            ),
            (
                admit(
                    &lead,
                    &profile("h", |d| {
                        d.delegation = open.definition.delegation.clone();
                        d.delegation.allowed_callers = vec!["someone-else".to_owned()];
                    }),
                    Operation::Delegate,
                ),
                Denial::CallerNotAllowed,
            ),
            (
                admit(
                    &lead,
                    &profile("h", |d| {
                        d.delegation = open.definition.delegation.clone();
                        d.model.mode = ModelMode::RequiresConfiguration;
                    }),
                    Operation::Delegate,
                ),
                Denial::TargetModelUnconfigured,
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, Err(want), "{}", want.code());
        }
    }
}
