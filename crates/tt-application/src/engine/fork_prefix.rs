//! What an agent started in fork mode starts from (`crate::engine::fork_mode` says how fork mode
//! works): its stored prefix read back, its note and brief, and `agent.delegate`'s `mode`
//! argument offered to an agent that can reach a profile allowing fork mode. Apart from the
//! loop's side so that preparing an agent (`crate::engine::invocation_setup`) needs nothing of
//! a running one.

use serde::{Deserialize, Serialize};
use tt_domain::error_codes;
use tt_domain::ids::InvocationId;
use tt_domain::model::AgentModelMessage;
use tt_domain::profile::{ResolvedProfile, ToolSpecStyle};
use tt_domain::tool::{AgentToolSpec, InvocationToolSnapshot, ToolName};
use tt_ports::RunDocument;

use crate::delegation::policy::{Operation, admit};
use crate::engine::context::RunContext;
use crate::error::{ApplicationError, ApplicationResult};

/// What an agent started in fork mode reads first: its delegating agent's messages and tool
/// specs, as that agent sent them in the request whose reply asked for the task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ForkPrefix {
    pub messages: Vec<AgentModelMessage>,
    pub tools: Vec<AgentToolSpec>,
}

/// The prefix stored for `child`, if it was started in fork mode. Read only for a target
/// whose profile allows fork mode, so a task of any other profile costs no read.
pub(crate) async fn stored_prefix(
    ctx: &RunContext,
    target: &ResolvedProfile,
    child: &InvocationId,
) -> ApplicationResult<Option<ForkPrefix>> {
    if !target.definition.delegation.allow_fork {
        return Ok(None);
    }
    let document = RunDocument::InvocationForkPrefix(child.clone());
    let Some(stored) = ctx
        .services
        .runs
        .read_document(&ctx.run_id, &document)
        .await?
    else {
        return Ok(None);
    };
    serde_json::from_value(stored).map(Some).map_err(|err| {
        ApplicationError::fatal(
            error_codes::AGENT_STORAGE_CORRUPT,
            format!("the stored fork prefix cannot be read: {err}"),
        )
    })
}

/// `agent.resume_profile_changed` when `child` was started in fork mode and its profile
/// (`target`) no longer allows it: its start reads its prefix only for a profile that allows
/// fork mode, so it would start from its brief and its stored rounds would not match.
pub(crate) async fn check_resumable(
    ctx: &RunContext,
    target: &ResolvedProfile,
    child: &InvocationId,
) -> ApplicationResult<()> {
    if target.definition.delegation.allow_fork {
        return Ok(());
    }
    let document = RunDocument::InvocationForkPrefix(child.clone());
    if ctx
        .services
        .runs
        .read_document(&ctx.run_id, &document)
        .await?
        .is_some()
    {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_RESUME_PROFILE_CHANGED,
            format!(
                "profile `{}` no longer allows fork mode, which {child} was started in ({}); the run cannot be resumed",
                target.id(),
                document.relative_path()
            ),
        ));
    }
    Ok(())
}

/// Gives `agent.delegate` in `snapshot` its `mode` argument when the agent of `profile` can
/// delegate to a profile that allows fork mode; `snapshot` stays as it is otherwise (so no
/// other agent's specs change). Applied wherever a snapshot is built, so a resumed agent's
/// rebuilt snapshot matches its frozen one.
pub(crate) async fn offer_fork_mode(
    profiles: &dyn tt_ports::ProfileRepository,
    profile: &ResolvedProfile,
    snapshot: &mut InvocationToolSnapshot,
) -> ApplicationResult<()> {
    let Some(index) = snapshot
        .tools
        .iter()
        .position(|spec| spec.name == ToolName::AgentDelegate)
    else {
        return Ok(());
    };
    if !any_fork_target(profiles, profile).await? {
        return Ok(());
    }
    let mut tools = snapshot.tools.to_vec();
    if let Some(spec) = tools.get_mut(index) {
        crate::delegation::specs::add_fork_mode(
            &mut spec.input_schema,
            profile.definition.tools.spec_style() == ToolSpecStyle::Full,
        );
    }
    snapshot.tools = tools.into();
    Ok(())
}

/// Whether some profile that admits `caller`'s delegations allows fork mode.
async fn any_fork_target(
    profiles: &dyn tt_ports::ProfileRepository,
    caller: &ResolvedProfile,
) -> ApplicationResult<bool> {
    for id in profiles.list_profile_ids().await? {
        let Ok(target) = crate::profiles::resolve(profiles, Some(id.as_str())).await else {
            continue;
        };
        if target.definition.delegation.allow_fork
            && admit(caller, &target, Operation::Delegate).is_ok()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The note and brief an agent started in fork mode reads after its prefix: which of the
/// `offered` tools are its own (those its `snapshot` holds, `task_return` aside: its plain
/// answer is its return), its roots and its profile's own instructions.
pub(crate) fn note_and_brief(
    profile: &ResolvedProfile,
    snapshot: &InvocationToolSnapshot,
    offered: &[AgentToolSpec],
    brief: &str,
) -> String {
    let tools = offered
        .iter()
        .filter(|spec| spec.name != ToolName::TaskReturn)
        .filter(|spec| {
            snapshot
                .tools
                .iter()
                .any(|own| own.model_name == spec.model_name)
        })
        .map(|spec| spec.model_name.as_str())
        .collect();
    crate::delegation::fork_note::render_fork_note(&crate::delegation::fork_note::ForkNote {
        tools,
        visible_roots: &snapshot.visible_roots,
        writable_roots: &snapshot.writable_roots,
        instructions: profile
            .definition
            .instructions
            .agent_system_prompt
            .as_deref(),
        brief,
    })
}
