//! Skills, one row per file (`tt_skill_files`: the scope's storage key, the skill id, the file's
//! path and its bytes), so every host sharing the database sees the skills a host installed.
//! A skill is a skill when its `SKILL.md` row holds UTF-8 text within the size limit, as in the
//! file store; listings are built by `SkillSummary::from_stored`.

use async_trait::async_trait;
use std::collections::BTreeMap;
use tt_domain::skill::{SkillFilePath, SkillId, SkillScope, SkillSummary};
use tt_ports::{SkillFileRef, SkillRepository, StorageError, StorageResult};

use crate::PostgresStore;
use crate::error::io;
use crate::retry::retrying;

/// The scope's key: the same segments the file store turns into folders.
fn scope_key(scope: &SkillScope) -> StorageResult<String> {
    Ok(scope.storage_segments()?.join("/"))
}

/// One skill's rows: its `SKILL.md` bytes and every file with its size.
#[derive(Default)]
struct StoredSkill {
    skill_md: Option<Vec<u8>>,
    files: Vec<(SkillFilePath, u64)>,
}

#[async_trait]
impl SkillRepository for PostgresStore {
    async fn list_skills(&self, scope: &SkillScope) -> StorageResult<Vec<SkillSummary>> {
        let key = scope_key(scope)?;
        let rows = self
            .rows(
                "SELECT skill_id, path, octet_length(content),
                        CASE WHEN path = 'SKILL.md' THEN content END
                 FROM tt_skill_files WHERE scope = $1 ORDER BY skill_id, path",
                &[&key],
                &format!("the skills of {scope}"),
            )
            .await?;
        let mut skills: BTreeMap<SkillId, StoredSkill> = BTreeMap::new();
        for row in &rows {
            // Rows no valid id or path names are not part of any skill, as in the file store.
            let (Ok(id), Ok(path)) = (
                SkillId::parse(row.get::<_, &str>(0)),
                SkillFilePath::parse(row.get::<_, &str>(1)),
            ) else {
                continue;
            };
            let size = u64::try_from(row.get::<_, i32>(2)).unwrap_or(u64::MAX);
            let skill = skills.entry(id).or_default();
            if let Some(bytes) = row.get::<_, Option<Vec<u8>>>(3) {
                skill.skill_md = Some(bytes);
            }
            skill.files.push((path, size));
        }
        Ok(skills
            .into_iter()
            .filter_map(|(id, skill)| {
                SkillSummary::from_stored(id, skill.skill_md.as_deref(), skill.files)
            })
            .collect())
    }

    async fn read_skill_file(&self, file: SkillFileRef<'_>) -> StorageResult<String> {
        let (scope, skill_id, path) = (file.scope, file.skill_id, file.path);
        let key = scope_key(scope)?;
        let shown = format!("skills/{key}/{skill_id}/{path}");
        let row = self
            .one_row(
                "SELECT EXISTS (SELECT 1 FROM tt_skill_files
                                WHERE scope = $1 AND skill_id = $2 AND path = 'SKILL.md'),
                        (SELECT content FROM tt_skill_files
                         WHERE scope = $1 AND skill_id = $2 AND path = $3),
                        EXISTS (SELECT 1 FROM tt_skill_files
                                WHERE scope = $1 AND skill_id = $2
                                  AND starts_with(path, $3 || '/'))",
                &[&key, &skill_id.as_str(), &path.as_str()],
                &shown,
            )
            .await?;
        if !row.get::<_, bool>(0) {
            return Err(StorageError::not_found(format!(
                "skill {skill_id} in {scope}"
            )));
        }
        let Some(bytes) = row.get::<_, Option<Vec<u8>>>(1) else {
            return Err(if row.get::<_, bool>(2) {
                StorageError::IsDirectory { path: shown }
            } else {
                StorageError::not_found(format!("skill file {shown}"))
            });
        };
        tt_ports::store_inputs::skill_file_text(shown, bytes)
    }

    async fn put_skill_file(&self, file: SkillFileRef<'_>, text: &str) -> StorageResult<()> {
        retrying(|_| async move { self.put_skill_bytes(file, text.as_bytes()).await }).await
    }
}

impl PostgresStore {
    /// Stores one file of a skill as bytes, replacing any previous one (what `put_skill_file`
    /// does with text; tests store bytes that are not text with it).
    pub async fn put_skill_bytes(&self, file: SkillFileRef<'_>, bytes: &[u8]) -> StorageResult<()> {
        let (scope, skill_id, path) = (file.scope, file.skill_id, file.path);
        let key = scope_key(scope)?;
        let conn = self.pool.get().await?;
        conn.execute(
            "INSERT INTO tt_skill_files (scope, skill_id, path, content) VALUES ($1, $2, $3, $4)
             ON CONFLICT (scope, skill_id, path) DO UPDATE SET content = EXCLUDED.content",
            &[&key, &skill_id.as_str(), &path.as_str(), &bytes],
        )
        .await
        .map_err(io(format!("skills/{key}/{skill_id}/{path}")))?;
        Ok(())
    }
}
