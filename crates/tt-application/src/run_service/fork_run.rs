//! `fork_run`: branches a run at a point of its journal into a new run of the same chat
//! (docs/branching.md). The branch is built as the source would look had its process died
//! right after the cut, then continued by `resume_run`, whose replay gives each agent its
//! stored steps back without calling the model or running a tool again.

use std::sync::Arc;
use tt_domain::ids::RunId;
use tt_domain::run::{AgentRun, AgentRunStatus, ForkedFrom};

use crate::error::{ApplicationError, ApplicationResult};
use crate::fork::{ForkChanges, ForkRunRequest, copy, read_all_events, resolve_cut, state_at};

use super::AgentRunService;

impl AgentRunService {
    /// Branches run `source_id` after the point `request.at` names (moved back to the nearest
    /// point a branch can continue from) into a new run of the same chat, with
    /// `forkedFrom {runId, seq}`, and continues the branch in the background like a resumed
    /// run. The source is only read, never written or locked; it may still be running.
    ///
    /// Refused with `agent.not_found` (no such run), `agent.fork_point_invalid` (the point is
    /// outside the journal, names no commit or round, or is before the first agent started),
    /// `agent.fork_source_unavailable` (the store has no copy of a file version the branch
    /// needs), the guidance codes for bad guidance, or `agent.model_connection_not_found`,
    /// `agent.profile_not_found` or `agent.generation_settings_invalid` for a bad model
    /// change.
    pub async fn fork_run(
        self: &Arc<Self>,
        source_id: &RunId,
        request: ForkRunRequest,
    ) -> ApplicationResult<AgentRun> {
        let services = &self.services;
        let source = services.runs.load_run(source_id).await?;
        let changes = &request.changes;
        self.check_changes(changes).await?;
        let events = read_all_events(services, source_id).await?;
        let cut = resolve_cut(&events, &request.at)?;
        let state = state_at(&events, cut);
        if changes.user_request.is_some()
            && state
                .responses
                .iter()
                .any(|(invocation, _)| invocation.is_root())
        {
            return Err(crate::fork::fork_point_invalid(format!(
                "the user's request can be edited only before the first agent answered it (fork at its round 1); at seq {cut} it had answered"
            )));
        }
        let forked_from = ForkedFrom {
            run_id: source_id.clone(),
            seq: cut,
        };
        let mut branch = self.new_branch(&source, &forked_from, changes);
        let mut manifest = services.runs.load_manifest(source_id).await?;
        manifest.run_id = branch.id.clone();
        manifest.created_at = branch.created_at;
        services.runs.create_run(&branch, &manifest).await?;
        let built = async {
            copy::copy_events(services, &events, &branch, &forked_from).await?;
            copy::copy_workspace(services, &source, &branch.id, &state).await?;
            copy::copy_documents(services, source_id, &branch.id, &state).await?;
            if let Some(text) = &changes.user_request {
                copy::edit_user_request(services, &branch.id, text).await?;
            }
            copy::copy_records(services, &self.events, source_id, &branch.id, &state).await?;
            copy::close_at_cut(
                &self.events,
                &branch.id,
                &state,
                cut,
                changes.guidance.as_deref(),
            )
            .await?;
            branch.status = AgentRunStatus::Interrupted;
            branch.updated_at = services.clock.now();
            services.runs.save_run(&branch).await?;
            Ok::<_, ApplicationError>(())
        };
        if let Err(error) = built.await {
            // A half-built branch must not look resumable: it ends failed, visibly.
            branch.status = AgentRunStatus::Failed;
            branch.updated_at = services.clock.now();
            let _ = services.runs.save_run(&branch).await;
            return Err(error);
        }
        tracing::info!(
            source = source_id.as_str(),
            branch = branch.id.as_str(),
            seq = cut,
            "run branched"
        );
        self.resume_run(&branch.id).await
    }

    /// The checks of a fork's changes before anything is read or written: guidance, model
    /// connections, generation settings, profiles and an edited user request.
    async fn check_changes(&self, changes: &ForkChanges) -> ApplicationResult<()> {
        let services = &self.services;
        if let Some(text) = &changes.guidance {
            crate::guidance::check_text(text)?;
        }
        if let Some(name) = &changes.connection_ref
            && services.connections.resolve(name).await?.is_none()
        {
            return Err(crate::engine::binding::connection_not_found(name));
        }
        if let Some(generation) = &changes.generation {
            generation.validate("the fork's generation")?;
        }
        for (profile_id, change) in &changes.profiles {
            crate::profiles::resolve(services.profiles.as_ref(), Some(profile_id.as_str())).await?;
            if let Some(name) = &change.connection_ref
                && services.connections.resolve(name).await?.is_none()
            {
                return Err(crate::engine::binding::connection_not_found(name));
            }
            change
                .generation
                .validate(&format!("the fork's generation for profile `{profile_id}`"))?;
        }
        if let Some(text) = &changes.user_request
            && (text.trim().is_empty()
                || text.chars().count() > crate::fork::MAX_FORK_USER_REQUEST_CHARS)
        {
            return Err(crate::fork::fork_point_invalid(format!(
                "an edited user request must be 1 to {} characters",
                crate::fork::MAX_FORK_USER_REQUEST_CHARS
            )));
        }
        Ok(())
    }

    /// The branch's run record: the source's, with a new id, `created`, `forked_from`, and the
    /// model changes laid over it.
    fn new_branch(
        &self,
        source: &AgentRun,
        forked_from: &ForkedFrom,
        changes: &ForkChanges,
    ) -> AgentRun {
        let services = &self.services;
        let now = services.clock.now();
        let mut branch = source.clone();
        branch.id = RunId::generate(services.ids.next_token());
        branch.status = AgentRunStatus::Created;
        branch.forked_from = Some(forked_from.clone());
        // The branch's record is written whole; a source record rebuilt from its index copy or
        // journal says so on the source only.
        branch.rebuilt = None;
        branch.created_at = now;
        branch.updated_at = now;
        if let Some(name) = &changes.connection_ref {
            branch.connection_ref = Some(name.clone());
        }
        if let Some(generation) = &changes.generation {
            branch.generation = branch.generation.overlay(generation);
        }
        branch.profile_models.extend(changes.profiles.clone());
        branch
    }
}
