//! `InMemorySkills`: a `SkillRepository` kept in memory, with the same rules as the userdata
//! adapter (a skill needs a UTF-8 `SKILL.md`, size and count limits, scopes keyed by their
//! storage folder), plus seeding helpers, a read log and failure injection for tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tt_domain::skill::{SkillFilePath, SkillId, SkillScope, SkillSummary};
use tt_ports::{SkillFileRef, SkillRepository, StorageError, StorageResult};

/// A skill operation that a test can make fail once with [`InMemorySkills::fail_next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkillOp {
    List,
    Read,
}

/// The files of one skill, by path.
type SkillFiles = BTreeMap<SkillFilePath, Vec<u8>>;

#[derive(Debug, Default)]
struct State {
    /// Storage folder of the scope (`presets/openai/Default`) -> skill -> files.
    scopes: BTreeMap<String, BTreeMap<SkillId, SkillFiles>>,
    faults: Vec<(SkillOp, StorageError)>,
    reads: Vec<(SkillScope, SkillId, SkillFilePath)>,
}

/// Skills in memory, for tests.
#[derive(Debug, Default)]
pub struct InMemorySkills {
    state: Mutex<State>,
}

impl InMemorySkills {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores one file of a skill, replacing any previous one. A blank scope name is ignored
    /// (such a scope can hold nothing, as in the userdata store).
    pub fn put_file_bytes(
        &self,
        scope: &SkillScope,
        skill_id: &SkillId,
        path: &SkillFilePath,
        bytes: Vec<u8>,
    ) {
        let Ok(folder) = scope_folder(scope) else {
            return;
        };
        self.lock()
            .scopes
            .entry(folder)
            .or_default()
            .entry(skill_id.clone())
            .or_default()
            .insert(path.clone(), bytes);
    }

    /// Stores one text file of a skill.
    pub fn put_file(
        &self,
        scope: &SkillScope,
        skill_id: &SkillId,
        path: &SkillFilePath,
        text: &str,
    ) {
        self.put_file_bytes(scope, skill_id, path, text.as_bytes().to_vec());
    }

    /// Stores a skill's `SKILL.md` and any other `(path, text)` files. Panics on an invalid id
    /// or path literal: this is a test helper.
    #[allow(clippy::expect_used)] // literals in tests; a typo should fail loudly
    pub fn put_skill(&self, scope: &SkillScope, id: &str, skill_md: &str, files: &[(&str, &str)]) {
        let id = SkillId::parse(id).expect("valid skill id literal");
        self.put_file(scope, &id, &SkillFilePath::skill_md(), skill_md);
        for (path, text) in files {
            let path = SkillFilePath::parse(path).expect("valid skill file path literal");
            self.put_file(scope, &id, &path, text);
        }
    }

    /// Removes a whole skill from a scope.
    pub fn remove_skill(&self, scope: &SkillScope, skill_id: &SkillId) {
        if let Ok(folder) = scope_folder(scope)
            && let Some(skills) = self.lock().scopes.get_mut(&folder)
        {
            skills.remove(skill_id);
        }
    }

    /// Makes the next call of `op` fail with `error`.
    pub fn fail_next(&self, op: SkillOp, error: StorageError) {
        self.lock().faults.push((op, error));
    }

    /// Every `read_skill_file` call so far, in order (failed ones included).
    pub fn reads(&self) -> Vec<(SkillScope, SkillId, SkillFilePath)> {
        self.lock().reads.clone()
    }

    fn take_fault(state: &mut State, op: SkillOp) -> StorageResult<()> {
        match state
            .faults
            .iter()
            .position(|(fault_op, _)| *fault_op == op)
        {
            Some(index) => Err(state.faults.remove(index).1),
            None => Ok(()),
        }
    }
}

/// The scope's storage folder: the same key the userdata store turns into a path.
fn scope_folder(scope: &SkillScope) -> StorageResult<String> {
    Ok(scope.storage_segments()?.join("/"))
}

/// True when `path` is a folder of `files` (some file lies below it).
fn is_folder(files: &SkillFiles, path: &SkillFilePath) -> bool {
    let prefix = format!("{path}/");
    files.keys().any(|file| file.as_str().starts_with(&prefix))
}

#[async_trait]
impl SkillRepository for InMemorySkills {
    async fn list_skills(&self, scope: &SkillScope) -> StorageResult<Vec<SkillSummary>> {
        let mut state = self.lock();
        Self::take_fault(&mut state, SkillOp::List)?;
        let folder = scope_folder(scope)?;
        let Some(skills) = state.scopes.get(&folder) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (id, files) in skills {
            let skill_md = files.get(&SkillFilePath::skill_md()).map(Vec::as_slice);
            let sizes = files
                .iter()
                .map(|(path, bytes)| (path.clone(), bytes.len() as u64));
            out.extend(SkillSummary::from_stored(id.clone(), skill_md, sizes));
        }
        Ok(out)
    }

    async fn put_skill_file(&self, file: SkillFileRef<'_>, text: &str) -> StorageResult<()> {
        scope_folder(file.scope)?;
        self.put_file(file.scope, file.skill_id, file.path, text);
        Ok(())
    }

    async fn read_skill_file(&self, file: SkillFileRef<'_>) -> StorageResult<String> {
        let (scope, skill_id, path) = (file.scope, file.skill_id, file.path);
        let mut state = self.lock();
        state
            .reads
            .push((scope.clone(), skill_id.clone(), path.clone()));
        Self::take_fault(&mut state, SkillOp::Read)?;
        let folder = scope_folder(scope)?;
        let files = state
            .scopes
            .get(&folder)
            .and_then(|skills| skills.get(skill_id))
            .filter(|files| files.contains_key(&SkillFilePath::skill_md()))
            .ok_or_else(|| StorageError::not_found(format!("skill {skill_id} in {scope}")))?;
        let shown = format!("skills/{folder}/{skill_id}/{path}");
        let Some(bytes) = files.get(path) else {
            return Err(if is_folder(files, path) {
                StorageError::IsDirectory { path: shown }
            } else {
                StorageError::not_found(format!("skill file {shown}"))
            });
        };
        tt_ports::store_inputs::skill_file_text(shown, bytes.clone())
    }
}
