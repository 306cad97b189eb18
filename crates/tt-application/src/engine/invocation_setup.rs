//! Preparing a delegated or handoff invocation's context: frozen tool snapshot, prompt (the
//! compatibility path: system prompt + markdown brief; or host prompt assembly for
//! `preset.mode = "ref"`), model binding, and `context_assembled`.

use serde_json::json;
use std::sync::Arc;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::TaskId;
use tt_domain::invocation::{AgentInvocation, ExitPolicy};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::profile::{PresetMode, ResolvedProfile};
use tt_domain::run::Presentation;
use tt_domain::tool::InvocationToolSnapshot;
use tt_ports::{CancellationToken, RunDocument};

use crate::engine::binding::{ModelBinding, resolve_model_binding};
use crate::engine::context::RunContext;
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
            let input = crate::engine::prompt_assembly::AssemblyInput {
                invocation,
                profile,
                task_id: Some(task_id),
                system_prompt: &system_prompt,
                task_prompt: &brief,
                model_id: profile.definition.model.model_id.clone(),
            };
            crate::engine::prompt_assembly::assemble(ctx, &input, cancel).await?
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
    let assembled = context_assembled(
        profile,
        &model,
        &snapshot,
        messages.len(),
        Some(task_id.clone()),
    );
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &assembled)
        .await?;
    let skills = resolve_and_record_skills(ctx, &invocation.id, profile).await?;
    Ok(PreparedInvocation {
        snapshot: Arc::new(snapshot),
        messages,
        model,
        skills,
    })
}

/// `context_assembled` for an agent of `profile` whose first request has `message_count`
/// messages: a delegated or handoff agent names the task that brought it in; the root has
/// none and adds its model retry policy.
pub(crate) fn context_assembled(
    profile: &ResolvedProfile,
    model: &ModelBinding,
    snapshot: &InvocationToolSnapshot,
    message_count: usize,
    task_id: Option<TaskId>,
) -> payload::ContextAssembled {
    let root = task_id.is_none();
    payload::ContextAssembled {
        request: crate::engine::model_turn::with_provider_fields(
            json!({
                "provider": model.provider.name(), "model": model.model_id,
                "messageCount": message_count, "toolCount": snapshot.tools.len(),
            }),
            model.provider.as_ref(),
        ),
        invocation_id: snapshot.invocation_id.clone(),
        task_id,
        // The mode's wire name (`currentPromptSnapshot`, `ref`, `none`).
        preset_mode: json!(profile.definition.preset.mode)
            .as_str()
            .map(str::to_owned),
        tools: snapshot
            .model_names()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        max_rounds: snapshot.budgets.max_rounds,
        context_policy: json!(profile.definition.context),
        model_retry: root.then(|| json!(profile.definition.run.model_retry)),
    }
}

/// Resolves an invocation's skills, writes `input/invocations/<id>/resolved_skills.json` (the
/// root's: `input/resolved_skills.json`) and journals `skill_scopes_resolved`.
pub(crate) async fn resolve_and_record_skills(
    ctx: &RunContext,
    invocation_id: &tt_domain::ids::InvocationId,
    profile: &tt_domain::profile::ResolvedProfile,
) -> crate::error::ApplicationResult<Arc<crate::skills::ResolvedSkills>> {
    let refs = ctx.run_snapshot().await.skill_scope_refs;
    let resolved =
        crate::skills::resolve_invocation_skills(ctx.services.skills.as_ref(), &refs, profile)
            .await?;
    ctx.services
        .runs
        .write_document(
            &ctx.run_id,
            &tt_ports::RunDocument::InvocationResolvedSkills(invocation_id.clone()),
            &resolved.document(invocation_id, profile.id()),
        )
        .await?;
    ctx.events
        .record(
            &ctx.run_id,
            tt_domain::event::EventLevel::Info,
            &resolved.event_payload(invocation_id, profile.id()),
        )
        .await?;
    Ok(Arc::new(resolved))
}
