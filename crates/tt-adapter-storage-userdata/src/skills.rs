//! `SkillRepository` over `skills/` under the data root: `global/<id>/`,
//! `presets/<apiId>/<name>/<id>/`, `profiles/<profileId>/<id>/`, `characters/<characterId>/<id>/`
//! (host-chosen names mapped by `skill_storage_segment`). Read-only for agents; every path is
//! resolved and must stay inside the (canonical) skills root, or it is a `SymlinkEscape`.

use async_trait::async_trait;
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};
use tt_domain::skill::{
    MAX_SKILL_FILE_BYTES, MAX_SKILL_FILES, MAX_SKILL_FOLDER_DEPTH, SKILL_MD, SkillFilePath,
    SkillId, SkillScope, SkillSummary, is_valid_file_segment,
};
use tt_ports::{SkillFileRef, SkillRepository, StorageError, StorageResult};

use crate::fsutil::{self, is_missing, write_atomic};
use crate::layout::join_relative;
use crate::{Inner, UserDataStore};

const SKILLS_DIR: &str = "skills";

/// The skills root and its canonical form, the boundary no skill path may leave. The root
/// itself may be a link (a host may keep its skill library elsewhere); nothing below it may.
struct SkillsBase {
    root: PathBuf,
    canonical: PathBuf,
}

impl SkillsBase {
    /// `None` when the data root has no `skills/` folder yet.
    fn open(inner: &Inner) -> StorageResult<Option<Self>> {
        let root = inner.layout.root().join(SKILLS_DIR);
        match fs::canonicalize(&root) {
            Ok(canonical) => Ok(Some(Self { root, canonical })),
            Err(err) if is_missing(&err) => Ok(None),
            Err(err) => Err(StorageError::io(root.display().to_string(), err)),
        }
    }

    /// The physical folder of a scope and its logical name (`skills/...`) for messages.
    fn scope_dir(&self, scope: &SkillScope) -> StorageResult<(PathBuf, String)> {
        let relative = scope.storage_segments()?.join("/");
        Ok((
            join_relative(&self.root, &relative),
            format!("{SKILLS_DIR}/{relative}"),
        ))
    }

    /// Follows every link in `physical`; `None` when it does not exist (a dangling link
    /// included), `SymlinkEscape` when it resolves outside the skills root.
    fn resolve(&self, physical: &Path, shown: &str) -> StorageResult<Option<Metadata>> {
        let real = match fs::canonicalize(physical) {
            Ok(real) => real,
            Err(err) if is_missing(&err) => return Ok(None),
            Err(err) => return Err(StorageError::io(shown.to_owned(), err)),
        };
        if !real.starts_with(&self.canonical) {
            return Err(StorageError::SymlinkEscape {
                path: shown.to_owned(),
            });
        }
        match fs::metadata(&real) {
            Ok(meta) => Ok(Some(meta)),
            Err(err) if is_missing(&err) => Ok(None),
            Err(err) => Err(StorageError::io(shown.to_owned(), err)),
        }
    }

    /// Refuses `physical` when its deepest existing ancestor (itself included) resolves outside
    /// the skills root, or is a dangling link (creating below it would create its target).
    fn ensure_existing_ancestor_inside(&self, physical: &Path, shown: &str) -> StorageResult<()> {
        let mut candidate = physical;
        loop {
            if fs::symlink_metadata(candidate).is_ok() {
                return match self.resolve(candidate, shown)? {
                    Some(_) => Ok(()),
                    None => Err(StorageError::SymlinkEscape {
                        path: shown.to_owned(),
                    }),
                };
            }
            candidate = candidate
                .parent()
                .ok_or_else(|| StorageError::SymlinkEscape {
                    path: shown.to_owned(),
                })?;
        }
    }

    fn is_dir(&self, physical: &Path, shown: &str) -> StorageResult<bool> {
        Ok(self
            .resolve(physical, shown)?
            .is_some_and(|meta| meta.is_dir()))
    }
}

/// Names in `dir` that can be part of a skill path (UTF-8, not hidden, no separators), sorted.
fn entry_names(dir: &Path, shown: &str) -> StorageResult<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if is_missing(&err) => return Ok(Vec::new()),
        Err(err) => return Err(StorageError::io(shown.to_owned(), err)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| StorageError::io(shown.to_owned(), err))?;
        if let Some(name) = entry.file_name().to_str()
            && is_valid_file_segment(name)
        {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// The skill's text files in path order, stopping once it has one more than the summary keeps
/// (so `SkillSummary::from_skill_md` sees the same files as with a full walk).
fn walk_skill_files(
    base: &SkillsBase,
    dir: &Path,
    prefix: &str,
    shown: &str,
    folder_depth: usize,
    out: &mut Vec<SkillFilePath>,
) -> StorageResult<()> {
    let mut entries = Vec::new();
    for name in entry_names(dir, shown)? {
        let physical = dir.join(&name);
        let child_shown = format!("{shown}/{name}");
        let Some(meta) = base.resolve(&physical, &child_shown)? else {
            continue;
        };
        let relative = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        // A folder sorts as `name/`, so visiting in this order yields full paths in order.
        let sort_key = if meta.is_dir() {
            format!("{name}/")
        } else {
            name
        };
        entries.push((sort_key, physical, relative, child_shown, meta));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, physical, relative, child_shown, meta) in entries {
        if out.len() > MAX_SKILL_FILES {
            break;
        }
        if meta.is_dir() {
            if folder_depth < MAX_SKILL_FOLDER_DEPTH {
                walk_skill_files(
                    base,
                    &physical,
                    &relative,
                    &child_shown,
                    folder_depth + 1,
                    out,
                )?;
            }
        } else if meta.is_file()
            && meta.len() <= MAX_SKILL_FILE_BYTES
            && let Ok(path) = SkillFilePath::parse(&relative)
        {
            out.push(path);
        }
    }
    Ok(())
}

/// The text of `SKILL.md` when `dir` is a skill; `None` otherwise.
fn skill_md_text(base: &SkillsBase, dir: &Path, shown: &str) -> StorageResult<Option<String>> {
    let physical = dir.join(SKILL_MD);
    let shown = format!("{shown}/{SKILL_MD}");
    match base.resolve(&physical, &shown)? {
        Some(meta) if meta.is_file() && meta.len() <= MAX_SKILL_FILE_BYTES => {
            let bytes = fs::read(&physical).map_err(|err| fsutil::io_error(shown, &err))?;
            Ok(String::from_utf8(bytes).ok())
        }
        Some(_) | None => Ok(None),
    }
}

/// Whether the folder of `scope` (or the skills root) does not exist, by one `lstat`. Only
/// "not found" counts: anything else (a link, a file in the way, an error) is left to
/// [`list_sync`], which resolves and checks it.
fn scope_folder_is_missing(inner: &Inner, scope: &SkillScope) -> StorageResult<bool> {
    let relative = scope.storage_segments()?.join("/");
    let folder = join_relative(&inner.layout.root().join(SKILLS_DIR), &relative);
    Ok(matches!(
        fs::symlink_metadata(&folder),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound
    ))
}

fn list_sync(inner: &Inner, scope: &SkillScope) -> StorageResult<Vec<SkillSummary>> {
    // A blank scope name is refused even before any skill is stored.
    scope.storage_segments()?;
    let Some(base) = SkillsBase::open(inner)? else {
        return Ok(Vec::new());
    };
    let (scope_dir, shown) = base.scope_dir(scope)?;
    if !base.is_dir(&scope_dir, &shown)? {
        return Ok(Vec::new());
    }
    let mut skills = Vec::new();
    for name in entry_names(&scope_dir, &shown)? {
        let Ok(id) = SkillId::parse(&name) else {
            continue;
        };
        let dir = scope_dir.join(&name);
        let skill_shown = format!("{shown}/{name}");
        if !base.is_dir(&dir, &skill_shown)? {
            continue;
        }
        let Some(skill_md) = skill_md_text(&base, &dir, &skill_shown)? else {
            continue;
        };
        let mut files = Vec::new();
        walk_skill_files(&base, &dir, "", &skill_shown, 0, &mut files)?;
        skills.push(SkillSummary::from_skill_md(id, &skill_md, files));
    }
    Ok(skills)
}

fn read_sync(
    inner: &Inner,
    scope: &SkillScope,
    skill_id: &SkillId,
    path: &SkillFilePath,
) -> StorageResult<String> {
    // A blank scope name is refused even before any skill is stored.
    scope.storage_segments()?;
    let missing_skill = || StorageError::not_found(format!("skill {skill_id} in {scope}"));
    let Some(base) = SkillsBase::open(inner)? else {
        return Err(missing_skill());
    };
    let (scope_dir, shown) = base.scope_dir(scope)?;
    let dir = scope_dir.join(skill_id.as_str());
    let skill_shown = format!("{shown}/{skill_id}");
    let skill_md = dir.join(SKILL_MD);
    let is_skill = base
        .resolve(&skill_md, &format!("{skill_shown}/{SKILL_MD}"))?
        .is_some_and(|meta| meta.is_file());
    if !is_skill {
        return Err(missing_skill());
    }
    let physical = join_relative(&dir, path.as_str());
    let file_shown = format!("{skill_shown}/{path}");
    let meta = base
        .resolve(&physical, &file_shown)?
        .ok_or_else(|| StorageError::not_found(format!("skill file {file_shown}")))?;
    if meta.is_dir() {
        return Err(StorageError::IsDirectory { path: file_shown });
    }
    if !meta.is_file() {
        return Err(StorageError::not_found(format!("skill file {file_shown}")));
    }
    tt_ports::store_inputs::check_skill_file_size(&file_shown, meta.len())?;
    let bytes = fs::read(&physical).map_err(|err| fsutil::io_error(file_shown.clone(), &err))?;
    tt_ports::store_inputs::skill_file_text(file_shown, bytes)
}

impl UserDataStore {
    /// Writes one file of a skill (creating its folders), replacing any previous one. Blocking
    /// (small synchronous file write); meant for setup code, hosts that install skills, and
    /// tests. Refuses to write through a link that leaves the skills root.
    pub fn put_skill_file(&self, file: SkillFileRef<'_>, text: &str) -> StorageResult<()> {
        let (scope, skill_id, path) = (file.scope, file.skill_id, file.path);
        let root = self.inner.layout.root().join(SKILLS_DIR);
        fsutil::create_dir_all(&root)?;
        let Some(base) = SkillsBase::open(&self.inner)? else {
            return Err(StorageError::not_found(SKILLS_DIR));
        };
        let (scope_dir, shown) = base.scope_dir(scope)?;
        let physical = join_relative(&scope_dir.join(skill_id.as_str()), path.as_str());
        let file_shown = format!("{shown}/{skill_id}/{path}");
        let parent = physical
            .parent()
            .ok_or_else(|| StorageError::Other(format!("{file_shown} has no folder")))?;
        // Nothing may be created through a link that leads outside: check the deepest existing
        // ancestor first, then (the folders exist now) the whole folder before the file lands.
        base.ensure_existing_ancestor_inside(parent, &file_shown)?;
        fsutil::create_dir_all(parent)?;
        if !base.is_dir(parent, &file_shown)? {
            return Err(StorageError::NotADirectory { path: file_shown });
        }
        if fs::symlink_metadata(&physical).is_ok() {
            base.resolve(&physical, &file_shown)?;
        }
        write_atomic(&physical, text.as_bytes())
    }
}

#[async_trait]
impl SkillRepository for UserDataStore {
    async fn list_skills(&self, scope: &SkillScope) -> StorageResult<Vec<SkillSummary>> {
        // A scope whose folder does not exist lists nothing: one `lstat` here says so without
        // a hand-off to the blocking pool and back (every invocation lists two scopes or more,
        // and most scopes have no folder; a 256-child fan-out made 514 such hand-offs).
        if scope_folder_is_missing(&self.inner, scope)? {
            return Ok(Vec::new());
        }
        let scope = scope.clone();
        self.blocking(move |inner| list_sync(inner, &scope)).await
    }

    async fn read_skill_file(&self, file: SkillFileRef<'_>) -> StorageResult<String> {
        let scope = file.scope.clone();
        let skill_id = file.skill_id.clone();
        let path = file.path.clone();
        self.blocking(move |inner| read_sync(inner, &scope, &skill_id, &path))
            .await
    }

    async fn put_skill_file(&self, file: SkillFileRef<'_>, text: &str) -> StorageResult<()> {
        // A small write of setup code: done here, as the host's call was sync before.
        UserDataStore::put_skill_file(self, file, text)
    }
}
