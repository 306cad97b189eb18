//! Runs, run documents, invocations and tasks. Records are stored as their JSON text (so a
//! document reads back exactly as written) beside the columns the queries order and filter by.
//! A task transition rewrites its row only if it is still the row it read (compare and swap),
//! so the first terminal write wins across hosts too.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tt_domain::damage::UnreadableRun;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::run::AgentRun;
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::RunManifest;
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, RunDocument, RunListPage, SerializedDocument,
    StorageError, StorageResult, TaskTransitionOutcome,
};

use crate::PostgresStore;
use crate::commit::Write;
use crate::error::{io, parse, to_json};
use crate::observed::{OBSERVED_COLUMNS, Observed};
use crate::pool::Params;
use crate::retry::retrying;

/// How many times a task transition reads its row again after another writer changed it.
const TRANSITION_ATTEMPTS: usize = 64;

/// A non-negative counter column as `u64`.
pub(crate) fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Whether the stored row of `task` holds `body` (a create that may have committed).
async fn stored_task_is(
    conn: &crate::pool::PooledClient<'_>,
    task: &AgentTaskRecord,
    body: &str,
) -> StorageResult<bool> {
    let row = conn
        .query_opt(
            "SELECT body FROM tasks WHERE run_id = $1 AND task_id = $2",
            &[&task.run_id.as_str(), &task.id.as_str()],
        )
        .await
        .map_err(io(format!("task {}", task.id)))?;
    Ok(row.is_some_and(|row| row.get::<_, &str>(0) == body))
}

impl PostgresStore {
    /// A run document parsed as `T`; `None` when the run has no such document.
    async fn document_as<T: DeserializeOwned>(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<T>> {
        let path = document.relative_path();
        let what = format!("runs/{run_id}/{path}");
        let row = self
            .row(
                "SELECT body FROM run_documents WHERE run_id = $1 AND path = $2",
                &[&run_id.as_str(), &path],
                &what,
            )
            .await?;
        match row {
            Some(row) => Ok(Some(parse(what, row.get(0))?)),
            None => {
                self.require_run(run_id).await?;
                Ok(None)
            }
        }
    }

    /// The runs `SELECT … FROM runs r` finds with `tail` (its `WHERE` and `ORDER BY`) and
    /// `params`; `what` names them in an error. A body that does not parse is left out
    /// (`unreadable_runs` names it), never allowed to hide the others. Runs another store
    /// writes read as `load_run` reads them, but a listing records nothing.
    async fn listed_runs(
        &self,
        tail: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        what: &'static str,
    ) -> StorageResult<Vec<AgentRun>> {
        let conn = self.pool.get().await?;
        let rows = conn
            .query(
                &format!(
                    "SELECT r.body, {OBSERVED_COLUMNS} FROM runs r
                     LEFT JOIN run_leases l ON l.run_id = r.run_id
                     {tail}"
                ),
                params,
            )
            .await
            .map_err(io(what))?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let run = parse::<AgentRun>("run", row.get(0)).ok()?;
                if self.ownership.holds(&run.id) {
                    return Some(run);
                }
                let observed = Observed {
                    journal_status: row.get(1),
                    owner_gone: row.get(2),
                };
                Some(observed.apply(run))
            })
            .collect())
    }

    /// Whether the stored record of `run` is `body` (a create that may have committed).
    async fn stored_run_is(
        &self,
        conn: &crate::pool::PooledClient<'_>,
        run: &AgentRun,
        body: &str,
    ) -> StorageResult<bool> {
        let row = conn
            .query_opt(
                "SELECT body FROM runs WHERE run_id = $1",
                &[&run.id.as_str()],
            )
            .await
            .map_err(io(format!("run {}", run.id)))?;
        Ok(row.is_some_and(|row| row.get::<_, &str>(0) == body))
    }

    /// `NotFound` unless the run exists.
    pub(crate) async fn require_run(&self, run_id: &RunId) -> StorageResult<()> {
        let what = format!("run {run_id}");
        match self
            .row(
                "SELECT 1 FROM runs WHERE run_id = $1",
                &[&run_id.as_str()],
                &what,
            )
            .await?
        {
            Some(_) => Ok(()),
            None => Err(StorageError::not_found(what)),
        }
    }

    /// The record of the run `sql` finds (its JSON body first), parsed; `NotFound` naming
    /// `what` when there is none, or naming the run when the run itself is missing.
    async fn run_record<T: DeserializeOwned>(
        &self,
        run_id: &RunId,
        sql: &str,
        params: Params<'_>,
        what: &str,
    ) -> StorageResult<T> {
        match self.row(sql, params, what).await? {
            Some(row) => parse(what, row.get(0)),
            None => {
                self.require_run(run_id).await?;
                Err(StorageError::not_found(what))
            }
        }
    }

    /// The records of the run `sql` finds (their JSON bodies first), each parsed (naming
    /// `each` when it does not); none found is `NotFound` when the run itself is missing.
    /// `what` names them all in a read's error.
    async fn run_records<T: DeserializeOwned>(
        &self,
        run_id: &RunId,
        sql: &str,
        params: Params<'_>,
        what: &str,
        each: &str,
    ) -> StorageResult<Vec<T>> {
        let rows = self.rows(sql, params, what).await?;
        if rows.is_empty() {
            self.require_run(run_id).await?;
        }
        rows.iter().map(|row| parse(each, row.get(0))).collect()
    }

    async fn put_document(&self, run_id: &RunId, path: &str, body: &str) -> StorageResult<()> {
        retrying(|_| async move {
            self.claim_run(run_id).await?;
            self.journal
                .put_document(run_id.as_str(), path.to_owned(), body.to_owned())
                .await
        })
        .await
    }

    async fn task_rows(
        &self,
        sql: &str,
        run_id: &RunId,
        key: &str,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        let mut tasks: Vec<AgentTaskRecord> = self
            .run_records(
                run_id,
                sql,
                &[&run_id.as_str(), &key],
                &format!("tasks of run {run_id}"),
                &format!("task of run {run_id}"),
            )
            .await?;
        tasks.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        Ok(tasks)
    }
}

#[async_trait]
impl AgentRunRepository for PostgresStore {
    async fn create_run(&self, run: &AgentRun, manifest: &RunManifest) -> StorageResult<()> {
        retrying(|attempt| async move {
            let body = to_json("run", run)?;
            let manifest = to_json("manifest", manifest)?;
            let conn = self.pool.get().await?;
            // The lease row comes with the run, so no reader ever finds the new run without
            // an owner (and takes it for a dead host's, `observed.rs`); the claim below takes
            // the owner lock and says so.
            let inserted: i64 = conn
                .query_one(
                    "WITH inserted AS (
                         INSERT INTO runs (run_id, created_ms, body, manifest, unfinished)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (run_id) DO NOTHING RETURNING run_id),
                     leased AS (
                         INSERT INTO run_leases (run_id, owner_id, expires_at, locked)
                         SELECT run_id, $6,
                                clock_timestamp() + $7::float8 * interval '1 millisecond', false
                         FROM inserted
                         ON CONFLICT (run_id) DO NOTHING)
                     SELECT count(*) FROM inserted",
                    &[
                        &run.id.as_str(),
                        &run.created_at.unix_millis(),
                        &body,
                        &manifest,
                        &!run.status.is_terminal(),
                        &self.ownership.owner_id,
                        &self.ownership.lease_millis(),
                    ],
                )
                .await
                .map_err(io(format!("run {}", run.id)))?
                .get(0);
            // A try whose connection was lost may have inserted the row: the run is this
            // one when the stored record is the one written.
            if inserted == 0 && !(attempt.retried && self.stored_run_is(&conn, run, &body).await?) {
                return Err(StorageError::AlreadyExists {
                    what: format!("run {}", run.id),
                });
            }
            drop(conn);
            self.claim_run(&run.id).await
        })
        .await
    }

    async fn save_run(&self, run: &AgentRun) -> StorageResult<()> {
        retrying(|_| async move {
            self.claim_run(&run.id).await?;
            let body = to_json("run", run)?;
            let conn = self.pool.get().await?;
            let updated = conn
                .execute(
                    "UPDATE runs SET body = $2, unfinished = $4 WHERE run_id = $1 AND EXISTS (SELECT 1 FROM run_leases WHERE run_id = $1 AND owner_id = $3 FOR KEY SHARE)",
                    &[
                        &run.id.as_str(),
                        &body,
                        &self.ownership.owner_id,
                        &!run.status.is_terminal(),
                    ],
                )
                .await
                .map_err(io(format!("run {}", run.id)))?;
            if updated == 0 {
                return Err(self.ownership.refused(&*conn, conn.cache(), &run.id).await);
            }
            Ok(())
        })
        .await
    }

    /// The stored record of a run this store writes; any other run as another process sees it
    /// (`observed.rs`): the status its journal last stated, or `interrupted` once its owner is
    /// gone (recorded so when the store can).
    async fn load_run(&self, run_id: &RunId) -> StorageResult<AgentRun> {
        if !self.ownership.holds(run_id) {
            let (run, observed) = self.read_run_row(run_id).await?;
            return self.observed_run(run_id, run, observed).await;
        }
        let what = format!("run {run_id}");
        self.document(
            "SELECT body FROM runs WHERE run_id = $1",
            &[&run_id.as_str()],
            &what,
        )
        .await?
        .ok_or_else(|| StorageError::not_found(what))
    }

    async fn load_manifest(&self, run_id: &RunId) -> StorageResult<RunManifest> {
        self.document(
            "SELECT manifest FROM runs WHERE run_id = $1",
            &[&run_id.as_str()],
            &format!("manifest of run {run_id}"),
        )
        .await?
        .ok_or_else(|| StorageError::not_found(format!("run {run_id}")))
    }

    async fn list_runs(&self, page: RunListPage) -> StorageResult<Vec<AgentRun>> {
        retrying(|_| async move {
            let offset = i64::try_from(page.offset).unwrap_or(i64::MAX);
            let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
            self.listed_runs(
                "ORDER BY r.created_ms DESC, r.run_id OFFSET $1 LIMIT $2",
                &[&offset, &limit],
                "the run index",
            )
            .await
        })
        .await
    }

    async fn list_chat_runs(&self, stable_chat_id: &str) -> StorageResult<Vec<AgentRun>> {
        retrying(|_| async move {
            self.listed_runs(
                "WHERE tt_run_chat(r.body) = $1",
                &[&stable_chat_id],
                "the runs of a conversation",
            )
            .await
        })
        .await
    }

    async fn unreadable_runs(&self) -> StorageResult<Vec<UnreadableRun>> {
        let rows = self
            .rows(
                "SELECT run_id, body FROM runs ORDER BY run_id",
                &[],
                "the run index",
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let run_id: String = row.get(0);
                let error = parse::<AgentRun>(format!("run {run_id}"), row.get(1)).err()?;
                Some(UnreadableRun {
                    code: error.code().to_string(),
                    message: error.to_string(),
                    run_id,
                })
            })
            .collect())
    }

    async fn write_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        value: &Value,
    ) -> StorageResult<()> {
        let path = document.relative_path();
        let body = to_json(&path, value)?;
        self.put_document(run_id, &path, &body).await
    }

    async fn write_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        serialized: &SerializedDocument,
    ) -> StorageResult<()> {
        self.put_document(run_id, &document.relative_path(), serialized.as_str())
            .await
    }

    async fn read_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<Value>> {
        self.document_as(run_id, document).await
    }

    async fn read_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<SerializedDocument>> {
        match self
            .document_as::<Box<serde_json::value::RawValue>>(run_id, document)
            .await?
        {
            Some(raw) => SerializedDocument::from_raw(&raw).map(Some),
            None => Ok(None),
        }
    }

    async fn release_run(&self, run_id: &RunId) -> StorageResult<()> {
        retrying(|_| async move {
            // Every write of the run was committed before its executor ended; only the lease is
            // left to give up.
            PostgresStore::release_run(self, run_id).await
        })
        .await
    }

    /// `None` when the store has no listening connection (it could not be opened).
    fn watch_runs(&self) -> Option<Box<dyn tt_ports::RunWatch>> {
        self.listening().then(|| {
            Box::new(crate::run_watch::PgRunWatch::new(
                self.heard.changes(),
                std::sync::Arc::downgrade(&self.ownership),
            )) as Box<dyn tt_ports::RunWatch>
        })
    }
}

#[async_trait]
impl AgentInvocationRepository for PostgresStore {
    /// Through the group commit, like every record write: the batch fences it on the lease.
    async fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()> {
        self.claim_run(&invocation.run_id).await?;
        let body = to_json("invocation", invocation)?;
        self.journal
            .submit(
                invocation.run_id.as_str(),
                vec![Write::Invocation {
                    invocation_id: invocation.id.as_str().to_owned(),
                    body,
                }],
            )
            .await
            .map(drop)
    }

    async fn load_invocation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> StorageResult<AgentInvocation> {
        self.run_record(
            run_id,
            "SELECT body FROM invocations WHERE run_id = $1 AND invocation_id = $2",
            &[&run_id.as_str(), &invocation_id.as_str()],
            &format!("invocation {invocation_id}"),
        )
        .await
    }

    async fn list_invocations(&self, run_id: &RunId) -> StorageResult<Vec<AgentInvocation>> {
        let mut invocations: Vec<AgentInvocation> = self
            .run_records(
                run_id,
                "SELECT body FROM invocations WHERE run_id = $1",
                &[&run_id.as_str()],
                &format!("invocations of run {run_id}"),
                &format!("invocation of run {run_id}"),
            )
            .await?;
        invocations.sort_by(|a, b| a.creation_order().cmp(&b.creation_order()));
        Ok(invocations)
    }

    async fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()> {
        retrying(|attempt| async move {
            self.claim_run(&task.run_id).await?;
            let body = to_json("task", task)?;
            let run_id = &task.run_id;
            let delegation = task.continuation == TaskContinuation::ReturnToParent;
            let conn = self.pool.get().await?;
            let inserted = conn
                .query_opt(
                    "WITH run AS (SELECT run_id FROM runs WHERE run_id = $1
                                  AND EXISTS (SELECT 1 FROM run_leases WHERE run_id = $1 AND owner_id = $8 FOR KEY SHARE)),
                          ins AS (
                              INSERT INTO tasks (run_id, task_id, parent_id, child_id, workspace_key,
                                                 delegation, body)
                              SELECT run_id, $2, $3, $4, $5, $6, $7 FROM run
                              ON CONFLICT (run_id, task_id) DO NOTHING
                              RETURNING 1 AS inserted)
                     SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM ins)",
                    &[
                        &run_id.as_str(),
                        &task.id.as_str(),
                        &task.parent_invocation_id.as_str(),
                        &task.child_invocation_id.as_str(),
                        &task.workspace_key,
                        &delegation,
                        &body,
                        &self.ownership.owner_id,
                    ],
                )
                .await
                .map_err(io(format!("task {}", task.id)))?;
            let (runs, inserted): (i64, i64) = match inserted {
                Some(row) => (row.get(0), row.get(1)),
                None => (0, 0),
            };
            if runs == 0 {
                return Err(self.ownership.refused(&*conn, conn.cache(), run_id).await);
            }
            // A try whose connection was lost may have inserted the row (see create_run).
            if inserted == 0 && !(attempt.retried && stored_task_is(&conn, task, &body).await?) {
                return Err(StorageError::AlreadyExists {
                    what: format!("task {}", task.id),
                });
            }
            Ok(())
        })
        .await
    }

    async fn load_task(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<AgentTaskRecord> {
        self.run_record(
            run_id,
            "SELECT body FROM tasks WHERE run_id = $1 AND task_id = $2",
            &[&run_id.as_str(), &task_id.as_str()],
            &format!("task {task_id}"),
        )
        .await
    }

    async fn list_tasks(&self, run_id: &RunId) -> StorageResult<Vec<AgentTaskRecord>> {
        self.task_rows(
            "SELECT body FROM tasks WHERE run_id = $1 AND $2 = ''",
            run_id,
            "",
        )
        .await
    }

    async fn list_tasks_by_parent(
        &self,
        run_id: &RunId,
        parent: &InvocationId,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        self.task_rows(
            "SELECT body FROM tasks WHERE run_id = $1 AND parent_id = $2",
            run_id,
            parent.as_str(),
        )
        .await
    }

    async fn list_tasks_by_child(
        &self,
        run_id: &RunId,
        child: &InvocationId,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        self.task_rows(
            "SELECT body FROM tasks WHERE run_id = $1 AND child_id = $2",
            run_id,
            child.as_str(),
        )
        .await
    }

    async fn count_delegations_by_parent(
        &self,
        run_id: &RunId,
        parent: &InvocationId,
    ) -> StorageResult<u64> {
        let row = self
            .one_row(
                "SELECT count(*) FROM tasks WHERE run_id = $1 AND parent_id = $2 AND delegation",
                &[&run_id.as_str(), &parent.as_str()],
                &format!("tasks of run {run_id}"),
            )
            .await?;
        Ok(as_u64(row.get(0)))
    }

    /// The keys of `base` are a range of the byte-ordered index (`{base}-` up to `{base}.`:
    /// '.' follows '-'; migration 11), so the read grows with `base`'s repeats, not the run's
    /// tasks. The engine reads it once per agent id and active run.
    async fn workspace_keys_like(&self, run_id: &RunId, base: &str) -> StorageResult<Vec<String>> {
        let (prefix, prefix_end) = (format!("{base}-"), format!("{base}."));
        let rows = self
            .rows(
                "SELECT workspace_key FROM tasks
                 WHERE run_id = $1 AND (workspace_key COLLATE \"C\" = $2
                     OR (workspace_key COLLATE \"C\" >= $3 AND workspace_key COLLATE \"C\" < $4))",
                &[&run_id.as_str(), &base, &prefix, &prefix_end],
                &format!("tasks of run {run_id}"),
            )
            .await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// Two statements and no transaction: read the row, apply the transition, then write it
    /// back only if it is unchanged and this store still holds the run's lease. A row another
    /// writer changed in between is read again; the first terminal write wins. A task has a few
    /// transitions in its life, so a row that changed under [`TRANSITION_ATTEMPTS`] reads in a
    /// row is an error, never an endless loop.
    async fn transition_task(
        &self,
        run_id: &RunId,
        task_id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome> {
        // The body the last try wrote, when its connection was lost before it answered: found
        // stored, that try committed.
        let sent: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
        let sent = &sent;
        retrying(|_| async move {
            self.claim_run(run_id).await?;
            let what = format!("task {task_id}");
            let conn = self.pool.get().await?;
            for _ in 0..TRANSITION_ATTEMPTS {
                let row = conn
                    .query_opt(
                        "SELECT body FROM tasks WHERE run_id = $1 AND task_id = $2",
                        &[&run_id.as_str(), &task_id.as_str()],
                    )
                    .await
                    .map_err(io(&what))?;
                let Some(row) = row else {
                    drop(conn);
                    self.require_run(run_id).await?;
                    return Err(StorageError::not_found(what));
                };
                let read: &str = row.get(0);
                let landed = sent
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .is_some_and(|sent| sent == read);
                let mut task: AgentTaskRecord = parse(&what, read)?;
                if landed {
                    return Ok(TaskTransitionOutcome {
                        task,
                        changed: true,
                    });
                }
                let changed = task.apply_transition(transition, now)?;
                if !changed {
                    return Ok(TaskTransitionOutcome { task, changed });
                }
                let body = to_json(&what, &task)?;
                *sent
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(body.clone());
                let written = conn
                    .execute(
                        "UPDATE tasks SET body = $3
                         WHERE run_id = $1 AND task_id = $2 AND body = $4
                           AND EXISTS (SELECT 1 FROM run_leases
                                       WHERE run_id = $1 AND owner_id = $5 FOR KEY SHARE)",
                        &[
                            &run_id.as_str(),
                            &task_id.as_str(),
                            &body,
                            &read,
                            &self.ownership.owner_id,
                        ],
                    )
                    .await
                    .map_err(io(&what))?;
                sent.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                if written == 1 {
                    return Ok(TaskTransitionOutcome { task, changed });
                }
                // Not this store's run any more (or gone), or another writer came first.
                self.ownership
                    .fence(&*conn, conn.cache(), run_id, None)
                    .await?;
            }
            Err(StorageError::io(
                what,
                format!(
                    "the row changed under each of {TRANSITION_ATTEMPTS} attempts to update it"
                ),
            ))
        })
        .await
    }
}
