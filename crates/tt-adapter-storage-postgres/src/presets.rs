//! Preset templates, one row per `(api_id, name)` (`tt_preset_templates`: the template as
//! written), so the template prompt broker of every host sharing the database assembles the
//! same `preset.mode = "ref"` prompts with no file under its data dir.

use async_trait::async_trait;
use tt_ports::{PresetKey, PresetTemplateRepository, StorageResult};

use crate::PostgresStore;

#[async_trait]
impl PresetTemplateRepository for PostgresStore {
    async fn read_preset_template(&self, key: PresetKey<'_>) -> StorageResult<Option<String>> {
        if !key.is_storable() {
            return Ok(None);
        }
        let row = self
            .row(
                "SELECT body FROM tt_preset_templates WHERE api_id = $1 AND name = $2",
                &[&key.api_id, &key.name],
                &format!("preset template {key}"),
            )
            .await?;
        Ok(row.map(|row| row.get::<_, String>(0)))
    }

    async fn put_preset_template(&self, key: PresetKey<'_>, template: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_preset_template_key(key)?;
        // An upsert: a retried try writes the same row again.
        self.affected(
            "INSERT INTO tt_preset_templates (api_id, name, body) VALUES ($1, $2, $3)
             ON CONFLICT (api_id, name) DO UPDATE SET body = EXCLUDED.body,
                 updated_at = clock_timestamp()",
            &[&key.api_id, &key.name, &template],
            &format!("preset template {key}"),
        )
        .await
        .map(drop)
    }
}
