//! The return gate (`delegation.returnGate`; docs/delegation.md, "The return gate"): before a
//! delegated agent's `task.return` writes its result, the grader profile's model reads the
//! task's brief, the rubric and the result and answers accept, revise or reject.
//!
//! - accept: the return goes on as usual.
//! - revise: the call answers the agent with the grader's notes
//!   (`agent.return_revision_requested`, a refusal it can act on) and the agent goes on, at most
//!   `maxRevisions` times; past them (or once the gradings used `maxGraderTokens`) the result
//!   stands or the task fails (`agent.return_revisions_spent`), as `whenRevisionsSpent` says.
//! - reject: the task fails with the grader's reason (`agent.return_rejected`).
//!
//! Each grading is one model call on the grader profile's binding (bound without journaling an
//! agent's binding: the grader is no agent of the run), journaled as `task_return_graded`
//! before the runtime acts on it. A resumed agent's `task.return` that was graded before the
//! interruption uses that grading instead of asking again; the tally of revisions and tokens
//! counts the journaled gradings.

use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload::TaskReturnGraded;
use tt_domain::invocation::ExitPolicy;
use tt_domain::model::{AgentModelMessage, AgentModelRequest, ModelRole, ProviderSession};
use tt_domain::profile::{ReturnGate, RevisionsSpent};
use tt_domain::task::AgentTaskRecord;
use tt_domain::tool::AgentToolCall;

use crate::delegation::args::parse_task_return_args;
use crate::delegation::return_gate_text as text;
use crate::engine::context::RunContext;
use crate::engine::invocation::{GateTally, InvocationRuntime};
use crate::error::{ApplicationError, ToolCallError, ToolError};

/// Counts `graded` into `tally`.
fn add(tally: &mut GateTally, graded: &TaskReturnGraded) {
    tally.gradings += 1;
    if graded.outcome == "sentBack" {
        tally.revisions += 1;
    }
    tally.tokens += graded.input_tokens + graded.output_tokens;
}

/// Runs the gate for a `task.return` call of `round`: `Ok` lets the return go on; a refusal
/// sends the result back; a fatal error fails the task. Agents whose profile has no gate
/// pass at once.
pub(crate) async fn check(
    ctx: &RunContext,
    inv: &mut InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> Result<(), ToolCallError> {
    let Some(gate) = inv.profile.definition.delegation.return_gate.clone() else {
        return Ok(());
    };
    if inv.invocation.exit_policy != ExitPolicy::TaskReturnRequired {
        // `task.return` refuses it by itself.
        return Ok(());
    }
    // A malformed return is refused before anyone grades it.
    parse_task_return_args(&call.arguments)?;
    let tasks = ctx
        .services
        .invocations
        .list_tasks_by_child(&ctx.run_id, &inv.invocation.id)
        .await
        .map_err(ApplicationError::from)?;
    let Some(task) = tasks.first().filter(|task| !task.status.is_terminal()) else {
        // `task.return` says what is wrong.
        return Ok(());
    };
    let tally = tally(inv);
    let journaled = inv.replayed_call(round, &call.id, |replay, key| replay.grading(key).cloned());
    let graded = match journaled {
        Some(graded) => graded,
        None => {
            let graded = grade(ctx, inv, &gate, task, round, call, tally).await?;
            ctx.events
                .record(&ctx.run_id, EventLevel::Info, &graded)
                .await?;
            add(&mut inv.gate_tally, &graded);
            graded
        }
    };
    answer(&gate, &graded, tally)
}

/// The tally of the agent's gradings: those journaled before an interruption (once), then
/// those made since.
fn tally(inv: &mut InvocationRuntime) -> GateTally {
    if !inv.gate_tally_loaded {
        inv.gate_tally_loaded = true;
        if let Some(replay) = inv.replay.as_ref() {
            for graded in replay.gradings() {
                add(&mut inv.gate_tally, graded);
            }
        }
    }
    inv.gate_tally
}

/// What the runtime does with `graded`.
fn answer(
    gate: &ReturnGate,
    graded: &TaskReturnGraded,
    before: GateTally,
) -> Result<(), ToolCallError> {
    match graded.outcome.as_str() {
        "sentBack" => {
            let left = gate.max_revisions.saturating_sub(before.revisions + 1);
            Err(ToolError::new(
                error_codes::AGENT_RETURN_REVISION_REQUESTED,
                text::sent_back(&graded.notes, left),
            )
            .into())
        }
        "rejected" => Err(ApplicationError::fatal(
            error_codes::AGENT_RETURN_REJECTED,
            if graded.notes.is_empty() {
                "the reviewer gave no reason".to_owned()
            } else {
                graded.notes.clone()
            },
        )
        .into()),
        "failed" => Err(ApplicationError::fatal(
            error_codes::AGENT_RETURN_REVISIONS_SPENT,
            format!(
                "still not accepted after {} revisions: {}",
                before.revisions, graded.notes
            ),
        )
        .into()),
        // `accepted`, `stood`.
        _ => Ok(()),
    }
}

/// Asks the grader about the result of `call` (unless the gradings used their budget) and
/// decides the outcome: the `task_return_graded` to journal.
async fn grade(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    gate: &ReturnGate,
    task: &AgentTaskRecord,
    round: u32,
    call: &AgentToolCall,
    tally: GateTally,
) -> Result<TaskReturnGraded, ToolCallError> {
    let spent = match gate.when_revisions_spent {
        RevisionsSpent::Accept => "stood",
        RevisionsSpent::Fail => "failed",
    };
    let mut graded = TaskReturnGraded {
        invocation_id: inv.invocation.id.clone(),
        task_id: task.id.clone(),
        round,
        call_id: call.id.clone(),
        grader_profile_id: tt_domain::ids::ProfileId::parse(&gate.grader).map_err(|err| {
            ApplicationError::fatal(
                error_codes::AGENT_PROFILE_RETURN_GATE_INVALID,
                err.to_string(),
            )
        })?,
        attempt: tally.gradings + 1,
        verdict: None,
        notes: String::new(),
        outcome: String::new(),
        input_tokens: 0,
        output_tokens: 0,
    };
    if gate
        .max_grader_tokens
        .is_some_and(|limit| tally.tokens >= limit)
    {
        graded.notes = "the gradings used their token budget".to_owned();
        graded.outcome = spent.to_owned();
        return Ok(graded);
    }
    let (verdict, usage) = ask_grader(ctx, inv, gate, task, call, graded.attempt).await?;
    graded.input_tokens = usage.0;
    graded.output_tokens = usage.1;
    graded.outcome = match verdict.verdict {
        "accept" => "accepted",
        "reject" => "rejected",
        _ if tally.revisions < gate.max_revisions => "sentBack",
        _ => spent,
    }
    .to_owned();
    graded.verdict = Some(verdict.verdict.to_owned());
    graded.notes = verdict.notes;
    Ok(graded)
}

/// One model call of the grader: its verdict and the call's input and output tokens.
async fn ask_grader(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    gate: &ReturnGate,
    task: &AgentTaskRecord,
    call: &AgentToolCall,
    attempt: u32,
) -> Result<(text::Verdict, (u64, u64)), ToolCallError> {
    let grader =
        crate::profiles::resolve(ctx.services.profiles.as_ref(), Some(gate.grader.as_str()))
            .await?;
    crate::profiles::check_model_configured(&grader)?;
    let (binding, _, _) = crate::engine::binding::bind_model(ctx, &grader, None).await?;
    let settings = binding.settings();
    let mut session = ProviderSession::new(&ctx.run_id, &inv.invocation.id);
    session.session_id.push_str(":grader");
    // The brief's own fields, without what it tells the agent that works on it.
    let brief = crate::delegation::rendering::render_value(
        &serde_json::to_value(&*task.task).unwrap_or_default(),
    );
    let request = AgentModelRequest {
        session,
        agent_profile_id: grader.id().clone(),
        model_id: binding.model_id.clone(),
        round: attempt,
        messages: vec![
            AgentModelMessage::text(
                ModelRole::System,
                text::grader_system(
                    grader
                        .definition
                        .instructions
                        .agent_system_prompt
                        .as_deref(),
                ),
            ),
            AgentModelMessage::text(
                ModelRole::User,
                text::grader_request(&gate.rubric, &brief, &call.arguments),
            ),
        ],
        tools: std::sync::Arc::from(Vec::new()),
        tool_choice: "none".to_owned(),
        max_output_tokens: settings.max_output_tokens,
        generation: settings.generation,
        cache_ttl: binding.cache_ttl,
    };
    let failed = |message: String| -> ToolCallError {
        ApplicationError::fatal(error_codes::AGENT_RETURN_GRADING_FAILED, message).into()
    };
    let response = binding
        .provider
        .complete(&request, inv.cancel.clone())
        .await
        .map_err(|err| {
            if inv.cancel.is_cancelled() {
                ApplicationError::cancelled().into()
            } else {
                failed(format!("the grader's model call failed: {err}"))
            }
        })?;
    let verdict = text::read_verdict(&response.text())
        .ok_or_else(|| failed("the grader's answer had no verdict".to_owned()))?;
    let usage = response
        .usage
        .map_or((0, 0), |usage| (usage.input_tokens, usage.output_tokens));
    Ok((verdict, usage))
}
