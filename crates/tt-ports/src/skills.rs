//! Where skills are stored: list the skills of one scope and read one file of a skill. Which
//! scopes apply to an agent, overrides and visibility are the application's job
//! (`tt_application::skills`); this port only loads what is stored, safely.

use async_trait::async_trait;
use tt_domain::skill::{SkillFilePath, SkillId, SkillScope, SkillSummary};

use crate::error::StorageResult;

#[async_trait]
pub trait SkillRepository: Send + Sync {
    /// The skills stored in `scope`, sorted by id; empty when the scope has no skills.
    ///
    /// A skill is a folder named by a valid [`SkillId`] that holds a `SKILL.md` of UTF-8 text
    /// (at most `MAX_SKILL_FILE_BYTES`); anything else in the scope is ignored. Its summary
    /// lists the files built by `SkillSummary::from_skill_md` from every regular file of at
    /// most `MAX_SKILL_FILE_BYTES` whose path is a valid [`SkillFilePath`] (hidden files and
    /// deeper folders are skipped). A blank scope name is `StorageError::Domain`
    /// (`skill.scope_invalid`); a stored link leading outside the skills area is
    /// `SymlinkEscape`.
    async fn list_skills(&self, scope: &SkillScope) -> StorageResult<Vec<SkillSummary>>;

    /// The text of one file of a skill. `NotFound` when the skill (folder with `SKILL.md`) or
    /// the file does not exist, `IsDirectory` for a folder, `Corrupt` when the file is not UTF-8
    /// text or is larger than `MAX_SKILL_FILE_BYTES`, `SymlinkEscape` for a link leading
    /// outside the skills area.
    async fn read_skill_file(&self, file: SkillFileRef<'_>) -> StorageResult<String>;

    /// Stores one text file of a skill (`SKILL.md` or a supporting file), replacing any
    /// previous one: how a host installs skills. A blank scope name is `StorageError::Domain`
    /// (`skill.scope_invalid`).
    async fn put_skill_file(&self, file: SkillFileRef<'_>, text: &str) -> StorageResult<()>;
}

/// One file of a skill, as the repository's reads and writes name it: the scope the skill is
/// stored in, the skill, and the file's path inside the skill's folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillFileRef<'a> {
    pub scope: &'a SkillScope,
    pub skill_id: &'a SkillId,
    pub path: &'a SkillFilePath,
}

impl<'a> SkillFileRef<'a> {
    /// The file `path` of skill `skill_id` in `scope`.
    pub fn new(scope: &'a SkillScope, skill_id: &'a SkillId, path: &'a SkillFilePath) -> Self {
        Self {
            scope,
            skill_id,
            path,
        }
    }
}
