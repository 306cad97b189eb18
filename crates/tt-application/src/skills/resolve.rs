//! Skill resolution for one invocation (reference §8 step 7): the ordered scopes
//! `global → preset → profile → character`, each scope's skills overriding earlier ones with the
//! same id, then the profile's `skills.visible` minus `skills.deny`. Pure: writing
//! `resolved_skills.json` and journaling `skill_scopes_resolved` is the caller's job, with the
//! document and payload built here.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tt_domain::ids::{InvocationId, ProfileId};
use tt_domain::profile::{PresetMode, ResolvedProfile, SkillsSection};
use tt_domain::skill::{SkillFilePath, SkillId, SkillScope, SkillScopeRefs};
use tt_ports::SkillRepository;

use crate::error::ApplicationResult;

/// A skill an agent can use, after overrides and visibility.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EffectiveSkill {
    pub id: SkillId,
    pub name: String,
    pub description: String,
    /// The scope whose copy of the skill won.
    pub scope: SkillScope,
    /// Earlier scopes that also had a skill with this id, replaced by this one, in scope order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<SkillScope>,
    /// The skill's files, sorted, `SKILL.md` included.
    pub files: Vec<SkillFilePath>,
}

/// What one invocation may use: the scopes looked at (in order), the run's ambient refs they
/// came from, and the effective skills sorted by id. Serialized as the body of
/// `input/invocations/<id>/resolved_skills.json`: `{scopes, refs, effectiveSkills}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResolvedSkills {
    pub scopes: Vec<SkillScope>,
    pub refs: SkillScopeRefs,
    #[serde(rename = "effectiveSkills")]
    pub skills: Vec<EffectiveSkill>,
}

/// [`ResolvedSkills::document`]: serialized as it is, with no `Value` tree built first.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResolvedSkillsDocument<'a> {
    schema_version: u32,
    invocation_id: &'a InvocationId,
    profile_id: &'a ProfileId,
    scopes: &'a [SkillScope],
    refs: &'a SkillScopeRefs,
    effective_skills: &'a [EffectiveSkill],
}

impl ResolvedSkills {
    pub(crate) const SCHEMA_VERSION: u32 = 1;

    /// The effective skill with this id, if any.
    #[cfg(test)]
    pub(crate) fn find(&self, id: &SkillId) -> Option<&EffectiveSkill> {
        self.skills.iter().find(|skill| skill.id == *id)
    }

    /// The `resolved_skills.json` document:
    /// `{schemaVersion, invocationId, profileId, scopes, refs, effectiveSkills}`.
    pub(crate) fn document<'a>(
        &'a self,
        invocation_id: &'a InvocationId,
        profile_id: &'a ProfileId,
    ) -> ResolvedSkillsDocument<'a> {
        ResolvedSkillsDocument {
            schema_version: Self::SCHEMA_VERSION,
            invocation_id,
            profile_id,
            scopes: &self.scopes,
            refs: &self.refs,
            effective_skills: &self.skills,
        }
    }

    /// Reads a `resolved_skills.json` document back (extra keys ignored).
    #[cfg(test)]
    pub(crate) fn from_document(document: &Value) -> ApplicationResult<Self> {
        serde_json::from_value(document.clone()).map_err(|err| {
            crate::error::ApplicationError::fatal(
                tt_domain::error_codes::AGENT_STORAGE_CORRUPT,
                format!("resolved_skills.json does not parse: {err}"),
            )
        })
    }

    /// The payload of `skill_scopes_resolved`: `{invocationId, profileId, scopes, refs,
    /// effectiveSkills}`, each effective skill as `{id, name, scope, overrides?, fileCount}`
    /// (the full file lists stay in the document).
    pub(crate) fn event_payload(
        &self,
        invocation_id: &InvocationId,
        profile_id: &ProfileId,
    ) -> tt_domain::event_payload::SkillScopesResolved {
        let skills: Vec<Value> = self
            .skills
            .iter()
            .map(|skill| {
                let mut entry = json!({
                    "id": skill.id,
                    "name": skill.name,
                    "scope": skill.scope,
                    "fileCount": skill.files.len(),
                });
                if !skill.overrides.is_empty()
                    && let Some(map) = entry.as_object_mut()
                {
                    map.insert("overrides".to_owned(), json!(skill.overrides));
                }
                entry
            })
            .collect();
        tt_domain::event_payload::SkillScopesResolved {
            invocation_id: invocation_id.clone(),
            profile_id: profile_id.clone(),
            scopes: json!(self.scopes),
            refs: json!(self.refs),
            effective_skills: Value::Array(skills),
        }
    }
}

/// The scopes an invocation of `profile` reads, in override order: `global`; then the preset
/// (the profile's own `preset.ref` under `ref`, the run's ambient preset under
/// `currentPromptSnapshot`, none under `none`); then the profile itself; then the run's ambient
/// character. Blank preset or character names are left out.
pub(crate) fn skill_scope_order(
    refs: &SkillScopeRefs,
    profile: &ResolvedProfile,
) -> Vec<SkillScope> {
    let binding = &profile.definition.preset;
    let preset = match binding.mode {
        PresetMode::Ref => binding.preset_ref.as_ref(),
        PresetMode::CurrentPromptSnapshot => refs.preset.as_ref(),
        PresetMode::None => None,
    };
    let mut scopes = vec![SkillScope::Global];
    if let Some(preset) =
        preset.filter(|p| !p.api_id.trim().is_empty() && !p.name.trim().is_empty())
    {
        scopes.push(SkillScope::preset(preset));
    }
    scopes.push(SkillScope::Profile(profile.id().clone()));
    if let Some(character) = refs
        .character_id
        .as_deref()
        .filter(|id| !id.trim().is_empty())
    {
        scopes.push(SkillScope::Character(character.to_owned()));
    }
    scopes
}

/// Whether `skills.visible` (`*` or the id) lists the skill and `skills.deny` (`*` or the id)
/// does not.
pub(crate) fn is_skill_visible(policy: &SkillsSection, id: &SkillId) -> bool {
    let names = |list: &[String]| {
        list.iter().any(|entry| {
            let entry = entry.trim();
            entry == "*" || entry == id.as_str()
        })
    };
    names(&policy.visible) && !names(&policy.deny)
}

/// Resolves the skills of an invocation of `profile` in a run with ambient `refs`. Any storage
/// failure is fatal (`ApplicationError::Storage`).
pub(crate) async fn resolve_invocation_skills(
    repo: &dyn SkillRepository,
    refs: &SkillScopeRefs,
    profile: &ResolvedProfile,
) -> ApplicationResult<ResolvedSkills> {
    let scopes = skill_scope_order(refs, profile);
    let mut by_id: BTreeMap<SkillId, EffectiveSkill> = BTreeMap::new();
    for scope in &scopes {
        for summary in repo.list_skills(scope).await? {
            let overrides = match by_id.remove(&summary.id) {
                Some(earlier) => {
                    let mut overrides = earlier.overrides;
                    overrides.push(earlier.scope);
                    overrides
                }
                None => Vec::new(),
            };
            by_id.insert(
                summary.id.clone(),
                EffectiveSkill {
                    id: summary.id,
                    name: summary.name,
                    description: summary.description,
                    scope: scope.clone(),
                    overrides,
                    files: summary.files,
                },
            );
        }
    }
    let policy = &profile.definition.skills;
    let skills = by_id
        .into_values()
        .filter(|skill| is_skill_visible(policy, &skill.id))
        .collect();
    Ok(ResolvedSkills {
        scopes,
        refs: refs.clone(),
        skills,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tt_domain::profile::{
        PresetRef, ProfileSource, default_writer_definition, resolve_profile,
    };
    use tt_ports::StorageError;
    use tt_testkit::fakes::{InMemorySkills, SkillOp};

    fn preset(api_id: &str, name: &str) -> PresetRef {
        PresetRef {
            api_id: api_id.into(),
            name: name.into(),
        }
    }

    fn profile(id: &str, mode: PresetMode, own: Option<PresetRef>) -> ResolvedProfile {
        let mut definition = default_writer_definition();
        definition.id = ProfileId::parse(id).unwrap();
        definition.preset.mode = mode;
        definition.preset.preset_ref = own;
        resolve_profile(definition, ProfileSource::built_in()).unwrap()
    }

    fn with_skills(
        mut profile: ResolvedProfile,
        visible: &[&str],
        deny: &[&str],
    ) -> ResolvedProfile {
        profile.definition.skills.visible = visible.iter().map(|s| (*s).to_owned()).collect();
        profile.definition.skills.deny = deny.iter().map(|s| (*s).to_owned()).collect();
        profile
    }

    fn refs(preset: Option<PresetRef>, character: Option<&str>) -> SkillScopeRefs {
        SkillScopeRefs {
            preset,
            character_id: character.map(str::to_owned),
        }
    }

    fn keys(scopes: &[SkillScope]) -> Vec<String> {
        scopes.iter().map(SkillScope::key).collect()
    }

    fn critic() -> SkillScope {
        SkillScope::Profile(ProfileId::parse("critic").unwrap())
    }

    #[test]
    fn scope_order_uses_invocation_preset_profile_and_run_character() {
        let ambient = refs(Some(preset("openai", "Ambient")), Some("alice"));
        let current = profile("critic", PresetMode::CurrentPromptSnapshot, None);
        assert_eq!(
            keys(&skill_scope_order(&ambient, &current)),
            [
                "global",
                "preset:openai/Ambient",
                "profile:critic",
                "character:alice"
            ]
        );
        let own = profile(
            "critic",
            PresetMode::Ref,
            Some(preset("claude", "Critic preset")),
        );
        assert_eq!(
            keys(&skill_scope_order(&ambient, &own)),
            [
                "global",
                "preset:claude/Critic preset",
                "profile:critic",
                "character:alice"
            ],
            "a `ref` profile reads its own preset, never the ambient one"
        );
    }

    #[test]
    fn scope_order_ignores_ambient_preset_when_profile_preset_mode_is_none() {
        let ambient = refs(Some(preset("openai", "Ambient")), Some("alice"));
        let none = profile("critic", PresetMode::None, None);
        assert_eq!(
            keys(&skill_scope_order(&ambient, &none)),
            ["global", "profile:critic", "character:alice"]
        );
        let current = profile("critic", PresetMode::CurrentPromptSnapshot, None);
        assert_eq!(
            keys(&skill_scope_order(&SkillScopeRefs::default(), &current)),
            ["global", "profile:critic"]
        );
        let blank = refs(Some(preset("openai", " ")), Some("  "));
        assert_eq!(
            keys(&skill_scope_order(&blank, &current)),
            ["global", "profile:critic"],
            "blank names are left out"
        );
    }

    #[test]
    fn visibility_is_star_or_ids_minus_deny() {
        let policy = |visible: &[&str], deny: &[&str]| SkillsSection {
            visible: visible.iter().map(|s| (*s).to_owned()).collect(),
            deny: deny.iter().map(|s| (*s).to_owned()).collect(),
            max_read_chars_per_call: 10,
            max_read_chars_per_run: 10,
        };
        let id = |raw: &str| SkillId::parse(raw).unwrap();
        assert!(is_skill_visible(&policy(&["*"], &[]), &id("a")));
        assert!(is_skill_visible(&policy(&["a", " b "], &[]), &id("b")));
        assert!(!is_skill_visible(&policy(&["a"], &[]), &id("b")));
        assert!(!is_skill_visible(&policy(&["*"], &["a"]), &id("a")));
        assert!(is_skill_visible(&policy(&["*"], &["a"]), &id("b")));
        assert!(!is_skill_visible(&policy(&["a"], &["*"]), &id("a")));
    }

    /// Global, preset, profile and character copies of `shared`, plus one skill per scope.
    fn seeded() -> Arc<InMemorySkills> {
        let skills = InMemorySkills::new();
        let scopes = [
            SkillScope::Global,
            SkillScope::preset(&preset("openai", "Ambient")),
            critic(),
            SkillScope::Character("alice".into()),
        ];
        for scope in &scopes {
            let kind = scope.kind();
            skills.put_skill(
                scope,
                "shared",
                &format!("---\ndescription: The {kind} copy.\n---\n"),
                &[(&format!("{kind}.md") as &str, "x")],
            );
            skills.put_skill(
                scope,
                &format!("only-{kind}"),
                &format!("# Only {kind}\n"),
                &[],
            );
        }
        skills
    }

    #[tokio::test]
    async fn later_scopes_override_earlier_ones_and_record_the_winner() {
        let skills = seeded();
        let current = profile("critic", PresetMode::CurrentPromptSnapshot, None);

        // Profile over global (no preset, no character).
        let resolved =
            resolve_invocation_skills(skills.as_ref(), &SkillScopeRefs::default(), &current)
                .await
                .unwrap();
        let shared = resolved.find(&SkillId::parse("shared").unwrap()).unwrap();
        assert_eq!(shared.scope, critic());
        assert_eq!(shared.overrides, [SkillScope::Global]);
        assert_eq!(shared.description, "The profile copy.");
        let files: Vec<&str> = shared.files.iter().map(SkillFilePath::as_str).collect();
        assert_eq!(
            files,
            ["SKILL.md", "profile.md"],
            "the winner's files, not a merge"
        );
        let ids: Vec<&str> = resolved.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["only-global", "only-profile", "shared"]);

        // All four scopes: the character comes last and wins.
        let ambient = refs(Some(preset("openai", "Ambient")), Some("alice"));
        let resolved = resolve_invocation_skills(skills.as_ref(), &ambient, &current)
            .await
            .unwrap();
        let shared = resolved.find(&SkillId::parse("shared").unwrap()).unwrap();
        assert_eq!(shared.scope, SkillScope::Character("alice".into()));
        assert_eq!(
            keys(&shared.overrides),
            ["global", "preset:openai/Ambient", "profile:critic"]
        );
        let ids: Vec<&str> = resolved.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "only-character",
                "only-global",
                "only-preset",
                "only-profile",
                "shared"
            ]
        );
        assert_eq!(resolved.refs, ambient);

        // Preset mode `none`: the ambient preset's skills are not seen.
        let none = profile("critic", PresetMode::None, None);
        let resolved = resolve_invocation_skills(skills.as_ref(), &ambient, &none)
            .await
            .unwrap();
        assert!(
            resolved
                .find(&SkillId::parse("only-preset").unwrap())
                .is_none()
        );
        assert_eq!(
            keys(
                &resolved
                    .find(&SkillId::parse("shared").unwrap())
                    .unwrap()
                    .overrides
            ),
            ["global", "profile:critic"]
        );
    }

    #[tokio::test]
    async fn visibility_filters_after_overrides() {
        let skills = seeded();
        let ambient = refs(Some(preset("openai", "Ambient")), Some("alice"));
        let base = profile("critic", PresetMode::CurrentPromptSnapshot, None);

        let explicit = with_skills(base.clone(), &["shared", "only-global", "nope"], &[]);
        let resolved = resolve_invocation_skills(skills.as_ref(), &ambient, &explicit)
            .await
            .unwrap();
        let ids: Vec<&str> = resolved.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["only-global", "shared"]);

        let denied = with_skills(base.clone(), &["*"], &["shared", "only-character"]);
        let resolved = resolve_invocation_skills(skills.as_ref(), &ambient, &denied)
            .await
            .unwrap();
        let ids: Vec<&str> = resolved.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["only-global", "only-preset", "only-profile"]);
        assert_eq!(
            resolved.scopes.len(),
            4,
            "scopes are recorded even when nothing is visible"
        );
    }

    #[tokio::test]
    async fn storage_failures_are_fatal() {
        let skills = seeded();
        skills.fail_next(
            SkillOp::List,
            StorageError::io("skills/global", "disk gone"),
        );
        let current = profile("critic", PresetMode::CurrentPromptSnapshot, None);
        let err = resolve_invocation_skills(skills.as_ref(), &SkillScopeRefs::default(), &current)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "agent.storage_io");
    }

    #[tokio::test]
    async fn document_and_event_payload() {
        let skills = seeded();
        let ambient = refs(Some(preset("openai", "Ambient")), Some("alice"));
        let current = with_skills(
            profile("critic", PresetMode::CurrentPromptSnapshot, None),
            &["shared", "only-global"],
            &[],
        );
        let resolved = resolve_invocation_skills(skills.as_ref(), &ambient, &current)
            .await
            .unwrap();
        let invocation = InvocationId::from_raw("inv_critic");
        let document = resolved.document(&invocation, current.id());
        insta::assert_json_snapshot!("resolved_skills_document", document);
        insta::assert_json_snapshot!(
            "skill_scopes_resolved_payload",
            resolved.event_payload(&invocation, current.id())
        );
        assert_eq!(
            ResolvedSkills::from_document(&serde_json::to_value(&document).unwrap()).unwrap(),
            resolved
        );
        assert_eq!(
            ResolvedSkills::from_document(&json!({"scopes": 3}))
                .unwrap_err()
                .code(),
            "agent.storage_corrupt"
        );
    }
}
