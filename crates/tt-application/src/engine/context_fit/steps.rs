//! Applying a context-window step to an agent's history (live, or replayed from the journal),
//! and the overflow error every step may end in. Its own file so that the fitting code
//! (`mod.rs`) and compaction (`compaction.rs`) share it without using one another.

use tt_domain::context_window::{self as window, WindowBudget};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_ports::ModelError;

use super::WindowState;
use crate::error::ApplicationError;
use crate::replay::ContextStep;

/// Applies a journaled step to the history, and to what the agent knows of its opening (a
/// request kept ahead of a summary joins it).
pub(crate) fn apply_step(
    messages: &mut Vec<AgentModelMessage>,
    window: &mut WindowState,
    step: &ContextStep,
) {
    match step {
        ContextStep::Trim(plan) => {
            window::apply_trim(messages, plan);
            // Messages that left before the request move it up (none do in practice: only
            // turns after the opening leave, and a request follows no turn of the agent's).
            if let Some(request) = window.request {
                let before = plan
                    .removed
                    .iter()
                    .filter(|index| **index < request)
                    .count();
                window.request = (!plan.removed.contains(&request)).then(|| request - before);
            }
        }
        ContextStep::Summary {
            first,
            count,
            summary,
            kept,
        } => {
            let end = first.saturating_add(*count).min(messages.len());
            let first = (*first).min(end);
            let kept = kept
                .filter(|kept| (first..end).contains(kept))
                .map(|kept| messages[kept].clone());
            let summary =
                AgentModelMessage::text(ModelRole::User, window::summary_message_text(summary));
            if kept.is_some() {
                window.opening = first + 1;
                window.request = None;
            }
            messages.splice(first..end, kept.into_iter().chain([summary]));
        }
    }
}

/// `model.context_overflow`, before anything is sent.
pub(super) fn overflow(estimate: u64, budget: &WindowBudget) -> ApplicationError {
    ApplicationError::Model(ModelError::ContextOverflow {
        message: format!(
            "the request needs about {estimate} tokens, but the model's window of {} tokens leaves {} for it after {} kept for the answer",
            budget.window_tokens, budget.input_budget_tokens, budget.output_reserve_tokens
        ),
        prompt_tokens: Some(estimate),
        window_tokens: Some(budget.window_tokens),
    })
}
