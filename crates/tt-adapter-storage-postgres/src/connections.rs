//! Named model connections, one row per name (`tt_connections`: the name and the document as
//! written), so every host sharing the database offers the same connections with no file under
//! its data dir. A document names the variable holding a key, never the key.

use async_trait::async_trait;
use tt_domain::ids::is_valid_storage_segment;
use tt_ports::{ConnectionRepository, StorageResult};

use crate::PostgresStore;
use crate::error::io;
use crate::retry::retrying;

#[async_trait]
impl ConnectionRepository for PostgresStore {
    async fn list_connection_names(&self) -> StorageResult<Vec<String>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let rows = conn
                .query("SELECT name FROM tt_connections ORDER BY name", &[])
                .await
                .map_err(io("connections"))?;
            Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
        })
        .await
    }

    async fn read_connection(&self, name: &str) -> StorageResult<Option<String>> {
        if !is_valid_storage_segment(name) {
            return Ok(None);
        }
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let row = conn
                .query_opt("SELECT body FROM tt_connections WHERE name = $1", &[&name])
                .await
                .map_err(io(format!("connection {name}")))?;
            Ok(row.map(|row| row.get::<_, String>(0)))
        })
        .await
    }

    async fn put_connection(&self, name: &str, document: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_storage_segment("connection name", name)?;
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            // An upsert: a retried try writes the same row again.
            conn.execute(
                "INSERT INTO tt_connections (name, body) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body,
                     updated_at = clock_timestamp()",
                &[&name, &document],
            )
            .await
            .map_err(io(format!("connection {name}")))?;
            Ok(())
        })
        .await
    }

    async fn remove_connection(&self, name: &str) -> StorageResult<bool> {
        if !is_valid_storage_segment(name) {
            return Ok(false);
        }
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let removed = conn
                .execute("DELETE FROM tt_connections WHERE name = $1", &[&name])
                .await
                .map_err(io(format!("connection {name}")))?;
            Ok(removed > 0)
        })
        .await
    }
}
