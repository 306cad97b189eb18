//! What an `agent.delegate` call is expected to cost (docs/delegation.md, "Spend-aware
//! approval"): the target's first request (its system prompt, tools and brief; in fork mode,
//! the delegating agent's request and the brief) estimated in tokens, its most rounds and its
//! budget, priced on the target's model with the runtime's prices. Figures that need a price
//! the model does not have are unknown, never 0.

use tt_domain::approval::DelegationEstimate;
use tt_domain::brief::StoredBrief;
use tt_domain::context_window::{request_tokens, tools_tokens};
use tt_domain::ids::InvocationId;
use tt_domain::invocation::ExitPolicy;
use tt_domain::model::{AgentModelMessage, ModelRole, ModelUsage};
use tt_domain::run::Presentation;
use tt_domain::task::TaskContinuation;
use tt_domain::tool::AgentToolCall;

use crate::delegation::args::parse_delegate_args;
use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;

/// The estimate of `call`, an `agent.delegate` of `inv`; `None` when its arguments or its
/// target cannot be read (the call's own checks say why when it runs).
pub(crate) async fn estimate(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    call: &AgentToolCall,
) -> Option<DelegationEstimate> {
    let args = parse_delegate_args(&call.arguments).ok()?;
    let target = crate::profiles::resolve(ctx.services.profiles.as_ref(), Some(&args.agent_id))
        .await
        .ok()?;
    let price = crate::engine::binding::bind_model(ctx, &target, None)
        .await
        .ok()
        .and_then(|(binding, _, _)| binding.price);
    let brief = crate::delegation::rendering::render_stored_brief(
        &StoredBrief::Task(args.task.clone()),
        TaskContinuation::ReturnToParent,
    );
    let brief_tokens = request_tokens(&[AgentModelMessage::text(ModelRole::User, brief)], 0);
    let first_request_tokens = match inv.sent_messages.as_deref().filter(|_| args.fork) {
        Some(sent) => {
            let tools = inv
                .sent_tools
                .clone()
                .unwrap_or_else(|| inv.request_tools());
            request_tokens(sent, tools_tokens(&tools)) + brief_tokens
        }
        None => {
            // Its outside tools' specs are not known before it starts: its built-ins count.
            let mut offered = target.clone();
            offered
                .definition
                .tools
                .allow
                .retain(|tool| !tool.contains('/'));
            let snapshot = crate::registry::build_tool_snapshot(
                &offered,
                &InvocationId::from_raw("estimate"),
                ExitPolicy::TaskReturnRequired,
                Presentation::Background,
                &[],
            )
            .ok()?;
            let system = crate::prompt::agent_system_prompt(&target, &snapshot);
            request_tokens(
                &[AgentModelMessage::text(ModelRole::System, system)],
                tools_tokens(&snapshot.tools),
            ) + brief_tokens
        }
    };
    let max_rounds = args
        .budget
        .and_then(|budget| budget.max_rounds)
        .unwrap_or(target.definition.tools.max_rounds);
    let budget_tokens = args
        .budget
        .and_then(|budget| budget.max_tokens)
        .or(target.definition.delegation.max_task_tokens);
    let first_request_usd = price.map(|price| {
        price.cost_usd(&ModelUsage {
            input_tokens: first_request_tokens,
            ..ModelUsage::default()
        })
    });
    let tokens_usd = price
        .zip(budget_tokens)
        .map(|(price, tokens)| tokens as f64 * price.input.max(price.output) / 1_000_000.0);
    let cap_usd = target
        .definition
        .delegation
        .max_task_cost_usd
        .map(|usd| usd.dollars());
    let budget_usd = match (tokens_usd, cap_usd) {
        (Some(tokens), Some(cap)) => Some(tokens.min(cap)),
        (tokens, cap) => tokens.or(cap),
    };
    // Without a price its spend is unknown whatever its cap says (cost budgets count priced
    // calls only).
    let estimated_usd = first_request_usd.map(|usd| {
        let by_rounds = usd * f64::from(max_rounds);
        budget_usd.map_or(by_rounds, |budget| by_rounds.min(budget))
    });
    Some(DelegationEstimate {
        target_profile_id: args.agent_id,
        first_request_tokens,
        first_request_usd,
        max_rounds,
        budget_tokens,
        budget_usd,
        estimated_usd,
    })
}
