//! The host's side of profiles besides saving one: list them (stored and built in), read one,
//! delete one (docs/profiles.md, "Managing profiles"). A built-in profile is used when nothing
//! is stored under its id; a stored profile of the same id replaces it, and deleting that one
//! brings the built-in back. A built-in itself is never deleted.

use serde::{Deserialize, Serialize};
use tt_domain::error_codes::{self, AGENT_PROFILE_BUILT_IN, AGENT_PROFILE_NOT_FOUND};
use tt_domain::ids::ProfileId;
use tt_domain::profile::{AgentProfileDefinition, built_in_profiles};
use tt_ports::StorageError;

use crate::error::{ApplicationError, ApplicationResult};

use super::AgentRunService;

/// One profile as `list_profiles` shows it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileSummary {
    pub id: ProfileId,
    /// Its `displayName`; the id for a stored profile that cannot be read.
    pub display_name: String,
    pub description: Option<String>,
    /// Built into the runtime (nothing is stored under its id): it cannot be deleted.
    pub built_in: bool,
    /// A stored profile under a built-in's id: it replaces the built-in, and deleting it
    /// brings the built-in back.
    #[serde(default)]
    pub replaces_built_in: bool,
    /// Why a stored profile cannot be read or is not valid (`code: message`): it is listed
    /// anyway, so that it can be fixed or deleted.
    pub problem: Option<String>,
}

/// What was deleted: a stored profile, and whether a built-in of the same id is used again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileDeleted {
    pub id: ProfileId,
    /// The built-in of this id is what runs naming it get from now on.
    pub built_in_restored: bool,
}

fn parse_id(id: &str) -> ApplicationResult<ProfileId> {
    ProfileId::parse(id.trim())
        .map_err(|err| ApplicationError::fatal(AGENT_PROFILE_NOT_FOUND, err.message))
}

fn not_found(id: &ProfileId) -> ApplicationError {
    ApplicationError::fatal(
        AGENT_PROFILE_NOT_FOUND,
        format!("no profile named `{id}` exists"),
    )
}

fn built_in(id: &ProfileId) -> Option<AgentProfileDefinition> {
    built_in_profiles()
        .into_iter()
        .find(|definition| &definition.id == id)
}

fn summary(definition: &AgentProfileDefinition, built_in: bool) -> ProfileSummary {
    ProfileSummary {
        id: definition.id.clone(),
        display_name: definition.display_name.clone(),
        description: definition.description.clone(),
        built_in,
        replaces_built_in: false,
        problem: None,
    }
}

impl AgentRunService {
    /// Every profile a run may name, sorted by id: the stored ones (each read and checked; one
    /// that cannot be read or is invalid is listed with its `problem`), and the built-in ones
    /// nothing stored replaces.
    pub async fn list_profiles(&self) -> ApplicationResult<Vec<ProfileSummary>> {
        let profiles = &self.services.profiles;
        let mut listed = Vec::new();
        for id in profiles.list_profile_ids().await? {
            let replaces_built_in = built_in(&id).is_some();
            let mut entry = match profiles.load_profile(&id).await {
                Ok(Some(definition)) => {
                    let mut entry = summary(&definition, false);
                    let source = tt_domain::profile::ProfileSource::file(&id);
                    if definition.id != id {
                        entry.problem = Some(format!(
                            "{}: it declares id `{}`",
                            error_codes::AGENT_PROFILE_ID_MISMATCH,
                            definition.id
                        ));
                        entry.id = id.clone();
                    } else if let Err(err) = tt_domain::profile::resolve_profile(definition, source)
                    {
                        entry.problem = Some(format!("{}: {}", err.code, err.message));
                    }
                    entry
                }
                // Deleted between the listing and the read.
                Ok(None) | Err(StorageError::NotFound { .. }) => continue,
                Err(err) => ProfileSummary {
                    id: id.clone(),
                    display_name: id.to_string(),
                    description: None,
                    built_in: false,
                    replaces_built_in: false,
                    problem: Some(format!("{}: {err}", err.code())),
                },
            };
            entry.replaces_built_in = replaces_built_in;
            listed.push(entry);
        }
        for definition in built_in_profiles() {
            if !listed.iter().any(|entry| entry.id == definition.id) {
                listed.push(summary(&definition, true));
            }
        }
        listed.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(listed)
    }

    /// The definition a run naming `id` gets: the stored one, else the built-in one.
    /// `agent.profile_not_found` when neither exists; a stored one that cannot be read answers
    /// its storage code.
    pub async fn get_profile(&self, id: &str) -> ApplicationResult<AgentProfileDefinition> {
        let id = parse_id(id)?;
        match self.services.profiles.load_profile(&id).await? {
            Some(definition) => Ok(definition),
            None => built_in(&id).ok_or_else(|| not_found(&id)),
        }
    }

    /// Deletes the stored profile `id`. `agent.profile_built_in` for a built-in profile with
    /// nothing stored over it, `agent.profile_not_found` for an id nothing is stored under.
    /// Runs that already resolved it keep what they froze; a resume that needs it again is
    /// refused (`agent.resume_profile_changed`) until it is saved again.
    pub async fn delete_profile(&self, id: &str) -> ApplicationResult<ProfileDeleted> {
        let id = parse_id(id)?;
        let built_in_restored = built_in(&id).is_some();
        if self.services.profiles.delete_profile(&id).await? {
            return Ok(ProfileDeleted {
                id,
                built_in_restored,
            });
        }
        if built_in_restored {
            return Err(ApplicationError::fatal(
                AGENT_PROFILE_BUILT_IN,
                format!("`{id}` is built into the runtime and cannot be deleted"),
            ));
        }
        Err(not_found(&id))
    }
}
