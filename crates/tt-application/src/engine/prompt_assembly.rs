//! Invocation-scoped prompt assembly for profiles with `preset.mode = "ref"` (reference §8): the
//! host builds the prompt from the agent's preset, its system prompt, the task or handoff brief
//! (for the root agent: the user's request), and the run's frozen conversation; the runtime checks
//! the answer and keeps it.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::generation::GenerationSettings;
use tt_domain::ids::TaskId;
use tt_domain::invocation::{AgentInvocation, ExitPolicy};
use tt_domain::model::AgentModelMessage;
use tt_domain::profile::{ContextPolicy, ResolvedProfile};
use tt_domain::text::sha256_hex;
use tt_ports::{
    HostBridgeError, PromptAssemblyAnswer, PromptAssemblyFingerprint, PromptAssemblyRequest,
    PromptAssemblyScope, RunDocument, RunWrite, SerializedDocument,
};

use crate::engine::context::RunContext;
use crate::error::{ApplicationError, ApplicationResult};
use crate::events::EventSink;
use crate::prompt_input::{PromptMessage, PromptSnapshot};

pub(crate) const REQUEST_KIND: &str = "tauritavern.agentPromptAssemblyRequest";
pub(crate) const REQUEST_SCHEMA_VERSION: u32 = 1;

/// What one assembly is for.
#[derive(Debug)]
pub(crate) struct AssemblyInput<'a> {
    pub invocation: &'a AgentInvocation,
    pub profile: &'a ResolvedProfile,
    /// The task that brought the agent in; `None` for the root agent.
    pub task_id: Option<&'a TaskId>,
    pub system_prompt: &'a str,
    pub task_prompt: &'a str,
    pub model_id: Option<String>,
}

/// Asks the host to assemble the prompt and returns the assembled messages. An agent whose
/// prompt was assembled and stored already (a resumed run, docs/resume.md) gets the stored
/// prompt back, checked again, instead of asking the host a second time: its stored model
/// responses were made with that prompt.
pub(crate) async fn assemble(
    ctx: &RunContext,
    input: &AssemblyInput<'_>,
    cancel: &tt_ports::CancellationToken,
) -> ApplicationResult<Assembled> {
    let AssemblyInput {
        invocation,
        profile,
        system_prompt,
        task_prompt,
        ..
    } = *input;
    if let Some(stored) =
        stored_assembly(ctx, invocation, profile, system_prompt, task_prompt).await?
    {
        return Ok(stored);
    }
    let (asked, request) = new_request(ctx, input).await?;
    let answer = ask_host(ctx, input, &asked, request, cancel).await?;
    let (snapshot, generation) = match check_settings(&answer, input) {
        Ok(checked) => checked,
        Err(error) => {
            report_failure(
                ctx,
                &asked.assembly_id,
                invocation,
                profile,
                error.to_string(),
            )
            .await?;
            return Err(error);
        }
    };
    store_answer(ctx, input, &asked, &answer).await?;
    Ok(Assembled {
        messages: snapshot.model_messages(),
        generation,
    })
}

/// One assembly asked of the host: what names it, and what its stored record repeats.
struct Asked {
    assembly_id: String,
    scope: PromptAssemblyScope,
    fingerprint: PromptAssemblyFingerprint,
    preset_ref: Value,
    /// The run's frozen input snapshot the host assembles from.
    frozen: Value,
}

/// The request for `input`'s assembly, from the run's frozen input snapshot (fatal when the
/// run has none).
async fn new_request(
    ctx: &RunContext,
    input: &AssemblyInput<'_>,
) -> ApplicationResult<(Asked, PromptAssemblyRequest)> {
    let AssemblyInput {
        invocation,
        profile,
        task_id,
        system_prompt,
        task_prompt,
        ..
    } = *input;
    let model_id = input.model_id.clone();
    let frozen = ctx
        .services
        .runs
        .read_document(&ctx.run_id, &RunDocument::PromptSnapshot)
        .await?
        .ok_or_else(|| {
            ApplicationError::fatal(
                error_codes::AGENT_CHILD_PROMPT_ASSEMBLY_FROZEN_SNAPSHOT_REQUIRED,
                "the run has no frozen input snapshot to assemble from",
            )
        })?;
    let preset_ref =
        serde_json::to_value(&profile.definition.preset.preset_ref).unwrap_or(Value::Null);
    let assembly_id = format!("prompt_assembly_{}", ctx.services.ids.next_token());
    let scope = PromptAssemblyScope {
        run_id: ctx.run_id.to_string(),
        invocation_id: invocation.id.to_string(),
        invocation_kind: invocation.kind.as_str().to_owned(),
        parent_invocation_id: invocation
            .parent_invocation_id
            .as_ref()
            .map(ToString::to_string),
        task_id: task_id.map(ToString::to_string),
        exit_policy: match invocation.exit_policy {
            ExitPolicy::TaskReturnRequired => "taskReturnRequired",
            ExitPolicy::RunFinishAllowed => "runFinishAllowed",
        }
        .to_owned(),
    };
    let fingerprint = PromptAssemblyFingerprint {
        preset_sha256: sha256_hex(preset_ref.to_string().as_bytes()),
        frozen_run_input_snapshot_sha256: sha256_hex(frozen.to_string().as_bytes()),
        agent_task_prompt_sha256: sha256_hex(task_prompt.as_bytes()),
    };
    let run = ctx.run_snapshot().await;
    let request = PromptAssemblyRequest {
        schema_version: REQUEST_SCHEMA_VERSION,
        kind: REQUEST_KIND.to_owned(),
        assembly_id: assembly_id.clone(),
        scope: scope.clone(),
        profile_id: profile.id().to_string(),
        generation_type: run.generation_type.clone(),
        frozen_run_input_snapshot: frozen.clone(),
        settings: json!({"model": profile.definition.model}),
        model_id,
        preset_ref: preset_ref.clone(),
        agent_context_policy: serde_json::to_value(profile.definition.context)
            .unwrap_or(Value::Null),
        agent_system_prompt: system_prompt.to_owned(),
        agent_task_prompt: task_prompt.to_owned(),
        required_agent_prompt_components: required_components(task_prompt),
        json_schema: None,
        fingerprint: fingerprint.clone(),
    };
    let asked = Asked {
        assembly_id,
        scope,
        fingerprint,
        preset_ref,
        frozen,
    };
    Ok((asked, request))
}

/// Sends `request` to the host and waits for its answer (or `cancel`): the request is
/// journaled once the host took it, and a failure is reported before it ends the agent.
async fn ask_host(
    ctx: &RunContext,
    input: &AssemblyInput<'_>,
    asked: &Asked,
    request: PromptAssemblyRequest,
    cancel: &tt_ports::CancellationToken,
) -> ApplicationResult<PromptAssemblyAnswer> {
    let AssemblyInput {
        invocation,
        profile,
        ..
    } = *input;
    let assembly_id = &asked.assembly_id;
    let pending = match ctx.services.prompt_broker.request_assembly(request).await {
        Ok(pending) => pending,
        Err(HostBridgeError::Cancelled) => return Err(ApplicationError::cancelled()),
        Err(error) => {
            report_failure(ctx, assembly_id, invocation, profile, error.to_string()).await?;
            return Err(ApplicationError::fatal(
                error_codes::AGENT_PROMPT_ASSEMBLY_FAILED,
                error.to_string(),
            ));
        }
    };
    ctx.events
        .record(
            &ctx.run_id,
            EventLevel::Info,
            &payload::PromptAssemblyRequested {
                assembly_id: assembly_id.clone(),
                invocation_id: invocation.id.clone(),
                profile_id: profile.id().clone(),
                scope: json!(asked.scope),
                request_kind: "invocation".to_owned(),
                request_schema_version: REQUEST_SCHEMA_VERSION,
                request_fingerprint: json!(asked.fingerprint),
            },
        )
        .await?;
    let answer = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(ApplicationError::cancelled()),
        answer = pending => answer,
    };
    match answer {
        Ok(answer) => Ok(answer),
        Err(HostBridgeError::Cancelled) => Err(ApplicationError::cancelled()),
        Err(error) => {
            report_failure(ctx, assembly_id, invocation, profile, error.to_string()).await?;
            Err(ApplicationError::fatal(
                error_codes::AGENT_PROMPT_ASSEMBLY_FAILED,
                format!("the host could not assemble the prompt: {error}"),
            ))
        }
    }
}

/// The host's prompt, checked, and the generation settings it set (validated; `None` when it
/// set none).
fn check_settings(
    answer: &PromptAssemblyAnswer,
    input: &AssemblyInput<'_>,
) -> ApplicationResult<(PromptSnapshot, Option<GenerationSettings>)> {
    let profile = input.profile;
    let snapshot = check_answer(
        &answer.prompt_snapshot,
        profile,
        input.system_prompt,
        input.task_prompt,
    )?;
    let generation = match &answer.settings {
        Some(settings) => {
            settings.generation.validate(&format!(
                "the prompt assembly settings for profile `{}`",
                profile.id()
            ))?;
            Some(settings.generation.clone()).filter(|generation| !generation.is_empty())
        }
        None => None,
    };
    Ok((snapshot, generation))
}

/// Keeps the host's answer: the assembly record, the prompt and `prompt_assembly_completed`.
async fn store_answer(
    ctx: &RunContext,
    input: &AssemblyInput<'_>,
    asked: &Asked,
    answer: &PromptAssemblyAnswer,
) -> ApplicationResult<()> {
    let AssemblyInput {
        invocation,
        profile,
        ..
    } = *input;
    let Asked {
        assembly_id,
        scope,
        fingerprint,
        preset_ref,
        frozen,
    } = asked;
    let snapshot_doc = RunDocument::InvocationPromptSnapshot(invocation.id.clone());
    let assembly_doc = RunDocument::InvocationPromptAssembly(invocation.id.clone());
    let record = json!({
        "assemblyId": assembly_id, "invocationId": invocation.id, "profileId": profile.id(), "scope": scope,
        "requestMetadata": {
            "assemblyId": assembly_id, "schemaVersion": REQUEST_SCHEMA_VERSION, "engine": "prompt-assembly-broker",
            "profileId": profile.id(), "presetRef": preset_ref, "scope": scope, "fingerprint": fingerprint,
        },
        "frozenRunInputSnapshot": answer.frozen_run_input_snapshot.as_ref().unwrap_or(frozen),
        "generationIntent": answer.generation_intent,
        "settings": answer.settings,
        "assembly": answer.assembly,
    });
    let completed = EventSink::pending(
        EventLevel::Info,
        &payload::PromptAssemblyCompleted {
            assembly_id: assembly_id.clone(),
            invocation_id: invocation.id.clone(),
            profile_id: profile.id().clone(),
            prompt_snapshot_path: snapshot_doc.relative_path(),
            prompt_assembly_path: assembly_doc.relative_path(),
        },
    )?;
    // One unit, the record with the settings before the prompt: a resumed agent that finds
    // the prompt finds its settings too (a store that cannot commit a unit at once writes it
    // in this order).
    let unit = vec![
        RunWrite::Document {
            document: assembly_doc,
            body: SerializedDocument::new(&record)?,
        },
        RunWrite::Document {
            document: snapshot_doc,
            body: SerializedDocument::new(&answer.prompt_snapshot)?,
        },
        ctx.events.stamp(&ctx.run_id, completed),
    ];
    ctx.events.commit(&ctx.run_id, unit).await?;
    Ok(())
}

/// The prompt stored for `invocation` by an earlier assembly, checked again, with the settings
/// stored beside it. `None` when there is none, or when the prompt was stored without its
/// assembly record (a crash between the two writes of a run stored before they were one
/// unit): then the host is asked again, which nothing depends on yet, since no model call
/// follows an assembly that did not complete.
async fn stored_assembly(
    ctx: &RunContext,
    invocation: &AgentInvocation,
    profile: &ResolvedProfile,
    system_prompt: &str,
    task_prompt: &str,
) -> ApplicationResult<Option<Assembled>> {
    let runs = &ctx.services.runs;
    let Some(stored) = runs
        .read_document(
            &ctx.run_id,
            &RunDocument::InvocationPromptSnapshot(invocation.id.clone()),
        )
        .await?
    else {
        return Ok(None);
    };
    let Some(record) = runs
        .read_document(
            &ctx.run_id,
            &RunDocument::InvocationPromptAssembly(invocation.id.clone()),
        )
        .await?
    else {
        tracing::warn!(
            invocation = %invocation.id,
            "a stored assembled prompt has no assembly record; asking the host again"
        );
        return Ok(None);
    };
    let messages = check_answer(&stored, profile, system_prompt, task_prompt)?.model_messages();
    // The settings the host gave then, kept beside the prompt.
    let generation = match record
        .get("settings")
        .filter(|settings| !settings.is_null())
    {
        Some(settings) => Some(checked_settings(settings.clone(), profile)?),
        None => None,
    };
    Ok(Some(Assembled {
        messages,
        generation,
    }))
}

/// An assembled prompt and the generation settings the host's preset gave it.
#[derive(Debug)]
pub(crate) struct Assembled {
    pub messages: Vec<AgentModelMessage>,
    pub generation: Option<GenerationSettings>,
}

/// Stored assembly settings read back (a resumed agent), checked like the host's answer.
fn checked_settings(
    settings: Value,
    profile: &ResolvedProfile,
) -> ApplicationResult<GenerationSettings> {
    let settings: tt_ports::AssembledSettings =
        serde_json::from_value(settings).map_err(|err| {
            ApplicationError::fatal(
                error_codes::AGENT_PROMPT_ASSEMBLY_RESOLVE_INVALID,
                format!("the stored assembly settings cannot be read: {err}"),
            )
        })?;
    settings.generation.validate(&format!(
        "the prompt assembly settings for profile `{}`",
        profile.id()
    ))?;
    Ok(settings.generation)
}

/// What the assembled prompt must contain: the agent system prompt, and the task when there is
/// one (a root agent started without a request has none).
fn required_components(task_prompt: &str) -> Vec<String> {
    let mut components = vec!["agentSystemPrompt".to_owned()];
    if !task_prompt.trim().is_empty() {
        components.push("agentTask".to_owned());
    }
    components
}

/// Checks an assembled snapshot: plain system/user/assistant text messages that contain the
/// agent system prompt and the task prompt, and a `contextPolicy` equal to the profile's.
fn check_answer(
    prompt_snapshot: &Value,
    profile: &ResolvedProfile,
    system_prompt: &str,
    task_prompt: &str,
) -> ApplicationResult<PromptSnapshot> {
    let invalid = |message: &str| {
        ApplicationError::fatal(
            error_codes::AGENT_PROMPT_ASSEMBLY_RESOLVE_INVALID,
            message.to_owned(),
        )
    };
    let object = prompt_snapshot
        .as_object()
        .ok_or_else(|| invalid("the prompt snapshot is not an object"))?;
    let policy_value = object
        .get("contextPolicy")
        .filter(|v| !v.is_null())
        .ok_or_else(|| {
            ApplicationError::fatal(
                error_codes::AGENT_CONTEXT_POLICY_REQUIRED,
                "the prompt snapshot has no contextPolicy",
            )
        })?;
    let policy: ContextPolicy = serde_json::from_value(policy_value.clone()).map_err(|err| {
        ApplicationError::fatal(
            error_codes::AGENT_INVALID_CONTEXT_POLICY_SNAPSHOT,
            err.to_string(),
        )
    })?;
    if policy != profile.definition.context {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_CONTEXT_POLICY_MISMATCH,
            format!(
                "the assembled prompt's contextPolicy differs from profile `{}`",
                profile.id()
            ),
        ));
    }
    let messages: Vec<PromptMessage> = serde_json::from_value(
        object.get("messages").cloned().unwrap_or(Value::Null),
    )
    .map_err(|err| {
        invalid(&format!(
            "messages must be [{{role: system|user|assistant, content}}]: {err}"
        ))
    })?;
    if messages.is_empty() {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_PROMPT_ASSEMBLY_SNAPSHOT_REQUIRED,
            "the prompt snapshot has no messages",
        ));
    }
    if !task_prompt.trim().is_empty()
        && !messages
            .iter()
            .any(|message| message.content.contains(task_prompt.trim()))
    {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_TASK_PROMPT_REQUIRED,
            "the assembled prompt does not contain the task prompt",
        ));
    }
    if !messages
        .iter()
        .any(|message| message.content.contains(system_prompt.trim()))
    {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_PROMPT_ASSEMBLY_COMPONENT_MISSING,
            "the assembled prompt does not contain the agent system prompt",
        ));
    }
    Ok(PromptSnapshot {
        schema_version: 1,
        context_policy: policy,
        messages,
    })
}

async fn report_failure(
    ctx: &RunContext,
    assembly_id: &str,
    invocation: &AgentInvocation,
    profile: &ResolvedProfile,
    message: String,
) -> ApplicationResult<()> {
    ctx.events
        .record(
            &ctx.run_id,
            EventLevel::Warn,
            &payload::PromptAssemblyFailed {
                assembly_id: assembly_id.to_owned(),
                invocation_id: invocation.id.clone(),
                profile_id: profile.id().clone(),
                message,
            },
        )
        .await?;
    Ok(())
}
