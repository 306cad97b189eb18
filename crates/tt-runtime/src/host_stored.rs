//! What a host stores for its runs on [`AgentRuntime`] besides profiles and skills: named
//! model connections and the template prompt broker's preset templates, kept by the store
//! (PostgreSQL shares them between hosts) or else under the data dir.

use serde_json::Value;
use tt_domain::error_codes;

use crate::dto::{ConnectionSummary, HostError, HostResult};
use crate::host::AgentRuntime;
use crate::prompt_brokers::PresetTemplate;

impl AgentRuntime {
    /// Stores `document` as the named model connection `name` (the form of a connection file,
    /// docs/host-api.md, "Named connections"), replacing a stored one of that name: from now
    /// on runs and profiles may name it, on every host of the store. The document names the
    /// environment variable holding a key, never the key. Returns what
    /// [`list_connections`](Self::list_connections) shows of it.
    ///
    /// Errors: `agent.connection_invalid` (not a connection document, or no provider can be
    /// built from it), `agent.connection_name_registered` (a connection registered with the
    /// builder has the name), `agent.storage_segment_invalid` (a name that is not 1 to 128
    /// letters, digits, `-`, `_`), the store's code when it cannot be written.
    pub async fn save_connection(
        &self,
        name: &str,
        document: &Value,
    ) -> HostResult<ConnectionSummary> {
        self.ensure_open()?;
        self.connections.save(name, document).await
    }

    /// Removes the stored connection `name`; runs that already use it go on with it.
    /// `agent.model_connection_not_found` when the store keeps none of that name,
    /// `agent.connection_name_registered` for a registered one.
    pub async fn remove_connection(&self, name: &str) -> HostResult<()> {
        self.ensure_open()?;
        self.connections.remove(name).await
    }

    /// Stores `template` as preset `name` of api id `api_id`, replacing one stored before:
    /// the template prompt broker assembles the prompts of `preset.mode = "ref"` profiles
    /// naming `{apiId, name}` from it (docs/host-api.md, "Preset templates").
    /// `agent.preset_template_invalid` when it is not a template,
    /// `agent.storage_segment_invalid` for an api id or name that is not a storage segment,
    /// the store's code when it cannot be written.
    pub async fn save_preset_template(
        &self,
        api_id: &str,
        name: &str,
        template: &Value,
    ) -> HostResult<()> {
        self.ensure_open()?;
        PresetTemplate::check(template).map_err(|err| {
            HostError::new(
                error_codes::AGENT_PRESET_TEMPLATE_INVALID,
                format!("preset template {api_id}/{name}: {err}"),
            )
        })?;
        let text = serde_json::to_string_pretty(template).map_err(|err| {
            HostError::new(error_codes::AGENT_PRESET_TEMPLATE_INVALID, err.to_string())
        })?;
        self.preset_templates
            .put_preset_template(tt_ports::PresetKey::new(api_id, name), &text)
            .await
            .map_err(|err| {
                HostError::new(
                    err.code(),
                    format!("cannot store the preset template {api_id}/{name}: {err}"),
                )
            })
    }
}
