//! Preparing an agent's start, one path for the root, a delegated and a handoff agent: frozen
//! tool snapshot, prompt (the system prompt, then the run's frozen conversation for the root or
//! the markdown brief for the others; or host prompt assembly for `preset.mode = "ref"`), model
//! binding, `context_assembled` and skills.

use serde_json::json;
use std::sync::Arc;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::TaskId;
use tt_domain::invocation::{AgentInvocation, ExitPolicy};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::profile::{PresetMode, ResolvedProfile};
use tt_domain::run::Presentation;
use tt_domain::tool::{AgentToolSpec, InvocationToolSnapshot};
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
    /// A root whose prompt the host assembles once the run has started (`preset.mode =
    /// "ref"`; `messages` is empty until then): the system prompt the assembly must contain.
    pub assembly_pending: Option<String>,
    /// An agent started in fork mode: the tool specs its requests list (its delegating
    /// agent's); `None` for every other agent.
    pub offered_tools: Option<Arc<[AgentToolSpec]>>,
}

/// Where an agent comes from, which decides what it reads first.
#[derive(Debug)]
pub(crate) enum Origin<'a> {
    /// The run's root agent: its system prompt, then the run's frozen conversation.
    Root {
        conversation: Vec<AgentModelMessage>,
    },
    /// A delegated or handoff agent, brought in by `task_id`, reading `brief`.
    Task { task_id: &'a TaskId, brief: String },
    /// A delegated agent started in fork mode: its delegating agent's `prefix`, then its note
    /// and `brief` (`crate::engine::fork_mode`).
    Fork {
        task_id: &'a TaskId,
        brief: String,
        prefix: crate::engine::fork_prefix::ForkPrefix,
    },
}

/// Who is being prepared: an invocation of `profile`, coming from `origin`.
#[derive(Debug)]
pub(crate) struct InvocationSetup<'a> {
    pub invocation: &'a AgentInvocation,
    pub profile: &'a ResolvedProfile,
    pub exit_policy: ExitPolicy,
    pub presentation: Presentation,
    pub origin: Origin<'a>,
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
        origin,
    } = setup;
    let external =
        crate::registry::external_definitions(&ctx.services, &ctx.run_id, &invocation.id, profile)
            .await?;
    let mut snapshot = build_tool_snapshot(
        profile,
        &invocation.id,
        exit_policy,
        presentation,
        &external,
    )?;
    crate::engine::fork_prefix::offer_fork_mode(
        ctx.services.profiles.as_ref(),
        profile,
        &mut snapshot,
    )
    .await?;
    let system_prompt = agent_system_prompt(profile, &snapshot);
    let Opening {
        messages,
        assembly_pending,
        task_id,
        assembled_generation,
        offered_tools,
    } = opening(
        ctx,
        invocation,
        profile,
        &snapshot,
        system_prompt,
        origin,
        cancel,
    )
    .await?;
    let model = resolve_model_binding(ctx, &invocation.id, profile, assembled_generation).await?;
    ctx.services
        .runs
        .write_serialized_document(
            &ctx.run_id,
            &RunDocument::InvocationToolSnapshot(invocation.id.clone()),
            // Serialized as it is (no `Value` tree), its specs' text written once per set.
            &match crate::registry::specs_json(&snapshot.tools) {
                Some(tools) => {
                    tt_ports::SerializedDocument::new(&snapshot.with_tools_json(&tools))?
                }
                None => tt_ports::SerializedDocument::new(&snapshot)?,
            },
        )
        .await?;
    // A root whose prompt is still to be assembled journals it once it is.
    if assembly_pending.is_none() {
        let assembled =
            context_assembled(profile, &model, &snapshot, messages.len(), task_id.cloned());
        ctx.events
            .record(&ctx.run_id, EventLevel::Info, &assembled)
            .await?;
    }
    let skills = resolve_and_record_skills(ctx, &invocation.id, profile).await?;
    Ok(PreparedInvocation {
        snapshot: Arc::new(snapshot),
        messages,
        model,
        skills,
        assembly_pending,
        offered_tools,
    })
}

/// What an agent's first request opens with, by where it comes from.
struct Opening<'a> {
    messages: Vec<AgentModelMessage>,
    assembly_pending: Option<String>,
    task_id: Option<&'a TaskId>,
    assembled_generation: Option<tt_domain::generation::GenerationSettings>,
    offered_tools: Option<Arc<[AgentToolSpec]>>,
}

/// The opening messages: the system prompt, then the run's conversation (the root) or the
/// brief (a delegated or handoff agent), or the host's assembly of them (`preset.mode =
/// "ref"`); for an agent started in fork mode, its stored prefix, then its note and brief.
async fn opening<'a>(
    ctx: &RunContext,
    invocation: &AgentInvocation,
    profile: &ResolvedProfile,
    snapshot: &InvocationToolSnapshot,
    system_prompt: String,
    origin: Origin<'a>,
    cancel: &CancellationToken,
) -> ApplicationResult<Opening<'a>> {
    let host_assembles = profile.definition.preset.mode == PresetMode::Ref;
    let mut opening = Opening {
        messages: Vec::new(),
        assembly_pending: None,
        task_id: None,
        assembled_generation: None,
        offered_tools: None,
    };
    match origin {
        // The root's assembly waits for the run to have started: a host learns of it from the
        // run's events.
        Origin::Root { .. } if host_assembles => opening.assembly_pending = Some(system_prompt),
        Origin::Root { conversation } => {
            opening.messages = vec![AgentModelMessage::text(ModelRole::System, system_prompt)];
            opening.messages.extend(conversation);
        }
        // The prefix as its delegating agent sent it, then its own note and brief; a host
        // assembles no prompt for it (the prefix is the point).
        Origin::Fork {
            task_id,
            brief,
            prefix,
        } => {
            let note = crate::engine::fork_prefix::note_and_brief(
                profile,
                snapshot,
                &prefix.tools,
                &brief,
            );
            opening.messages = prefix.messages;
            opening
                .messages
                .push(AgentModelMessage::text(ModelRole::User, note));
            opening.offered_tools = Some(prefix.tools.into());
            opening.task_id = Some(task_id);
        }
        Origin::Task { task_id, brief } if host_assembles => {
            let input = crate::engine::prompt_assembly::AssemblyInput {
                invocation,
                profile,
                task_id: Some(task_id),
                system_prompt: &system_prompt,
                task_prompt: &brief,
                model_id: profile.definition.model.model_id.clone(),
            };
            let assembled = crate::engine::prompt_assembly::assemble(ctx, &input, cancel).await?;
            opening.messages = assembled.messages;
            opening.task_id = Some(task_id);
            opening.assembled_generation = assembled.generation;
        }
        // Chat history and prior turns are not carried over: the brief says what matters.
        Origin::Task { task_id, brief } => {
            opening.messages = vec![
                AgentModelMessage::text(ModelRole::System, system_prompt),
                AgentModelMessage::text(ModelRole::User, brief),
            ];
            opening.task_id = Some(task_id);
        }
    }
    Ok(opening)
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
        request: crate::engine::binding::with_provider_fields(
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
    let refs = ctx.read_run(|run| run.skill_scope_refs.clone()).await;
    let resolved =
        crate::skills::resolve_invocation_skills(ctx.services.skills.as_ref(), &refs, profile)
            .await?;
    ctx.services
        .runs
        .write_serialized_document(
            &ctx.run_id,
            &tt_ports::RunDocument::InvocationResolvedSkills(invocation_id.clone()),
            &tt_ports::SerializedDocument::new(&resolved.document(invocation_id, profile.id()))?,
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
