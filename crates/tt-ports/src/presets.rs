//! The preset template port: the templates the template prompt broker assembles the prompts of
//! `preset.mode = "ref"` profiles from, by the preset's api id and name (the file store keeps
//! them as `presets/<apiId>/<name>.json`). A template is JSON text the composition root parses.

use async_trait::async_trait;

use crate::error::StorageResult;

#[async_trait]
pub trait PresetTemplateRepository: Send + Sync {
    /// The template stored for `api_id` and `name`, as it was written; `None` when there is
    /// none or either is not a storage segment (1 to 128 letters, digits, `-`, `_`).
    async fn read_preset_template(&self, api_id: &str, name: &str)
    -> StorageResult<Option<String>>;

    /// Stores `template` for `api_id` and `name`, replacing what was there; durable and whole
    /// when it returns. An api id or name that is not a storage segment is
    /// `StorageError::Domain` (`agent.storage_segment_invalid`).
    async fn put_preset_template(
        &self,
        api_id: &str,
        name: &str,
        template: &str,
    ) -> StorageResult<()>;
}
