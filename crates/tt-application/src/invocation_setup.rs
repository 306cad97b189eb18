//! Preparing a delegated or handoff invocation's context: frozen tool snapshot, prompt (the
//! compatibility path: system prompt + markdown brief; or host prompt assembly for
//! `preset.mode = "ref"`), model binding, and `context_assembled`.

use serde_json::json;
use std::sync::Arc;
use tt_domain::event::RunEventType;
use tt_domain::ids::TaskId;
use tt_domain::invocation::{AgentInvocation, ExitPolicy};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::profile::{PresetMode, ResolvedProfile};
use tt_domain::run::Presentation;
use tt_domain::tool::InvocationToolSnapshot;
use tt_ports::{CancellationToken, RunDocument};

use crate::binding::{ModelBinding, resolve_model_binding};
use crate::context::RunContext;
use crate::error::ApplicationResult;
use crate::prompt::agent_system_prompt;
use crate::registry::build_tool_snapshot;

/// What an invocation starts with.
#[derive(Debug)]
pub(crate) struct PreparedInvocation {
    pub snapshot: Arc<InvocationToolSnapshot>,
    pub messages: Vec<AgentModelMessage>,
    pub model: ModelBinding,
    pub skills: Arc<crate::skills::ResolvedSkills>,
}

/// Who is being prepared: an invocation of `profile`, brought in by `task_id`, reading `brief`.
#[derive(Debug)]
pub(crate) struct InvocationSetup<'a> {
    pub invocation: &'a AgentInvocation,
    pub profile: &'a ResolvedProfile,
    pub exit_policy: ExitPolicy,
    pub presentation: Presentation,
    pub task_id: &'a TaskId,
    pub brief: String,
}

/// Prepares the invocation described by `setup`; `cancel` aborts a pending prompt assembly.
pub(crate) async fn prepare_invocation(
    ctx: &RunContext,
    setup: InvocationSetup<'_>,
    cancel: &CancellationToken,
) -> ApplicationResult<PreparedInvocation> {
    let InvocationSetup {
        invocation,
        profile,
        exit_policy,
        presentation,
        task_id,
        brief,
    } = setup;
    let snapshot = build_tool_snapshot(profile, &invocation.id, exit_policy, presentation)?;
    let system_prompt = agent_system_prompt(profile, &snapshot);
    let messages = match profile.definition.preset.mode {
        PresetMode::Ref => {
            let input = crate::prompt_assembly::AssemblyInput {
                invocation,
                profile,
                task_id: Some(task_id),
                system_prompt: &system_prompt,
                task_prompt: &brief,
                model_id: profile.definition.model.model_id.clone(),
            };
            crate::prompt_assembly::assemble(ctx, &input, cancel).await?
        }
        // Chat history and prior turns are not carried over: the brief says what matters.
        PresetMode::CurrentPromptSnapshot | PresetMode::None => vec![
            AgentModelMessage::text(ModelRole::System, system_prompt),
            AgentModelMessage::text(ModelRole::User, brief),
        ],
    };
    let model = resolve_model_binding(ctx, &invocation.id, profile).await?;
    ctx.services
        .runs
        .write_serialized_document(
            &ctx.run_id,
            &RunDocument::InvocationToolSnapshot(invocation.id.clone()),
            // Serialized as it is: no `Value` tree of the whole snapshot per invocation.
            &tt_ports::SerializedDocument::new(&snapshot)?,
        )
        .await?;
    ctx.events
        .info(
            &ctx.run_id,
            RunEventType::ContextAssembled,
            json!({
                "request": crate::model_turn::with_provider_fields(json!({
                    "provider": model.provider.name(), "model": model.model_id,
                    "messageCount": messages.len(), "toolCount": snapshot.tools.len(),
                }), model.provider.as_ref()),
                "invocationId": invocation.id,
                "taskId": task_id,
                "presetMode": profile.definition.preset.mode,
                "tools": snapshot.model_names(),
                "maxRounds": snapshot.budgets.max_rounds,
                "contextPolicy": profile.definition.context,
            }),
        )
        .await?;
    let skills = crate::skills::resolve_and_record(ctx, &invocation.id, profile).await?;
    Ok(PreparedInvocation {
        snapshot: Arc::new(snapshot),
        messages,
        model,
        skills,
    })
}
