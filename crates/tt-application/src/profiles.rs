//! Profile resolution: the built-in `default-writer` when none is named (or when it has no
//! stored override), otherwise the stored definition, validated; and the check that a profile
//! can run at all (its model is configured).

use tt_domain::error_codes;
use tt_domain::ids::ProfileId;
use tt_domain::profile::{
    DEFAULT_PROFILE_ID, ModelMode, ProfileSource, ResolvedProfile, default_writer_definition,
    resolve_profile,
};
use tt_ports::ProfileRepository;

use crate::error::{ApplicationError, ApplicationResult};

/// Resolves `requested` (or the default) into a validated profile.
pub(crate) async fn resolve(
    profiles: &dyn ProfileRepository,
    requested: Option<&str>,
) -> ApplicationResult<ResolvedProfile> {
    let id_text = requested
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .unwrap_or(DEFAULT_PROFILE_ID);
    let id = ProfileId::parse(id_text).map_err(|err| {
        ApplicationError::fatal(error_codes::AGENT_PROFILE_NOT_FOUND, err.message)
    })?;
    match profiles.load_profile(&id).await? {
        Some(definition) => {
            if definition.id != id {
                return Err(ApplicationError::fatal(
                    error_codes::AGENT_PROFILE_ID_MISMATCH,
                    format!("the stored profile `{id}` declares id `{}`", definition.id),
                ));
            }
            Ok(resolve_profile(definition, ProfileSource::file(&id))?)
        }
        None if id.as_str() == DEFAULT_PROFILE_ID => Ok(resolve_profile(
            default_writer_definition(),
            ProfileSource::built_in(),
        )?),
        None => Err(ApplicationError::fatal(
            error_codes::AGENT_PROFILE_NOT_FOUND,
            format!("no profile named `{id}` exists"),
        )),
    }
}

/// Fails fast when a profile cannot run because its model is not configured.
pub(crate) fn check_model_configured(profile: &ResolvedProfile) -> ApplicationResult<()> {
    match profile.definition.model.mode {
        ModelMode::RequiresConfiguration => Err(ApplicationError::fatal(
            error_codes::AGENT_PROFILE_MODEL_REQUIRES_CONFIGURATION,
            format!(
                "profile `{}` needs a model to be configured before it can run",
                profile.id()
            ),
        )),
        ModelMode::CurrentPromptSnapshot | ModelMode::ConnectionRef => Ok(()),
    }
}
