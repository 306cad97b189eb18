//! The connection port: where named model connections are kept (the document a profile's
//! `model.connectionRef` names), so every host of one store offers the same connections. A
//! document is JSON text the composition root parses (the file store keeps it as
//! `connections/<name>.json`); it names the variable that holds a key, never the key.

use async_trait::async_trait;

use crate::error::StorageResult;

#[async_trait]
pub trait ConnectionRepository: Send + Sync {
    /// The names of the stored connections, sorted. A name that is not a storage segment
    /// (1 to 128 letters, digits, `-`, `_`) is never listed.
    async fn list_connection_names(&self) -> StorageResult<Vec<String>>;

    /// The document stored under `name`, as it was written; `None` when there is none or
    /// `name` is not a storage segment.
    async fn read_connection(&self, name: &str) -> StorageResult<Option<String>>;

    /// Stores `document` under `name`, replacing what was there; durable and whole when it
    /// returns. A name that is not a storage segment is `StorageError::Domain`
    /// (`agent.storage_segment_invalid`).
    async fn put_connection(&self, name: &str, document: &str) -> StorageResult<()>;

    /// Forgets `name`; `false` when nothing was stored under it.
    async fn remove_connection(&self, name: &str) -> StorageResult<bool>;
}
