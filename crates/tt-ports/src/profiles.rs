//! Where profile definitions come from. Resolution rules (built-in default, validation) live in
//! the application; this port only loads what is stored.

use async_trait::async_trait;
use tt_domain::ids::ProfileId;
use tt_domain::profile::AgentProfileDefinition;

use crate::error::StorageResult;

#[async_trait]
pub trait ProfileRepository: Send + Sync {
    /// `Ok(None)` when no profile with this id is stored; a file that does not parse is
    /// `StorageError::Corrupt`.
    async fn load_profile(&self, id: &ProfileId) -> StorageResult<Option<AgentProfileDefinition>>;

    /// Ids of all stored profiles, sorted.
    async fn list_profile_ids(&self) -> StorageResult<Vec<ProfileId>>;

    /// Stores (or replaces) a definition under its id. Validation is the caller's job.
    async fn save_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()>;

    /// Removes the profile stored under `id`, readable or not: `Ok(true)` when one was
    /// stored, `Ok(false)` when none was. Which ids may be deleted is the caller's rule.
    async fn delete_profile(&self, id: &ProfileId) -> StorageResult<bool>;
}
