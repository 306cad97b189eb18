//! Fitting an agent's next request into its model's context window (docs/providers.md,
//! "Context window and compaction").
//!
//! Before an agent's first request, its opening (system prompt, tools and request) must fit the
//! window with room for the answer and a summary, or it fails at once
//! (`model.context_window_too_small`, [`check_opening`]). Before each live model call whose
//! model has a known window, the request is estimated (`tt_domain::context_window`, calibrated
//! by the provider's own count of the previous request). When it would not leave the answer
//! its reserve (the output limit), the turns the agent moved past (settled slips, plain-text
//! answers and their reminders) leave the history, and older tool results, large tool-call
//! arguments and saved plain-text answers become stubs (`context_trimmed`); if that is not
//! enough, the profile's `context.compaction` decides: `summarize` asks the model once to
//! summarize everything after the opening (an earlier summary included), which one message
//! then replaces (`context_compacted`, see [`compaction`]); `none` fails before anything is sent
//! with `model.context_overflow`. A provider that refuses a request as too large teaches the
//! agent the real figures, and the step runs once more.
//!
//! Every step is journaled with what it changed, and a resumed agent applies the journaled
//! steps of a round ([`apply_step`]) instead of deciding again, so its history comes out the
//! same, byte for byte.

use tt_domain::context_window::{self as window, WindowBudget, request_tokens};
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::model::AgentModelMessage;
use tt_domain::text::sha256_hex;
use tt_domain::tool::ToolName;
use tt_domain::workspace::{WorkspacePath, WriteGuard};

use crate::engine::context::RunContext;
use crate::engine::invocation::InvocationRuntime;
pub(crate) use crate::engine::window_state::WindowState;
use crate::error::ApplicationResult;
pub(crate) use crate::replay::ContextStep;
pub(crate) use compaction::check_opening;
pub(crate) use steps::apply_step;
use steps::overflow;

mod compaction;
mod steps;

/// `result` as the agent's history keeps it: whole, or its head and tail when it is larger
/// than the profile's `context.maxToolResultTokens` (unset: a quarter of a known window). The
/// stored record keeps the whole result; the whole output of a tool other than `read_file`
/// is also saved to `scratch/tool-output/` when the agent can read `scratch`, and the cut
/// says where (`tool_output_saved`). The cut depends only on the profile, the configured
/// window and the result, so a resumed agent bounds its replayed results the same way; a
/// replayed result's file is written again only if it went missing.
pub(crate) async fn history_result(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    result: tt_domain::tool::AgentToolResult,
    replaying: bool,
) -> ApplicationResult<tt_domain::tool::AgentToolResult> {
    let Some(limit) = result_limit(inv).filter(|limit| window::exceeds(&result, *limit)) else {
        return Ok(result);
    };
    let saved = output_path(inv, &result);
    if let Some(path) = &saved {
        save_output(ctx, inv, round, &result, path, replaying).await?;
    }
    Ok(window::bound_result(
        &result,
        limit,
        saved.as_ref().map(WorkspacePath::as_str),
    ))
}

/// The most tokens of a tool result the agent's history keeps, if bounded.
fn result_limit(inv: &InvocationRuntime) -> Option<u64> {
    inv.profile
        .definition
        .context
        .max_tool_result_tokens
        .or(inv.model.context_window_tokens.map(|window| window / 4))
}

/// Whether [`history_result`] writes `result`'s whole output to the workspace.
pub(crate) fn saves_output(
    inv: &InvocationRuntime,
    result: &tt_domain::tool::AgentToolResult,
) -> bool {
    result_limit(inv).is_some_and(|limit| window::exceeds(result, limit))
        && output_path(inv, result).is_some()
}

/// Where the whole output of `result` is saved: `scratch/tool-output/<tool>-<sha256 prefix>.md`
/// (named by its content, so two agents never collide), when the agent can read `scratch`; never
/// for `read_file`, whose text is a file already.
fn output_path(
    inv: &InvocationRuntime,
    result: &tt_domain::tool::AgentToolResult,
) -> Option<WorkspacePath> {
    let tool = ToolName::from_any(&result.name)?;
    if tool == ToolName::WorkspaceReadFile {
        return None;
    }
    let sha = sha256_hex(result.content.as_bytes());
    let path = WorkspacePath::parse(&format!(
        "scratch/tool-output/{}-{}.md",
        tool.model_alias(),
        &sha[..12]
    ))
    .ok()?;
    inv.policy.is_visible(&path).then_some(path)
}

async fn save_output(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    result: &tt_domain::tool::AgentToolResult,
    path: &WorkspacePath,
    replaying: bool,
) -> ApplicationResult<()> {
    let workspace = &ctx.services.workspace;
    if replaying && workspace.read(&ctx.run_id, path).await.is_ok() {
        return Ok(());
    }
    workspace
        .write(&ctx.run_id, path, &result.content, &WriteGuard::None)
        .await?;
    if replaying {
        return Ok(());
    }
    let saved = payload::ToolOutputSaved {
        invocation_id: inv.invocation.id.clone(),
        round,
        call_id: result.call_id.clone(),
        tool: result.name.clone(),
        path: path.to_string(),
        chars: result.content.chars().count() as u64,
        sha256: sha256_hex(result.content.as_bytes()),
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &saved)
        .await?;
    Ok(())
}

/// Why the history is fitted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FitTrigger {
    /// The estimate is over the budget.
    Estimate,
    /// The provider refused the last request as too large.
    ProviderRefused,
}

/// Fits `messages` into the window before round `round`'s live request, journaling what it
/// changed, and returns the `max_output_tokens` the request may ask for: `configured_output`,
/// lowered when the window leaves less room.
pub(crate) async fn fit_request(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    messages: &mut Vec<AgentModelMessage>,
    trigger: FitTrigger,
    configured_output: Option<u32>,
) -> ApplicationResult<Option<u32>> {
    let Some(window_tokens) = inv
        .window
        .learned_window
        .or(inv.model.context_window_tokens)
    else {
        // No window: nothing to measure (a refusal measures the request it refused).
        inv.window.last_estimate = None;
        return Ok(configured_output);
    };
    let tools = window::tools_tokens(&inv.request_tools());
    let budget = WindowBudget::new(window_tokens, configured_output);
    let calibration = inv.window.calibration;
    let estimate =
        |messages: &[AgentModelMessage]| calibration.apply(request_tokens(messages, tools));
    let before = estimate(messages);
    if before > budget.input_budget_tokens || trigger == FitTrigger::ProviderRefused {
        let target = calibration.unapply(budget.trim_target_tokens());
        let plan = window::plan_trim(messages, inv.window.opening, tools, target);
        if !plan.is_empty() {
            let to_u64 = |indices: &[usize]| indices.iter().map(|index| *index as u64).collect();
            let stubbed_messages = to_u64(&plan.stubbed);
            let removed_messages = to_u64(&plan.removed);
            apply_step(messages, &mut inv.window, &ContextStep::Trim(plan));
            let trimmed = payload::ContextTrimmed {
                invocation_id: inv.invocation.id.clone(),
                round,
                stubbed_messages,
                removed_messages,
                estimated_tokens_before: before,
                estimated_tokens_after: estimate(messages),
                window_tokens,
                input_budget_tokens: budget.input_budget_tokens,
                trigger: match trigger {
                    FitTrigger::Estimate => "estimate",
                    FitTrigger::ProviderRefused => "provider_refused",
                }
                .to_owned(),
            };
            ctx.events
                .record(&ctx.run_id, EventLevel::Info, &trimmed)
                .await?;
        }
    }
    if estimate(messages) > budget.input_budget_tokens {
        compaction::compact(ctx, inv, round, messages, budget, tools).await?;
    }
    let after = estimate(messages);
    if after > budget.input_budget_tokens {
        return Err(overflow(after, &budget));
    }
    inv.window.last_estimate = Some(request_tokens(messages, tools));
    let room = u32::try_from(budget.output_room(after)).unwrap_or(u32::MAX);
    // Only lowered: a request that fits keeps what it asked for (or the provider default).
    let default_output = configured_output.unwrap_or(DEFAULT_OUTPUT_TOKENS);
    Ok(if room < default_output {
        Some(room)
    } else {
        configured_output
    })
}

/// The answer length both HTTP adapters ask for when nothing sets one.
const DEFAULT_OUTPUT_TOKENS: u32 = 8192;

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::model::ModelRole;
    use tt_ports::ModelError;

    #[test]
    fn a_summary_step_replaces_its_span_by_one_message() {
        let mut messages: Vec<AgentModelMessage> = (0..6)
            .map(|i| AgentModelMessage::text(ModelRole::User, format!("m{i}")))
            .collect();
        let mut state = WindowState::default();
        apply_step(
            &mut messages,
            &mut state,
            &ContextStep::Summary {
                first: 2,
                count: 3,
                summary: "did things".into(),
                kept: None,
            },
        );
        let texts: Vec<String> = messages
            .iter()
            .map(AgentModelMessage::text_content)
            .collect();
        assert_eq!(texts.len(), 4);
        assert_eq!(texts[1], "m1");
        assert!(texts[2].ends_with("did things"));
        assert_eq!(texts[3], "m5");
    }

    #[test]
    fn a_kept_request_stays_ahead_of_the_summary_and_joins_the_opening() {
        let mut messages: Vec<AgentModelMessage> = ["system", "earlier", "request", "turn"]
            .iter()
            .map(|text| AgentModelMessage::text(ModelRole::User, *text))
            .collect();
        let mut state = WindowState {
            opening: 1,
            request: Some(2),
            ..WindowState::default()
        };
        let step = ContextStep::Summary {
            first: 1,
            count: 3,
            summary: "did things".into(),
            kept: Some(2),
        };
        apply_step(&mut messages, &mut state, &step);
        let texts: Vec<String> = messages
            .iter()
            .map(AgentModelMessage::text_content)
            .collect();
        assert_eq!(texts[..2], ["system", "request"]);
        assert!(texts[2].ends_with("did things"));
        assert_eq!((state.opening, state.request), (2, None));
    }

    #[test]
    fn a_refusal_teaches_the_window_and_the_calibration() {
        let mut state = WindowState {
            last_estimate: Some(1000),
            ..WindowState::default()
        };
        state.observe_refusal(
            &ModelError::ContextOverflow {
                message: String::new(),
                prompt_tokens: Some(1500),
                window_tokens: Some(1024),
            },
            Some(4096),
        );
        assert_eq!(state.learned_window, Some(1024));
        assert_eq!(state.calibration.apply(1000), 1500);
        let mut unknown = WindowState {
            last_estimate: Some(2000),
            ..WindowState::default()
        };
        unknown.observe_refusal(
            &ModelError::ContextOverflow {
                message: String::new(),
                prompt_tokens: None,
                window_tokens: None,
            },
            None,
        );
        assert_eq!(unknown.learned_window, Some(1800));
    }
}
