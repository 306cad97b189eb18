//! The preset template port: the templates the template prompt broker assembles the prompts of
//! `preset.mode = "ref"` profiles from, by the preset's api id and name (the file store keeps
//! them as `presets/<apiId>/<name>.json`). A template is JSON text the composition root parses.

use async_trait::async_trait;
use tt_domain::ids::is_valid_storage_segment;

use crate::error::StorageResult;

#[async_trait]
pub trait PresetTemplateRepository: Send + Sync {
    /// The template stored under `key`, as it was written; `None` when there is none or the
    /// key's api id or name is not a storage segment (1 to 128 letters, digits, `-`, `_`).
    async fn read_preset_template(&self, key: PresetKey<'_>) -> StorageResult<Option<String>>;

    /// Stores `template` under `key`, replacing what was there; durable and whole when it
    /// returns. An api id or name that is not a storage segment is `StorageError::Domain`
    /// (`agent.storage_segment_invalid`).
    async fn put_preset_template(&self, key: PresetKey<'_>, template: &str) -> StorageResult<()>;
}

/// What a preset's template is stored under: the host's API id and the preset's name. Shown
/// as `apiId/name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetKey<'a> {
    pub api_id: &'a str,
    pub name: &'a str,
}

impl<'a> PresetKey<'a> {
    /// The template of preset `name` of API `api_id`.
    pub fn new(api_id: &'a str, name: &'a str) -> Self {
        Self { api_id, name }
    }

    /// Whether both parts are storage segments: only such a key can name a stored template.
    pub fn is_storable(&self) -> bool {
        is_valid_storage_segment(self.api_id) && is_valid_storage_segment(self.name)
    }
}

impl std::fmt::Display for PresetKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_id, self.name)
    }
}
