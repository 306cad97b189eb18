//! Profile definitions, one row each, stored as their JSON text.

use async_trait::async_trait;
use tt_domain::ids::ProfileId;
use tt_domain::profile::AgentProfileDefinition;
use tt_ports::{ProfileRepository, StorageError, StorageResult};

use crate::PostgresStore;
use crate::error::to_json;
use crate::named_rows::{NamedRows, named_rows};

/// `profiles`: the id and the definition as JSON.
const PROFILES: NamedRows = named_rows!("profiles", "profile_id", "", "profile", "the profiles");

#[async_trait]
impl ProfileRepository for PostgresStore {
    async fn load_profile(&self, id: &ProfileId) -> StorageResult<Option<AgentProfileDefinition>> {
        self.named_document(&PROFILES, id.as_str()).await
    }

    async fn list_profile_ids(&self) -> StorageResult<Vec<ProfileId>> {
        let keys = self.named_keys(&PROFILES).await?;
        keys.iter()
            .map(|key| {
                ProfileId::parse(key)
                    .map_err(|err| StorageError::corrupt("a stored profile id", err.to_string()))
            })
            .collect()
    }

    async fn save_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()> {
        let body = to_json("profile", definition)?;
        self.named_put(&PROFILES, definition.id.as_str(), &body)
            .await
    }

    async fn delete_profile(&self, id: &ProfileId) -> StorageResult<bool> {
        self.named_delete(&PROFILES, id.as_str()).await
    }
}
