//! Skills: folders of instructions (`SKILL.md` plus other text files) an agent can list, search
//! and read. Holds skill ids, safe relative file paths, the scopes skills live in (global, preset,
//! profile, character), the run's ambient scope refs, `SKILL.md` frontmatter and skill summaries.

use crate::error_codes;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::ids::{
    ProfileId, is_valid_storage_segment, parse_in_profile_id_charset, parsed_string_conversions,
};
use crate::text::sha256_hex;
use crate::{DomainError, DomainResult};

/// A preset a profile's prompt is bound to, or a skill scope names (the host's API id and the
/// preset's name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PresetRef {
    pub api_id: String,
    pub name: String,
}

/// The file every skill folder must contain; the default of `skill.read`.
pub const SKILL_MD: &str = "SKILL.md";
/// Most files listed for one skill (in path order); later ones are ignored.
pub const MAX_SKILL_FILES: usize = 256;
/// Largest skill file (UTF-8 bytes) that is listed and read.
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;
/// How many folder levels a skill file may sit below its skill folder (`a/b/c/file.md`).
pub const MAX_SKILL_FOLDER_DEPTH: usize = 3;
/// Longest description derived from a `SKILL.md` without a frontmatter `description`.
pub const MAX_DERIVED_DESCRIPTION_CHARS: usize = 200;

/// A skill id: the name of its folder, in the profile-id charset (lowercase ASCII letters,
/// digits, `-`, `_`, 1 to 128 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SkillId(String);

impl SkillId {
    pub fn parse(raw: &str) -> DomainResult<Self> {
        parse_in_profile_id_charset(raw, "skill id", error_codes::SKILL_ID_INVALID).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

parsed_string_conversions!(SkillId);

/// A file inside a skill folder, relative to it: `/`-separated, 1 to
/// `MAX_SKILL_FOLDER_DEPTH + 1` segments, none empty, `.`, `..` or hidden (leading `.`), no
/// backslash, colon or control character. Such a path can never leave its skill folder.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SkillFilePath(String);

impl SkillFilePath {
    /// Parses a relative path; a leading `./` is accepted and dropped.
    pub fn parse(raw: &str) -> DomainResult<Self> {
        let trimmed = raw.strip_prefix("./").unwrap_or(raw);
        let invalid = |why: &str| {
            DomainError::new(
                error_codes::SKILL_FILE_PATH_INVALID,
                format!(
                    "skill file path `{}` {why}",
                    raw.chars().take(80).collect::<String>()
                ),
            )
        };
        if trimmed.is_empty() {
            return Err(invalid("is empty"));
        }
        if trimmed.len() > 1024 {
            return Err(invalid("is too long"));
        }
        let segments: Vec<&str> = trimmed.split('/').collect();
        if segments.len() > MAX_SKILL_FOLDER_DEPTH + 1 {
            return Err(invalid(&format!(
                "is nested deeper than {MAX_SKILL_FOLDER_DEPTH} folders"
            )));
        }
        for segment in segments {
            if !is_valid_file_segment(segment) {
                return Err(invalid(
                    "must be relative, with no empty, `.`, `..` or hidden parts",
                ));
            }
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// `SKILL.md`.
    pub fn skill_md() -> Self {
        Self(SKILL_MD.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path's segments, in order.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

/// One segment of a skill file path (a file or folder name).
pub fn is_valid_file_segment(segment: &str) -> bool {
    !segment.is_empty()
        && !segment.starts_with('.')
        && segment.len() <= 255
        && !segment
            .chars()
            .any(|c| c == '\\' || c == ':' || c == '/' || c.is_control())
}

parsed_string_conversions!(SkillFilePath);

/// Where a set of skills lives. Resolution order is global → preset → profile → character;
/// a later scope overrides an earlier one's skill with the same id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "ScopeRepr", try_from = "ScopeRepr")]
pub enum SkillScope {
    Global,
    /// The skills of one prompt preset, named by the host.
    Preset {
        api_id: String,
        name: String,
    },
    Profile(ProfileId),
    /// The skills of one character, named by the host.
    Character(String),
}

/// Serialized form: `{"kind":"global"}`, `{"kind":"preset","apiId","name"}`,
/// `{"kind":"profile","profileId"}`, `{"kind":"character","characterId"}`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
enum ScopeRepr {
    Global,
    #[serde(rename_all = "camelCase")]
    Preset {
        api_id: String,
        name: String,
    },
    #[serde(rename_all = "camelCase")]
    Profile {
        profile_id: ProfileId,
    },
    #[serde(rename_all = "camelCase")]
    Character {
        character_id: String,
    },
}

impl From<SkillScope> for ScopeRepr {
    fn from(value: SkillScope) -> Self {
        match value {
            SkillScope::Global => ScopeRepr::Global,
            SkillScope::Preset { api_id, name } => ScopeRepr::Preset { api_id, name },
            SkillScope::Profile(profile_id) => ScopeRepr::Profile { profile_id },
            SkillScope::Character(character_id) => ScopeRepr::Character { character_id },
        }
    }
}

impl From<ScopeRepr> for SkillScope {
    fn from(value: ScopeRepr) -> Self {
        match value {
            ScopeRepr::Global => SkillScope::Global,
            ScopeRepr::Preset { api_id, name } => SkillScope::Preset { api_id, name },
            ScopeRepr::Profile { profile_id } => SkillScope::Profile(profile_id),
            ScopeRepr::Character { character_id } => SkillScope::Character(character_id),
        }
    }
}

impl SkillScope {
    pub fn preset(preset: &PresetRef) -> Self {
        SkillScope::Preset {
            api_id: preset.api_id.clone(),
            name: preset.name.clone(),
        }
    }

    /// `global`, `preset`, `profile` or `character`.
    pub fn kind(&self) -> &'static str {
        match self {
            SkillScope::Global => "global",
            SkillScope::Preset { .. } => "preset",
            SkillScope::Profile(_) => "profile",
            SkillScope::Character(_) => "character",
        }
    }

    /// A stable, human-readable key: `global`, `preset:<apiId>/<name>`, `profile:<id>`,
    /// `character:<id>`. For logs and maps; never a file path.
    pub fn key(&self) -> String {
        match self {
            SkillScope::Global => "global".to_owned(),
            SkillScope::Preset { api_id, name } => format!("preset:{api_id}/{name}"),
            SkillScope::Profile(id) => format!("profile:{id}"),
            SkillScope::Character(id) => format!("character:{id}"),
        }
    }

    /// The scope's folder below the skills root as safe path segments:
    /// `global`, `presets/<apiId>/<name>`, `profiles/<profileId>`, `characters/<characterId>`,
    /// each host-chosen name mapped by [`skill_storage_segment`]. Fails
    /// (`skill.scope_invalid`) for a blank name.
    pub fn storage_segments(&self) -> DomainResult<Vec<String>> {
        Ok(match self {
            SkillScope::Global => vec!["global".to_owned()],
            SkillScope::Preset { api_id, name } => vec![
                "presets".to_owned(),
                skill_storage_segment(api_id)?,
                skill_storage_segment(name)?,
            ],
            SkillScope::Profile(id) => vec!["profiles".to_owned(), id.as_str().to_owned()],
            SkillScope::Character(id) => {
                vec!["characters".to_owned(), skill_storage_segment(id)?]
            }
        })
    }
}

impl fmt::Display for SkillScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// Maps a host-chosen name (preset api id or name, character id) to one safe folder name.
///
/// A name that already is a storage segment (`[A-Za-z0-9_-]{1,128}`) is used as is. Any other
/// name becomes a readable slug (letters, digits, `-`, `_` kept, runs of anything else turned
/// into one `_`, at most 64 chars) plus `-` and 12 hex digits of the name's sha256, so distinct
/// names stay distinct and `..`, `/` or `\` can never reach a path. Blank names are refused.
pub fn skill_storage_segment(raw: &str) -> DomainResult<String> {
    if raw.trim().is_empty() {
        return Err(DomainError::new(
            error_codes::SKILL_SCOPE_INVALID,
            "a skill scope name must not be blank",
        ));
    }
    if is_valid_storage_segment(raw) {
        return Ok(raw.to_owned());
    }
    let mut slug = String::new();
    for ch in raw.chars() {
        if ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' {
            slug.push(ch);
        } else if !slug.ends_with('_') {
            slug.push('_');
        }
        if slug.len() >= 64 {
            break;
        }
    }
    let slug = slug.trim_matches('_');
    let digest = sha256_hex(raw.as_bytes());
    let hash = digest.get(..12).unwrap_or(&digest);
    Ok(if slug.is_empty() {
        hash.to_owned()
    } else {
        format!("{slug}-{hash}")
    })
}

/// The run's ambient skill scopes, captured when the run starts: the prompt preset in use and
/// the character the conversation is with. Serialized `{preset?: {apiId, name}, characterId?}`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillScopeRefs {
    pub preset: Option<PresetRef>,
    pub character_id: Option<String>,
}

/// The `name` and `description` of a `SKILL.md` frontmatter block, and where the body starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillFrontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Byte offset of the markdown body (0 when there is no frontmatter).
    pub body_start: usize,
}

/// Parses an optional frontmatter block: the text starts with a `---` line and a later `---`
/// line closes it; in between, `key: value` lines (values may be quoted with `"` or `'`).
/// Only `name` and `description` are read; other keys, comments and malformed lines are
/// ignored. Without a closing line there is no frontmatter.
pub fn parse_skill_frontmatter(text: &str) -> SkillFrontmatter {
    let without_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - without_bom.len();
    let mut lines = LineIter::new(without_bom);
    let Some((first, _)) = lines.next() else {
        return SkillFrontmatter::default();
    };
    if first.trim_end() != "---" {
        return SkillFrontmatter::default();
    }
    let mut found = SkillFrontmatter::default();
    for (line, end) in lines {
        if line.trim_end() == "---" {
            found.body_start = bom + end;
            return found;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        if value.is_empty() {
            continue;
        }
        match key.trim() {
            "name" => found.name = Some(value.to_owned()),
            "description" => found.description = Some(value.to_owned()),
            _ => {}
        }
    }
    SkillFrontmatter::default()
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner.trim();
        }
    }
    value
}

/// Lines of a text with the byte offset just past each line's terminator.
struct LineIter<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> LineIter<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }
}

impl<'a> Iterator for LineIter<'a> {
    type Item = (&'a str, usize);
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.text.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let (line, advance) = match rest.find('\n') {
            Some(index) => (rest.get(..index).unwrap_or(""), index + 1),
            None => (rest, rest.len()),
        };
        self.pos += advance;
        Some((line.strip_suffix('\r').unwrap_or(line), self.pos))
    }
}

/// What a scope's listing says about one skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillSummary {
    pub id: SkillId,
    pub name: String,
    pub description: String,
    /// Every listed file, sorted by path: `SKILL.md` always, and the first others in path order
    /// up to [`MAX_SKILL_FILES`] in all.
    pub files: Vec<SkillFilePath>,
}

impl SkillSummary {
    /// The summary of a skill as a store holds it: `skill_md` is its `SKILL.md` (none, over
    /// [`MAX_SKILL_FILE_BYTES`] or not UTF-8: not a skill, `None`), `files` every file with its
    /// size (those over the limit are not listed). Stores that keep skills as rows rather than
    /// folders (the in-memory fake, PostgreSQL) build their listings with it.
    pub fn from_stored(
        id: SkillId,
        skill_md: Option<&[u8]>,
        files: impl IntoIterator<Item = (SkillFilePath, u64)>,
    ) -> Option<Self> {
        let skill_md = skill_md
            .filter(|bytes| bytes.len() as u64 <= MAX_SKILL_FILE_BYTES)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())?;
        let listed = files
            .into_iter()
            .filter(|(_, size)| *size <= MAX_SKILL_FILE_BYTES)
            .map(|(path, _)| path)
            .collect();
        Some(Self::from_skill_md(id, skill_md, listed))
    }

    /// Builds a summary from the skill's `SKILL.md` text and its file list (sorted, capped and
    /// completed with `SKILL.md` here). `name` is the frontmatter `name`, else the first `# ` heading, else the id;
    /// `description` is the frontmatter `description`, else the body's first line of prose
    /// (at most [`MAX_DERIVED_DESCRIPTION_CHARS`] chars), else empty.
    pub fn from_skill_md(id: SkillId, skill_md: &str, mut files: Vec<SkillFilePath>) -> Self {
        let skill_md_path = SkillFilePath::skill_md();
        files.retain(|file| *file != skill_md_path);
        files.sort();
        files.dedup();
        files.truncate(MAX_SKILL_FILES - 1);
        files.push(skill_md_path);
        files.sort();
        let front = parse_skill_frontmatter(skill_md);
        let body = skill_md.get(front.body_start..).unwrap_or("");
        let heading = body
            .lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix("# "))
            .map(str::trim)
            .filter(|heading| !heading.is_empty());
        let name = front
            .name
            .or_else(|| heading.map(str::to_owned))
            .unwrap_or_else(|| id.as_str().to_owned());
        let description = front
            .description
            .or_else(|| first_prose_line(body))
            .unwrap_or_default();
        Self {
            id,
            name: one_line(&name),
            description: one_line(&description),
            files,
        }
    }
}

/// The first non-empty line that is not a heading, fence, rule or HTML comment, shortened.
fn first_prose_line(body: &str) -> Option<String> {
    let line = body.lines().map(str::trim).find(|line| {
        !line.is_empty()
            && !line.starts_with('#')
            && !line.starts_with("```")
            && !line.starts_with("<!--")
            && !line.starts_with("---")
    })?;
    let mut chars = line.chars();
    let short: String = chars.by_ref().take(MAX_DERIVED_DESCRIPTION_CHARS).collect();
    Some(if chars.next().is_some() {
        format!("{}…", short.trim_end())
    } else {
        short
    })
}

/// Collapses all whitespace (line breaks included) to single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_ids_use_the_profile_charset() {
        assert!(SkillId::parse("scene-pacing_2").is_ok());
        for bad in ["", "Scene", "a b", "a/b", "..", &"a".repeat(129)] {
            assert_eq!(SkillId::parse(bad).unwrap_err().code, "skill.id_invalid");
        }
        assert!(serde_json::from_str::<SkillId>("\"../x\"").is_err());
    }

    #[test]
    fn file_paths_stay_inside_the_skill() {
        for good in [
            "SKILL.md",
            "./SKILL.md",
            "refs/a.md",
            "a/b/c/d.txt",
            "notes (v2).md",
        ] {
            assert!(SkillFilePath::parse(good).is_ok(), "{good}");
        }
        assert_eq!(SkillFilePath::parse("./x.md").unwrap().as_str(), "x.md");
        for bad in [
            "",
            "/etc/passwd",
            "../x.md",
            "a/../b.md",
            "a//b.md",
            "a/./b.md",
            ".hidden",
            "refs/.git/config",
            "a\\b.md",
            "c:x",
            "a/b/c/d/e.md",
            "a/",
            "line\nbreak",
        ] {
            assert_eq!(
                SkillFilePath::parse(bad).unwrap_err().code,
                "skill.file_path_invalid",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn scopes_serialize_with_a_kind_tag_and_round_trip() {
        let scopes = [
            SkillScope::Global,
            SkillScope::Preset {
                api_id: "openai".into(),
                name: "My Preset".into(),
            },
            SkillScope::Profile(ProfileId::parse("critic").unwrap()),
            SkillScope::Character("alice".into()),
        ];
        let json = serde_json::to_value(&scopes).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"kind": "global"},
                {"kind": "preset", "apiId": "openai", "name": "My Preset"},
                {"kind": "profile", "profileId": "critic"},
                {"kind": "character", "characterId": "alice"},
            ])
        );
        let back: Vec<SkillScope> = serde_json::from_value(json).unwrap();
        assert_eq!(back, scopes);
        let keys: Vec<String> = scopes.iter().map(SkillScope::key).collect();
        assert_eq!(
            keys,
            [
                "global",
                "preset:openai/My Preset",
                "profile:critic",
                "character:alice"
            ]
        );
        assert!(
            serde_json::from_value::<SkillScope>(
                serde_json::json!({"kind": "profile", "profileId": "Bad Id"})
            )
            .is_err()
        );
    }

    #[test]
    fn storage_segments_are_safe_and_distinct() {
        assert_eq!(skill_storage_segment("openai").unwrap(), "openai");
        assert_eq!(skill_storage_segment("char_01-A").unwrap(), "char_01-A");
        let spaced = skill_storage_segment("My Preset (v2)").unwrap();
        assert!(spaced.starts_with("My_Preset_v2-"), "{spaced}");
        for raw in [
            "..",
            ".",
            "../../etc",
            "a/b",
            "a\\b",
            "小说预设",
            "My Preset (v2)",
            &"x".repeat(200),
        ] {
            let segment = skill_storage_segment(raw).unwrap();
            assert!(is_valid_storage_segment(&segment), "{raw:?} -> {segment}");
        }
        assert_ne!(
            skill_storage_segment("a b").unwrap(),
            skill_storage_segment("a/b").unwrap()
        );
        assert_eq!(
            skill_storage_segment("  ").unwrap_err().code,
            "skill.scope_invalid"
        );
        assert_eq!(
            SkillScope::Preset {
                api_id: "openai".into(),
                name: "Default".into()
            }
            .storage_segments()
            .unwrap(),
            ["presets", "openai", "Default"]
        );
        assert!(
            SkillScope::Character(String::new())
                .storage_segments()
                .is_err()
        );
    }

    #[test]
    fn refs_use_the_contract_keys() {
        let refs = SkillScopeRefs {
            preset: Some(PresetRef {
                api_id: "openai".into(),
                name: "Default".into(),
            }),
            character_id: Some("alice".into()),
        };
        assert_eq!(
            serde_json::to_value(&refs).unwrap(),
            serde_json::json!({"preset": {"apiId": "openai", "name": "Default"}, "characterId": "alice"})
        );
        assert_eq!(
            serde_json::to_value(SkillScopeRefs::default()).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn frontmatter_is_parsed_when_closed() {
        let text = "---\nname: Scene pacing\ndescription: \"Keep scenes: moving\"\nother: x\n---\n# Title\nBody\n";
        let front = parse_skill_frontmatter(text);
        assert_eq!(front.name.as_deref(), Some("Scene pacing"));
        assert_eq!(front.description.as_deref(), Some("Keep scenes: moving"));
        assert_eq!(text.get(front.body_start..), Some("# Title\nBody\n"));

        let crlf = "\u{feff}---\r\nname: 'Quoted'\r\n---\r\nBody";
        let front = parse_skill_frontmatter(crlf);
        assert_eq!(front.name.as_deref(), Some("Quoted"));
        assert_eq!(crlf.get(front.body_start..), Some("Body"));

        let unclosed = "---\nname: Nope\n# Body";
        assert_eq!(
            parse_skill_frontmatter(unclosed),
            SkillFrontmatter::default()
        );
        assert_eq!(parse_skill_frontmatter(""), SkillFrontmatter::default());
        assert_eq!(
            parse_skill_frontmatter("# No front\n---\n"),
            SkillFrontmatter::default()
        );
        let empty_values = parse_skill_frontmatter("---\nname:\ndescription: ''\n---\n");
        assert_eq!(empty_values.name, None);
        assert_eq!(empty_values.description, None);
    }

    #[test]
    fn summaries_fall_back_to_heading_prose_and_id() {
        let id = SkillId::parse("pacing").unwrap();
        let files = vec![
            SkillFilePath::parse("refs/b.md").unwrap(),
            SkillFilePath::skill_md(),
            SkillFilePath::parse("refs/a.md").unwrap(),
        ];
        let summary = SkillSummary::from_skill_md(
            id.clone(),
            "# Pacing guide\n\n<!-- note -->\nCut scenes   that do\nnot move.\n",
            files,
        );
        assert_eq!(summary.name, "Pacing guide");
        assert_eq!(summary.description, "Cut scenes that do");
        let names: Vec<&str> = summary.files.iter().map(SkillFilePath::as_str).collect();
        assert_eq!(names, ["SKILL.md", "refs/a.md", "refs/b.md"]);

        let bare = SkillSummary::from_skill_md(id.clone(), "", vec![]);
        assert_eq!(
            (bare.name.as_str(), bare.description.as_str()),
            ("pacing", "")
        );
        assert_eq!(bare.files, [SkillFilePath::skill_md()]);

        let long = format!("{}\n", "word ".repeat(100));
        let cut = SkillSummary::from_skill_md(id, &long, vec![]);
        assert!(cut.description.ends_with('…'));
        assert!(cut.description.chars().count() <= MAX_DERIVED_DESCRIPTION_CHARS + 1);
    }

    #[test]
    fn summaries_cap_the_file_list() {
        let files: Vec<SkillFilePath> = (0..MAX_SKILL_FILES + 10)
            .rev()
            .map(|n| SkillFilePath::parse(&format!("f{n:04}.md")).unwrap())
            .collect();
        let summary = SkillSummary::from_skill_md(SkillId::parse("many").unwrap(), "x", files);
        assert_eq!(summary.files.len(), MAX_SKILL_FILES);
        assert_eq!(summary.files[0].as_str(), "SKILL.md");
        assert_eq!(summary.files[1].as_str(), "f0000.md");
        assert_eq!(summary.files[MAX_SKILL_FILES - 1].as_str(), "f0254.md");
    }
}
