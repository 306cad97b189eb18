//! The host side of profiles besides `save_profile`: list, read and delete them, in the store
//! profiles are kept in (the data dir's, or the PostgreSQL store a URL named), with the
//! built-in ones listed as such (docs/profiles.md, "Managing profiles").

use tt_application::{ProfileDeleted, ProfileSummary};
use tt_domain::profile::AgentProfileDefinition;

use super::AgentRuntime;
use crate::dto::HostResult;

impl AgentRuntime {
    /// Every profile a run may name, sorted by id: the stored ones (one that cannot be read or
    /// is invalid is listed with its `problem`) and the built-in ones (`builtIn`) nothing
    /// stored replaces.
    pub async fn list_profiles(&self) -> HostResult<Vec<ProfileSummary>> {
        self.ensure_open()?;
        Ok(self.service.list_profiles().await?)
    }

    /// The definition a run naming `profile_id` gets: the stored one, else the built-in one.
    /// `agent.profile_not_found` when there is neither.
    pub async fn get_profile(&self, profile_id: &str) -> HostResult<AgentProfileDefinition> {
        self.ensure_open()?;
        Ok(self.service.get_profile(profile_id).await?)
    }

    /// Deletes a stored profile. A stored profile that replaced a built-in one gives way to it
    /// again (`builtInRestored`). Errors: `agent.profile_built_in` (a built-in profile cannot
    /// be deleted), `agent.profile_not_found`.
    pub async fn delete_profile(&self, profile_id: &str) -> HostResult<ProfileDeleted> {
        self.ensure_open()?;
        Ok(self.service.delete_profile(profile_id).await?)
    }
}
