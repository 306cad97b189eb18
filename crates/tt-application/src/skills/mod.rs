//! Skills for agents: which skills an invocation sees, in which scope order and after which
//! overrides (`resolve`), the three tools `skill.list`, `skill.search` and `skill.read` with their
//! per-invocation read budget (`tools`), and their model-facing specs (`specs`).

pub(crate) mod resolve;
pub(crate) mod specs;
pub(crate) mod tools;

#[cfg(test)]
mod behaviour_tests;

pub(crate) use resolve::{ResolvedSkills, resolve_invocation_skills};
pub(crate) use specs::skill_tool_spec;
pub(crate) use tools::{SkillReadBudget, SkillToolEnv, execute};

/// Resolves an invocation's skills, writes `input/invocations/<id>/resolved_skills.json` (the
/// root's: `input/resolved_skills.json`) and journals `skill_scopes_resolved`.
pub(crate) async fn resolve_and_record(
    ctx: &crate::context::RunContext,
    invocation_id: &tt_domain::ids::InvocationId,
    profile: &tt_domain::profile::ResolvedProfile,
) -> crate::error::ApplicationResult<std::sync::Arc<ResolvedSkills>> {
    let refs = ctx.run_snapshot().await.skill_scope_refs;
    let resolved = resolve_invocation_skills(ctx.services.skills.as_ref(), &refs, profile).await?;
    ctx.services
        .runs
        .write_document(
            &ctx.run_id,
            &tt_ports::RunDocument::InvocationResolvedSkills(invocation_id.clone()),
            &resolved.document(invocation_id, profile.id()),
        )
        .await?;
    ctx.events
        .info(
            &ctx.run_id,
            tt_domain::event::RunEventType::SkillScopesResolved,
            resolved.event_payload(invocation_id, profile.id()),
        )
        .await?;
    Ok(std::sync::Arc::new(resolved))
}
