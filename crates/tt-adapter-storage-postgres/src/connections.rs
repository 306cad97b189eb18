//! Named model connections, one row per name (`tt_connections`: the name and the document as
//! written), so every host sharing the database offers the same connections with no file under
//! its data dir. A document names the variable holding a key, never the key.

use async_trait::async_trait;
use tt_domain::ids::is_valid_storage_segment;
use tt_ports::{ConnectionRepository, StorageResult};

use crate::PostgresStore;

#[async_trait]
impl ConnectionRepository for PostgresStore {
    async fn list_connection_names(&self) -> StorageResult<Vec<String>> {
        let rows = self
            .rows(
                "SELECT name FROM tt_connections ORDER BY name",
                &[],
                "connections",
            )
            .await?;
        Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
    }

    async fn read_connection(&self, name: &str) -> StorageResult<Option<String>> {
        if !is_valid_storage_segment(name) {
            return Ok(None);
        }
        let row = self
            .row(
                "SELECT body FROM tt_connections WHERE name = $1",
                &[&name],
                &format!("connection {name}"),
            )
            .await?;
        Ok(row.map(|row| row.get::<_, String>(0)))
    }

    async fn put_connection(&self, name: &str, document: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_storage_segment("connection name", name)?;
        // An upsert: a retried try writes the same row again.
        self.affected(
            "INSERT INTO tt_connections (name, body) VALUES ($1, $2)
             ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body,
                 updated_at = clock_timestamp()",
            &[&name, &document],
            &format!("connection {name}"),
        )
        .await
        .map(drop)
    }

    async fn remove_connection(&self, name: &str) -> StorageResult<bool> {
        if !is_valid_storage_segment(name) {
            return Ok(false);
        }
        let removed = self
            .affected(
                "DELETE FROM tt_connections WHERE name = $1",
                &[&name],
                &format!("connection {name}"),
            )
            .await?;
        Ok(removed > 0)
    }
}
