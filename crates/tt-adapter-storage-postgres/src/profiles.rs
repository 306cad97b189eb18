//! Profile definitions, one row each, stored as their JSON text.

use async_trait::async_trait;
use tt_domain::ids::ProfileId;
use tt_domain::profile::AgentProfileDefinition;
use tt_ports::{ProfileRepository, StorageError, StorageResult};

use crate::PostgresStore;
use crate::error::{io, parse, to_json};
use crate::retry::retrying;

#[async_trait]
impl ProfileRepository for PostgresStore {
    async fn load_profile(&self, id: &ProfileId) -> StorageResult<Option<AgentProfileDefinition>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let row = conn
                .query_opt(
                    "SELECT body FROM profiles WHERE profile_id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(io(format!("profile {id}")))?;
            row.map(|row| parse(format!("profile {id}"), row.get(0)))
                .transpose()
        })
        .await
    }

    async fn list_profile_ids(&self) -> StorageResult<Vec<ProfileId>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let rows = conn
                .query("SELECT profile_id FROM profiles ORDER BY profile_id", &[])
                .await
                .map_err(io("the profiles"))?;
            rows.iter()
                .map(|row| {
                    ProfileId::parse(row.get(0)).map_err(|err| {
                        StorageError::corrupt("a stored profile id", err.to_string())
                    })
                })
                .collect()
        })
        .await
    }

    async fn save_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()> {
        retrying(|_| async move {
            let body = to_json("profile", definition)?;
            let mut conn = self.pool.get().await?;
            conn.client()?
                .execute(
                    "INSERT INTO profiles (profile_id, body) VALUES ($1, $2)
                     ON CONFLICT (profile_id) DO UPDATE SET body = EXCLUDED.body",
                    &[&definition.id.as_str(), &body],
                )
                .await
                .map_err(io(format!("profile {}", definition.id)))?;
            Ok(())
        })
        .await
    }

    async fn delete_profile(&self, id: &ProfileId) -> StorageResult<bool> {
        retrying(|_| async move {
            let mut conn = self.pool.get().await?;
            let deleted = conn
                .client()?
                .execute(
                    "DELETE FROM profiles WHERE profile_id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(io(format!("profile {id}")))?;
            Ok(deleted > 0)
        })
        .await
    }
}
