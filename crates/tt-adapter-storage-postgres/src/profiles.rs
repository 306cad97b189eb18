//! Profile definitions, one row each, stored as their JSON text.

use async_trait::async_trait;
use tt_domain::ids::ProfileId;
use tt_domain::profile::AgentProfileDefinition;
use tt_ports::{ProfileRepository, StorageError, StorageResult};

use crate::PostgresStore;
use crate::error::to_json;

#[async_trait]
impl ProfileRepository for PostgresStore {
    async fn load_profile(&self, id: &ProfileId) -> StorageResult<Option<AgentProfileDefinition>> {
        self.document(
            "SELECT body FROM profiles WHERE profile_id = $1",
            &[&id.as_str()],
            &format!("profile {id}"),
        )
        .await
    }

    async fn list_profile_ids(&self) -> StorageResult<Vec<ProfileId>> {
        let rows = self
            .rows(
                "SELECT profile_id FROM profiles ORDER BY profile_id",
                &[],
                "the profiles",
            )
            .await?;
        rows.iter()
            .map(|row| {
                ProfileId::parse(row.get(0))
                    .map_err(|err| StorageError::corrupt("a stored profile id", err.to_string()))
            })
            .collect()
    }

    async fn save_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()> {
        let body = to_json("profile", definition)?;
        self.affected(
            "INSERT INTO profiles (profile_id, body) VALUES ($1, $2)
             ON CONFLICT (profile_id) DO UPDATE SET body = EXCLUDED.body",
            &[&definition.id.as_str(), &body],
            &format!("profile {}", definition.id),
        )
        .await
        .map(drop)
    }

    async fn delete_profile(&self, id: &ProfileId) -> StorageResult<bool> {
        let deleted = self
            .affected(
                "DELETE FROM profiles WHERE profile_id = $1",
                &[&id.as_str()],
                &format!("profile {id}"),
            )
            .await?;
        Ok(deleted > 0)
    }
}
