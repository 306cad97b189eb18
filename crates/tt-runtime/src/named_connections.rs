//! Named model connections registered with the builder, resolved by a profile's
//! `model.connectionRef`.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tt_ports::{ModelConnections, ModelError, ModelProvider, ResolvedConnection};

/// A fixed set of connections: name → provider (+ a non-secret description for events).
#[derive(Default, Clone)]
pub struct NamedConnections {
    entries: HashMap<String, (Arc<dyn ModelProvider>, Value)>,
}

impl std::fmt::Debug for NamedConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.entries.keys().collect();
        names.sort();
        f.debug_struct("NamedConnections")
            .field("names", &names)
            .finish()
    }
}

impl NamedConnections {
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        provider: Arc<dyn ModelProvider>,
        description: Value,
    ) {
        self.entries.insert(name.into(), (provider, description));
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[async_trait]
impl ModelConnections for NamedConnections {
    async fn resolve(
        &self,
        connection_ref: &str,
    ) -> Result<Option<ResolvedConnection>, ModelError> {
        Ok(self
            .entries
            .get(connection_ref)
            .map(|(provider, description)| ResolvedConnection {
                provider: Arc::clone(provider),
                description: if description.is_null() {
                    json!({"name": connection_ref, "provider": provider.name()})
                } else {
                    description.clone()
                },
            }))
    }
}
