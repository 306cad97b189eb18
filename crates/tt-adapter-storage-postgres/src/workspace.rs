//! Workspace files by logical path: one row per file (`tt_files`), directories implied by the
//! paths below them and the five roots always present. A write or append is one call of the
//! server function `tt_put_file` in a batch of the store's group commit (`commit.rs`), which
//! fences the run and locks the path with a transaction-scoped advisory lock, so guards are
//! checked and applied atomically across hosts.
//! A checkpoint copies the named files' fingerprints and text; it is one write of the store's
//! group commit (`commit.rs`), which numbers it. Persistent states are rows keyed by
//! conversation workspace, immutable once promoted.

use std::collections::{BTreeMap, BTreeSet};
use tt_domain::error_codes;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_postgres::GenericClient;
use tt_domain::DomainError;
use tt_domain::ids::{CheckpointId, RunId, WorkspaceId};
use tt_domain::text::sha256_hex;
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, CheckpointRecord, EntryKind, FileFingerprint, PersistSnapshot,
    PersistentChange, PersistentChangeSet, WorkspacePath, WorkspaceRoot, WriteGuard,
};
use tt_ports::{
    AgentRunRepository, FileContent, RunDocument, StorageError, StorageResult, WorkspaceEntry,
    WorkspaceRepository, WriteOutcome,
};

use crate::PostgresStore;
use crate::commit::{FileWrite, Write};
use crate::error::{io as db, parse, to_json};
use crate::pool::StatementCache;
use crate::retry::retrying;

/// What a promoted state records beside its files.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateManifest {
    state_id: String,
    run_id: RunId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base_state_id: Option<String>,
    created_at: Timestamp,
    files: Vec<FileFingerprint>,
    changes: Vec<PersistentChange>,
}

fn persist_error(code: tt_domain::error_codes::Code, message: String) -> StorageError {
    StorageError::Domain(DomainError::new(code, message))
}

fn ws_what(run_id: &RunId) -> String {
    format!("workspace of run {run_id}")
}

fn fingerprint(path: &WorkspacePath, text: &str) -> FileFingerprint {
    FileFingerprint {
        path: path.clone(),
        sha256: sha256_hex(text.as_bytes()),
        bytes: text.len() as u64,
    }
}

fn parse_path(raw: &str) -> StorageResult<WorkspacePath> {
    WorkspacePath::parse(raw)
        .map_err(|err| StorageError::corrupt(format!("stored path {raw}"), err))
}

/// `tt_put_file`'s row: outcome, detail, previous sha256, new sha256, new size in bytes.
type PutFileRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// The strict ancestors of `path` below its root (`a/b/c` -> `a/b`; the root `a` never holds
/// a file).
fn ancestors(path: &WorkspacePath) -> Vec<String> {
    let segments: Vec<&str> = path.segments().collect();
    (2..segments.len())
        .map(|n| segments[..n].join("/"))
        .collect()
}

async fn run_exists<C: GenericClient>(
    client: &C,
    cache: &StatementCache,
    run_id: &RunId,
) -> StorageResult<()> {
    let found = cache
        .query_opt(
            client,
            "SELECT 1 FROM runs WHERE run_id = $1",
            &[&run_id.as_str()],
        )
        .await
        .map_err(db(ws_what(run_id)))?;
    match found {
        Some(_) => Ok(()),
        None => Err(StorageError::not_found(format!("run {run_id}"))),
    }
}

/// Whether any file lies below `path` (making it a directory).
async fn has_children<C: GenericClient>(
    client: &C,
    cache: &StatementCache,
    run_id: &RunId,
    path: &str,
) -> StorageResult<bool> {
    let row = cache
        .query_one(
            client,
            "SELECT EXISTS (SELECT 1 FROM tt_files WHERE run_id = $1
                            AND starts_with(path, $2 || '/'))",
            &[&run_id.as_str(), &path],
        )
        .await
        .map_err(db(ws_what(run_id)))?;
    Ok(row.get(0))
}

/// The current text of a file, `None` when no file is at `path`.
async fn current_text<C: GenericClient>(
    client: &C,
    cache: &StatementCache,
    run_id: &RunId,
    path: &WorkspacePath,
) -> StorageResult<Option<(String, String)>> {
    let row = cache
        .query_opt(
            client,
            "SELECT content, sha256 FROM tt_files WHERE run_id = $1 AND path = $2",
            &[&run_id.as_str(), &path.as_str()],
        )
        .await
        .map_err(db(ws_what(run_id)))?;
    Ok(row.map(|row| (row.get(0), row.get(1))))
}

/// The run's files under `persist/`, sorted by path, with their text.
async fn persist_files<C: GenericClient>(
    client: &C,
    cache: &StatementCache,
    run_id: &RunId,
) -> StorageResult<Vec<(WorkspacePath, String)>> {
    let rows = cache
        .query(
            client,
            "SELECT path, content FROM tt_files WHERE run_id = $1
             AND starts_with(path, 'persist/') ORDER BY path",
            &[&run_id.as_str()],
        )
        .await
        .map_err(db(ws_what(run_id)))?;
    rows.iter()
        .map(|row| Ok((parse_path(row.get(0))?, row.get::<_, String>(1))))
        .collect()
}

async fn run_workspace_id<C: GenericClient>(
    client: &C,
    cache: &StatementCache,
    run_id: &RunId,
) -> StorageResult<String> {
    let row = cache
        .query_opt(
            client,
            "SELECT workspace_id FROM runs WHERE run_id = $1",
            &[&run_id.as_str()],
        )
        .await
        .map_err(db(ws_what(run_id)))?
        .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))?;
    Ok(row.get(0))
}

impl PostgresStore {
    /// Writes or appends under the path's lock; `append` joins the new text to the old. A write
    /// of the group commit (`commit.rs`): `tt_put_file` (migration 9) fences, checks and
    /// writes on the server, in the batch's transaction, so a fan-out's writes share one
    /// round trip and one WAL flush instead of one each.
    async fn put_file(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
        append: bool,
    ) -> StorageResult<WriteOutcome> {
        if path.root().is_none() {
            return Err(StorageError::not_found(path.to_string()));
        }
        if path.is_root_itself() {
            return Err(StorageError::IsDirectory {
                path: path.to_string(),
            });
        }
        self.claim_run(run_id).await?;
        let (guard_kind, expected) = match guard {
            WriteGuard::None => ("none", None),
            WriteGuard::MustNotExist => ("must_not_exist", None),
            WriteGuard::MustMatchSha256(sha) => ("must_match", Some(sha.clone())),
        };
        let write = Write::File(FileWrite {
            path: path.as_str().to_owned(),
            above: to_json("ancestors", &ancestors(path))?,
            content: content.to_owned(),
            // The sha256 of the text written, unless an append to an existing file (the server
            // hashes the joined text then).
            sha256: sha256_hex(content.as_bytes()),
            append,
            guard: guard_kind,
            expected,
        });
        let answer = self
            .journal
            .submit_answers(run_id.as_str(), vec![write])
            .await?
            .pop()
            .and_then(|answer| answer.detail)
            .ok_or_else(|| {
                StorageError::corrupt(ws_what(run_id), "the server answered no write outcome")
            })?;
        let (outcome, detail, previous, new_sha256, new_bytes): PutFileRow =
            parse("a write's outcome", &answer)?;
        match outcome.as_str() {
            "written" => Ok(WriteOutcome {
                previous_sha256: previous,
                sha256: new_sha256.unwrap_or_default(),
                bytes: crate::runs::as_u64(new_bytes.unwrap_or_default()),
            }),
            "refused" => Err(match guard.check(previous.as_deref()) {
                Err(violation) => StorageError::guard(path, violation),
                Ok(()) => StorageError::corrupt(
                    ws_what(run_id),
                    format!("the server refused a write to {path} that its guard allows"),
                ),
            }),
            "is_directory" => Err(StorageError::IsDirectory {
                path: path.to_string(),
            }),
            "not_a_directory" => Err(StorageError::NotADirectory {
                path: detail.unwrap_or_default(),
            }),
            fenced => Err(self.fenced(run_id, fenced)),
        }
    }

    /// The error of a write the server's fence refused (`tt_fence`).
    fn fenced(&self, run_id: &RunId, outcome: &str) -> StorageError {
        match outcome {
            "no_run" => StorageError::not_found(format!("run {run_id}")),
            "lost" => self.ownership.lost(run_id),
            other => StorageError::corrupt(
                ws_what(run_id),
                format!("the server answered a write with `{other}`"),
            ),
        }
    }

    /// All file paths of the run below `prefix` (`""` = every file), sorted.
    async fn files_below(&self, run_id: &RunId, prefix: &str) -> StorageResult<Vec<String>> {
        let rows = self
            .rows(
                "SELECT path FROM tt_files WHERE run_id = $1 AND starts_with(path, $2)
                 ORDER BY path",
                &[&run_id.as_str(), &prefix],
                &ws_what(run_id),
            )
            .await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }
}

/// Adds the entries of `file` (a path below `base`, `base` ending in `/` or empty) down to
/// `depth` levels.
fn add_entries(entries: &mut BTreeMap<String, EntryKind>, base: &str, file: &str, depth: u32) {
    let Some(below) = file.strip_prefix(base) else {
        return;
    };
    let segments: Vec<&str> = below.split('/').collect();
    let levels = segments.len().min(depth as usize);
    for n in 1..=levels {
        let kind = if n == segments.len() {
            EntryKind::File
        } else {
            EntryKind::Directory
        };
        entries
            .entry(format!("{base}{}", segments[..n].join("/")))
            .or_insert(kind);
    }
}

#[async_trait]
impl WorkspaceRepository for PostgresStore {
    async fn list(
        &self,
        run_id: &RunId,
        path: Option<&WorkspacePath>,
        depth: u32,
    ) -> StorageResult<Vec<WorkspaceEntry>> {
        retrying(|_| async move {
            {
                let conn = self.pool.get().await?;
                run_exists(&*conn, conn.cache(), run_id).await?;
            }
            let mut entries = BTreeMap::new();
            match path {
                None => {
                    for root in WorkspaceRoot::ALL {
                        entries.insert(root.name().to_owned(), EntryKind::Directory);
                    }
                    if depth > 1 {
                        for file in self.files_below(run_id, "").await? {
                            add_entries(&mut entries, "", &file, depth);
                        }
                    }
                }
                Some(dir) => {
                    if dir.root().is_none() {
                        return Err(StorageError::not_found(dir.to_string()));
                    }
                    let base = format!("{dir}/");
                    let files = self.files_below(run_id, dir.as_str()).await?;
                    if files.iter().any(|file| file == dir.as_str()) {
                        return Err(StorageError::NotADirectory {
                            path: dir.to_string(),
                        });
                    }
                    let below: Vec<&String> =
                        files.iter().filter(|f| f.starts_with(&base)).collect();
                    if below.is_empty() && !dir.is_root_itself() {
                        return Err(StorageError::not_found(dir.to_string()));
                    }
                    for file in below {
                        add_entries(&mut entries, &base, file, depth);
                    }
                }
            }
            entries
                .into_iter()
                .map(|(path, kind)| {
                    Ok(WorkspaceEntry {
                        path: parse_path(&path)?,
                        kind,
                    })
                })
                .collect()
        })
        .await
    }

    async fn read(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<FileContent> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            // A file there implies its run: the run is looked up only when no file is.
            if let Some((text, sha256)) = current_text(&*conn, conn.cache(), run_id, path).await? {
                return Ok(FileContent { text, sha256 });
            }
            run_exists(&*conn, conn.cache(), run_id).await?;
            if path.root().is_some()
                && (path.is_root_itself()
                    || has_children(&*conn, conn.cache(), run_id, path.as_str()).await?)
            {
                return Err(StorageError::IsDirectory {
                    path: path.to_string(),
                });
            }
            Err(StorageError::not_found(path.to_string()))
        })
        .await
    }

    async fn sha256(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<Option<String>> {
        retrying(|_| async move {
            match self.read(run_id, path).await {
                Ok(content) => Ok(Some(content.sha256)),
                Err(StorageError::NotFound { .. }) => {
                    let conn = self.pool.get().await?;
                    run_exists(&*conn, conn.cache(), run_id).await?;
                    Ok(None)
                }
                Err(other) => Err(other),
            }
        })
        .await
    }

    async fn write(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
    ) -> StorageResult<WriteOutcome> {
        self.put_file(run_id, path, content, guard, false).await
    }

    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome> {
        self.put_file(run_id, path, content, &WriteGuard::None, true)
            .await
    }

    async fn create_checkpoint(
        &self,
        run_id: &RunId,
        reason: CheckpointReason,
        event_seq: u64,
        paths: &[WorkspacePath],
        created_at: Timestamp,
    ) -> StorageResult<CheckpointRecord> {
        retrying(|_| async move {
            self.claim_run(run_id).await?;
            let what = format!("checkpoint of run {run_id}");
            // The record's fields the server does not number: it adds `id`, `seq` and `files`.
            let head = to_json(
                "checkpoint",
                &serde_json::json!({
                    "runId": run_id,
                    "createdAt": created_at,
                    "reason": reason,
                    "eventSeq": event_seq,
                }),
            )?;
            let paths = to_json(
                "checkpoint paths",
                &paths.iter().map(WorkspacePath::as_str).collect::<Vec<_>>(),
            )?;
            // One write of the group commit (`commit.rs`), which numbers it.
            let answer = self
                .journal
                .submit_answers(run_id.as_str(), vec![Write::Checkpoint { paths, head }])
                .await?
                .pop()
                .ok_or_else(|| StorageError::Other(format!("no answer for the {what}")))?;
            Ok(CheckpointRecord {
                id: CheckpointId::from_seq(answer.number),
                seq: answer.number,
                run_id: run_id.clone(),
                created_at,
                reason,
                event_seq,
                files: parse("checkpoint files", answer.detail.as_deref().unwrap_or("[]"))?,
            })
        })
        .await
    }

    async fn init_persist_projection(
        &self,
        run_id: &RunId,
        base_state_id: Option<&str>,
    ) -> StorageResult<PersistSnapshot> {
        // Refused as every store refuses it, before anything is claimed or looked up.
        if let Some(state_id) = base_state_id {
            tt_ports::store_inputs::check_persistent_state_id(state_id)?;
        }
        retrying(|_| async move {
            self.claim_run(run_id).await?;
            let snapshot = {
                let mut conn = self.pool.get().await?;
                let (client, cache) = conn.parts();
                let tx = client.transaction().await.map_err(db(ws_what(run_id)))?;
                self.ownership.fence(&tx, cache, run_id, None).await?;
                let workspace_id = run_workspace_id(&tx, cache, run_id).await?;
                if let Some(state_id) = base_state_id {
                    let found = cache
                        .query_opt(
                            &tx,
                            "SELECT 1 FROM tt_persistent_states WHERE workspace_id = $1 AND state_id = $2",
                            &[&workspace_id, &state_id],
                        )
                        .await
                        .map_err(db(format!("persistent state {state_id}")))?;
                    if found.is_none() {
                        return Err(persist_error(
                            error_codes::AGENT_PERSISTENT_STATE_ROOT_MISSING,
                            format!("persistent state {state_id} does not exist in this conversation"),
                        ));
                    }
                    cache
                        .execute(
                            &tx,
                            "INSERT INTO tt_files (run_id, path, content, sha256)
                         SELECT $1, path, content, encode(sha256(convert_to(content, 'UTF8')), 'hex')
                         FROM tt_state_files WHERE workspace_id = $2 AND state_id = $3
                         ON CONFLICT (run_id, path) DO UPDATE
                         SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256",
                            &[&run_id.as_str(), &workspace_id, &state_id],
                        )
                        .await
                        .map_err(db(format!("persistent state {state_id}")))?;
                }
                let files = persist_files(&tx, cache, run_id)
                    .await?
                    .iter()
                    .map(|(path, text)| fingerprint(path, text))
                    .collect();
                tx.commit().await.map_err(db(ws_what(run_id)))?;
                PersistSnapshot {
                    base_state_id: base_state_id.map(str::to_owned),
                    files,
                }
            };
            self.write_document(
                run_id,
                &RunDocument::PersistSnapshot,
                &serde_json::to_value(&snapshot)
                    .map_err(|err| StorageError::Other(format!("persist snapshot: {err}")))?,
            )
            .await?;
            Ok(snapshot)
        })
        .await
    }

    async fn promote_persist(
        &self,
        run_id: &RunId,
        snapshot: &PersistSnapshot,
        created_at: Timestamp,
    ) -> StorageResult<PersistentChangeSet> {
        retrying(|_| async move {
            self.claim_run(run_id).await?;
            let mut conn = self.pool.get().await?;
            let (client, cache) = conn.parts();
            let tx = client.transaction().await.map_err(db(ws_what(run_id)))?;
            self.ownership.fence(&tx, cache, run_id, None).await?;
            let workspace_id = run_workspace_id(&tx, cache, run_id).await?;
            let current = persist_files(&tx, cache, run_id).await?;
            let files: Vec<FileFingerprint> = current
                .iter()
                .map(|(path, text)| fingerprint(path, text))
                .collect();
            let changes = snapshot.changes_to(&files)?;
            let manifest = StateManifest {
                state_id: run_id.as_str().to_owned(),
                run_id: run_id.clone(),
                base_state_id: snapshot.base_state_id.clone(),
                created_at,
                files,
                changes,
            };
            let inserted = cache
                .execute(
                    &tx,
                    "INSERT INTO tt_persistent_states (workspace_id, state_id, manifest)
                     VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    &[
                        &workspace_id,
                        &run_id.as_str(),
                        &to_json("state manifest", &manifest)?,
                    ],
                )
                .await
                .map_err(db(format!("persistent state {run_id}")))?;
            if inserted == 0 {
                return Err(persist_error(
                    error_codes::AGENT_PERSISTENT_STATE_EXISTS,
                    format!("persistent state {run_id} already exists"),
                ));
            }
            cache
                .execute(
                    &tx,
                    "INSERT INTO tt_state_files (workspace_id, state_id, path, content)
                 SELECT $1, $2, path, content FROM tt_files
                 WHERE run_id = $2 AND starts_with(path, 'persist/')",
                    &[&workspace_id, &run_id.as_str()],
                )
                .await
                .map_err(db(format!("persistent state {run_id}")))?;
            tx.commit().await.map_err(db(ws_what(run_id)))?;
            Ok(PersistentChangeSet {
                state_id: manifest.state_id,
                base_state_id: manifest.base_state_id,
                changes: manifest.changes,
            })
        })
        .await
    }

    async fn checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>> {
        self.read_checkpoint_record(run_id, id).await
    }

    async fn checkpoint_blob(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        self.read_checkpoint_blob(run_id, sha256).await
    }

    async fn promoted_state(&self, run_id: &RunId) -> StorageResult<Option<PersistentChangeSet>> {
        retrying(|_| async move {
            let conn = self.pool.get().await?;
            let workspace_id = run_workspace_id(&*conn, conn.cache(), run_id).await?;
            let row = conn
                .query_opt(
                    "SELECT manifest FROM tt_persistent_states WHERE workspace_id = $1 AND state_id = $2",
                    &[&workspace_id, &run_id.as_str()],
                )
                .await
                .map_err(db(format!("persistent state {run_id}")))?;
            let Some(row) = row else {
                return Ok(None);
            };
            let manifest: StateManifest = parse("state manifest", row.get(0))?;
            Ok(Some(PersistentChangeSet {
                state_id: manifest.state_id,
                base_state_id: manifest.base_state_id,
                changes: manifest.changes,
            }))
        })
        .await
    }

    async fn chat_head(&self, workspace_id: &WorkspaceId) -> StorageResult<Option<RunId>> {
        let row = self
            .row(
                "SELECT run_id FROM tt_chat_heads WHERE workspace_id = $1",
                &[&workspace_id.as_str()],
                &format!("chat head of {workspace_id}"),
            )
            .await?;
        Ok(row.map(|row| RunId::from_raw(row.get::<_, String>(0))))
    }

    async fn swap_chat_head(
        &self,
        workspace_id: &WorkspaceId,
        expected: Option<&RunId>,
        run_id: &RunId,
    ) -> StorageResult<bool> {
        retrying(|_| async move {
            let what = || format!("chat head of {workspace_id}");
            // Only the run's owner may make it the head; the conversation's advisory lock, held
            // to the commit, orders every host's swaps of one head.
            self.claim_run(run_id).await?;
            let mut conn = self.pool.get().await?;
            let (client, cache) = conn.parts();
            let tx = client.transaction().await.map_err(db(what()))?;
            let lock = format!("chat-head/{workspace_id}");
            self.ownership
                .fence(&tx, cache, run_id, Some(lock.as_str()))
                .await?;
            let head = cache
                .query_opt(
                    &tx,
                    "SELECT run_id FROM tt_chat_heads WHERE workspace_id = $1",
                    &[&workspace_id.as_str()],
                )
                .await
                .map_err(db(what()))?
                .map(|row| row.get::<_, String>(0));
            if head.as_deref() == Some(run_id.as_str()) {
                return Ok(true);
            }
            if head.as_deref() != expected.map(RunId::as_str) {
                return Ok(false);
            }
            cache
                .execute(
                    &tx,
                    "INSERT INTO tt_chat_heads (workspace_id, run_id) VALUES ($1, $2)
                     ON CONFLICT (workspace_id) DO UPDATE SET run_id = EXCLUDED.run_id",
                    &[&workspace_id.as_str(), &run_id.as_str()],
                )
                .await
                .map_err(db(what()))?;
            tx.commit().await.map_err(db(what()))?;
            Ok(true)
        })
        .await
    }

    async fn walk_files(
        &self,
        run_id: &RunId,
        roots: &[WorkspaceRoot],
        max_depth: u32,
        max_files: usize,
    ) -> StorageResult<Vec<WorkspacePath>> {
        let mut found = BTreeSet::new();
        for root in roots {
            let base = format!("{}/", root.name());
            for file in self.files_below(run_id, &base).await? {
                let depth = file[base.len()..].split('/').count();
                if depth <= max_depth as usize {
                    found.insert(file);
                }
            }
        }
        found
            .into_iter()
            .take(max_files)
            .map(|path| parse_path(&path))
            .collect()
    }
}
