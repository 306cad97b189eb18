//! Named model connections, one row per name (`tt_connections`: the name and the document as
//! written), so every host sharing the database offers the same connections with no file under
//! its data dir. A document names the variable holding a key, never the key.

use async_trait::async_trait;
use tt_domain::ids::is_valid_storage_segment;
use tt_ports::{ConnectionRepository, StorageResult};

use crate::PostgresStore;
use crate::named_rows::{NamedRows, named_rows};

/// `tt_connections`: the name and the document as written.
const CONNECTIONS: NamedRows = named_rows!(
    "tt_connections",
    "name",
    ", updated_at = clock_timestamp()",
    "connection",
    "connections"
);

#[async_trait]
impl ConnectionRepository for PostgresStore {
    async fn list_connection_names(&self) -> StorageResult<Vec<String>> {
        self.named_keys(&CONNECTIONS).await
    }

    async fn read_connection(&self, name: &str) -> StorageResult<Option<String>> {
        if !is_valid_storage_segment(name) {
            return Ok(None);
        }
        self.named_body(&CONNECTIONS, name).await
    }

    async fn put_connection(&self, name: &str, document: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_storage_segment("connection name", name)?;
        self.named_put(&CONNECTIONS, name, document).await
    }

    async fn remove_connection(&self, name: &str) -> StorageResult<bool> {
        if !is_valid_storage_segment(name) {
            return Ok(false);
        }
        self.named_delete(&CONNECTIONS, name).await
    }
}
