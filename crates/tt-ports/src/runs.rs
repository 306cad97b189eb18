//! Run and invocation storage: run records and manifests, invocations, tasks (with the
//! conditional first-terminal-write-wins transition), and the run's JSON documents
//! (input snapshots, audit files, task results).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tt_domain::damage::{DamageFinding, UnreadableRun};
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::run::AgentRun;
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::RunManifest;

use crate::error::StorageResult;

/// A JSON document stored inside a run, named logically. The adapter decides where it lives
/// (see the run-directory layout in the docs). Every document is replaced atomically.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RunDocument {
    /// `input/prompt_snapshot.json`
    PromptSnapshot,
    /// `input/resolved_profile.json`
    ResolvedProfile,
    /// `input/persist_snapshot.json`
    PersistSnapshot,
    /// `input/invocations/<id>/tool_snapshot.json`
    InvocationToolSnapshot(InvocationId),
    /// `input/invocations/<id>/resolved_skills.json`; the root invocation's is
    /// `input/resolved_skills.json` (the reference's place for the run's own skills).
    InvocationResolvedSkills(InvocationId),
    /// `input/invocations/<id>/prompt_snapshot.json`
    InvocationPromptSnapshot(InvocationId),
    /// `input/invocations/<id>/prompt_assembly.json`
    InvocationPromptAssembly(InvocationId),
    /// `input/invocations/<id>/fork_prefix.json`: what an agent started in fork mode reads
    /// before its own note and brief (its delegating agent's messages and tools as sent).
    InvocationForkPrefix(InvocationId),
    /// `tool-args/call_<hex16>.json`: the raw arguments of one call.
    ToolArgs { call_file_key: String },
    /// `tool-results/call_<hex16>.json`: the stored tool result.
    ToolResult { call_file_key: String },
    /// `model-responses/<invId>/round-NNN.json` (`model-responses/round-NNN.json` for the root).
    ModelResponse {
        invocation_id: InvocationId,
        round: u32,
    },
    /// `agent-results/<childInvocationId>.json`
    AgentResult(InvocationId),
}

impl RunDocument {
    /// The document a logical path names (the inverse of [`relative_path`](Self::relative_path)),
    /// if it names one: how hosts and `tt-agent show` address records by the references events
    /// carry (`argumentsRef`, `modelResponsePath`, …).
    pub fn from_relative_path(reference: &str) -> Option<Self> {
        let parts: Vec<&str> = reference.split('/').collect();
        let json_stem = |name: &str| name.strip_suffix(".json").map(str::to_owned);
        let round_of = |name: &str| {
            name.strip_prefix("round-")?
                .strip_suffix(".json")?
                .parse::<u32>()
                .ok()
        };
        match parts.as_slice() {
            ["input", "prompt_snapshot.json"] => Some(Self::PromptSnapshot),
            ["input", "resolved_profile.json"] => Some(Self::ResolvedProfile),
            ["input", "persist_snapshot.json"] => Some(Self::PersistSnapshot),
            ["input", "resolved_skills.json"] => {
                Some(Self::InvocationResolvedSkills(InvocationId::root()))
            }
            ["input", "invocations", id, name] => {
                let id = InvocationId::from_raw(*id);
                match *name {
                    "tool_snapshot.json" => Some(Self::InvocationToolSnapshot(id)),
                    "resolved_skills.json" => Some(Self::InvocationResolvedSkills(id)),
                    "prompt_snapshot.json" => Some(Self::InvocationPromptSnapshot(id)),
                    "prompt_assembly.json" => Some(Self::InvocationPromptAssembly(id)),
                    "fork_prefix.json" => Some(Self::InvocationForkPrefix(id)),
                    _ => None,
                }
            }
            ["tool-args", name] => Some(Self::ToolArgs {
                call_file_key: json_stem(name)?,
            }),
            ["tool-results", name] => Some(Self::ToolResult {
                call_file_key: json_stem(name)?,
            }),
            ["model-responses", name] => Some(Self::ModelResponse {
                invocation_id: InvocationId::root(),
                round: round_of(name)?,
            }),
            ["model-responses", id, name] => Some(Self::ModelResponse {
                invocation_id: InvocationId::from_raw(*id),
                round: round_of(name)?,
            }),
            ["agent-results", name] => {
                Some(Self::AgentResult(InvocationId::from_raw(json_stem(name)?)))
            }
            _ => None,
        }
    }

    /// The logical path of the document inside the run directory, as shown in events
    /// (`argumentsRef`, `modelResponsePath`, …). Never model-facing. Joined from its parts
    /// into one allocation of its size (written for every call and model turn).
    pub fn relative_path(&self) -> String {
        let invocation =
            |id: &InvocationId, name: &str| ["input/invocations/", id.as_str(), "/", name].concat();
        match self {
            RunDocument::PromptSnapshot => "input/prompt_snapshot.json".to_owned(),
            RunDocument::ResolvedProfile => "input/resolved_profile.json".to_owned(),
            RunDocument::PersistSnapshot => "input/persist_snapshot.json".to_owned(),
            RunDocument::InvocationToolSnapshot(id) => invocation(id, "tool_snapshot.json"),
            RunDocument::InvocationResolvedSkills(id) if id.is_root() => {
                "input/resolved_skills.json".to_owned()
            }
            RunDocument::InvocationResolvedSkills(id) => invocation(id, "resolved_skills.json"),
            RunDocument::InvocationPromptSnapshot(id) => invocation(id, "prompt_snapshot.json"),
            RunDocument::InvocationPromptAssembly(id) => invocation(id, "prompt_assembly.json"),
            RunDocument::InvocationForkPrefix(id) => invocation(id, "fork_prefix.json"),
            RunDocument::ToolArgs { call_file_key } => {
                ["tool-args/", call_file_key, ".json"].concat()
            }
            RunDocument::ToolResult { call_file_key } => {
                ["tool-results/", call_file_key, ".json"].concat()
            }
            RunDocument::ModelResponse {
                invocation_id,
                round,
            } => {
                // `round-{round:03}.json`: at least three digits.
                let digits = round.to_string();
                let pad = "000".get(digits.len()..).unwrap_or_default();
                if invocation_id.is_root() {
                    ["model-responses/round-", pad, &digits, ".json"].concat()
                } else {
                    let id = invocation_id.as_str();
                    ["model-responses/", id, "/round-", pad, &digits, ".json"].concat()
                }
            }
            RunDocument::AgentResult(id) => ["agent-results/", id.as_str(), ".json"].concat(),
        }
    }
}

/// Paging for `list_runs`: newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunListPage {
    pub offset: usize,
    pub limit: usize,
}

impl RunListPage {
    /// The newest `limit` runs.
    pub fn first(limit: usize) -> Self {
        Self { offset: 0, limit }
    }
}

#[async_trait]
pub trait AgentRunRepository: Send + Sync {
    /// Creates the run directory with its roots, `run.json`, `manifest.json` and the index
    /// entry. Fails with `AlreadyExists` if the run exists.
    async fn create_run(&self, run: &AgentRun, manifest: &RunManifest) -> StorageResult<()>;

    /// Replaces `run.json` and the index entry atomically.
    async fn save_run(&self, run: &AgentRun) -> StorageResult<()>;

    async fn load_run(&self, run_id: &RunId) -> StorageResult<AgentRun>;

    async fn load_manifest(&self, run_id: &RunId) -> StorageResult<RunManifest>;

    /// Runs ordered by `createdAt` descending, then id. A run whose record cannot be read is
    /// left out, never allowed to hide the others: [`unreadable_runs`](Self::unreadable_runs)
    /// names it.
    async fn list_runs(&self, page: RunListPage) -> StorageResult<Vec<AgentRun>>;

    /// The runs of one conversation (`stableChatId`), in no particular order, as `list_runs`
    /// shows them (a run whose record cannot be read is left out). What a conversation's
    /// latest `persist/` state and its one-writer rule read. The default pages through
    /// `list_runs`; a store that keeps runs by conversation reads only that conversation's, so
    /// the cost does not grow with the other conversations' runs.
    async fn list_chat_runs(&self, stable_chat_id: &str) -> StorageResult<Vec<AgentRun>> {
        const PAGE: usize = 200;
        let mut found = Vec::new();
        let mut offset = 0;
        loop {
            let runs = self
                .list_runs(RunListPage {
                    offset,
                    limit: PAGE,
                })
                .await?;
            let fetched = runs.len();
            found.extend(
                runs.into_iter()
                    .filter(|run| run.stable_chat_id == stable_chat_id),
            );
            if fetched < PAGE {
                return Ok(found);
            }
            offset += fetched;
        }
    }

    /// The runs `list_runs` leaves out because their record cannot be read, each with the
    /// error's code and message; read-only. A run being created (no record yet) is not one.
    async fn unreadable_runs(&self) -> StorageResult<Vec<UnreadableRun>>;

    /// Reads everything the store keeps of `run_id` that its other reads would not parse whole
    /// (for the file store: every line of the journal, the records and the blobs, the run
    /// record, its index copy, the manifest and the input snapshots) and names each damaged
    /// part with a code, for `check_run`. Read-only. The default finds nothing: a store whose
    /// reads already parse everything it holds (the in-memory fake, PostgreSQL's rows, which
    /// its reads parse one by one).
    async fn check_stored(&self, run_id: &RunId) -> StorageResult<Vec<DamageFinding>> {
        let _ = run_id;
        Ok(Vec::new())
    }

    /// Writes a run document atomically (temp file + rename).
    async fn write_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        value: &Value,
    ) -> StorageResult<()>;

    /// `Ok(None)` when the document does not exist.
    async fn read_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<Value>>;

    /// [`AgentRunRepository::read_document`] as JSON text, for a caller that reads a few fields
    /// into a typed value instead of building the whole `Value` tree. The default serializes
    /// what `read_document` returns; a store that keeps documents as JSON text returns it as
    /// it is.
    async fn read_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<SerializedDocument>> {
        match self.read_document(run_id, document).await? {
            Some(value) => SerializedDocument::new(&value).map(Some),
            None => Ok(None),
        }
    }

    /// [`AgentRunRepository::write_document`] for a document already serialized, so a caller
    /// that holds a typed value stores it without building a `Value` tree first. Reads back
    /// as the same JSON. The default parses it and calls `write_document`; a store that keeps
    /// documents as JSON text may write the text as it is.
    async fn write_serialized_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        serialized: &SerializedDocument,
    ) -> StorageResult<()> {
        self.write_document(run_id, document, &serialized.to_value()?)
            .await
    }

    /// The run ended in this process: the store makes what it wrote durable and lets another
    /// process or host write the run at once (resume or abandon it) instead of when this one
    /// exits or its lease runs out. A later write from this process takes the run again. The
    /// default does nothing.
    async fn release_run(&self, run_id: &RunId) -> StorageResult<()> {
        let _ = run_id;
        Ok(())
    }

    /// Follows the runs that other processes or hosts sharing this store create or change
    /// (a runs list's live feed; this process's own changes reach it through the runtime's
    /// events, not here). Each watch is independent and ends when dropped. `None` (the
    /// default): the store has no other writer (the in-memory fake) or cannot watch.
    fn watch_runs(&self) -> Option<Box<dyn RunWatch>> {
        None
    }
}

/// What a [`RunWatch`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunChange {
    /// Another writer created the run or changed it (its record, its status, its journal).
    Changed(RunId),
    /// Changes were missed (the watcher fell behind or lost its source): re-read the runs.
    Lagged,
}

/// A live feed of the runs other writers of a store create or change
/// ([`AgentRunRepository::watch_runs`]).
#[async_trait]
pub trait RunWatch: Send {
    /// The next change; `None` once the watch has ended (its store is gone). Cancel-safe: a
    /// call dropped before it returns (a `select!` that took another branch) loses nothing.
    async fn next(&mut self) -> Option<RunChange>;
}

/// One JSON value on one line: valid JSON, since the only ways to make one are
/// [`SerializedDocument::new`] (compact) and [`SerializedDocument::from_raw`] (a value already
/// parsed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerializedDocument(String);

impl SerializedDocument {
    /// Serializes `value` as compact JSON; fails as `serde_json::to_value` would. Written
    /// into a buffer the thread reuses and copied out at its size
    /// ([`json_text`](tt_domain::text::json_text)): one allocation however large it is.
    pub fn new<T: Serialize + ?Sized>(value: &T) -> StorageResult<Self> {
        tt_domain::text::json_text(value).map(Self).map_err(|err| {
            crate::error::StorageError::Other(format!("cannot serialize a run document: {err}"))
        })
    }

    /// The text of a JSON value already parsed (so valid), as it is when it is on one line,
    /// else serialized again compactly.
    pub fn from_raw(raw: &serde_json::value::RawValue) -> StorageResult<Self> {
        let text = raw.get();
        if text.bytes().any(|byte| byte == b'\n' || byte == b'\r') {
            // Whitespace between tokens (a JSON string escapes its line breaks).
            let value: Value = serde_json::from_str(text).map_err(|err| {
                crate::error::StorageError::Other(format!("a run document is not JSON: {err}"))
            })?;
            return Self::new(&value);
        }
        Ok(Self(text.to_owned()))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The document as a `Value`.
    pub fn to_value(&self) -> StorageResult<Value> {
        serde_json::from_str(&self.0).map_err(|err| {
            crate::error::StorageError::Other(format!(
                "a serialized run document is not JSON: {err}"
            ))
        })
    }
}

/// What a conditional task transition did.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTransitionOutcome {
    pub task: AgentTaskRecord,
    /// False when the task was already terminal (first terminal write wins).
    pub changed: bool,
}

/// The run's tasks that `keep` keeps, in creation order, by listing them all (what the
/// filtered listings of [`AgentInvocationRepository`] do for a store that does not index tasks).
pub async fn tasks_where<R: AgentInvocationRepository + ?Sized>(
    repo: &R,
    run_id: &RunId,
    keep: impl Fn(&AgentTaskRecord) -> bool,
) -> StorageResult<Vec<AgentTaskRecord>> {
    let mut tasks = repo.list_tasks(run_id).await?;
    tasks.retain(keep);
    Ok(tasks)
}

/// How many tasks `parent` delegated, counted from the listing of its tasks (what
/// [`AgentInvocationRepository::count_delegations_by_parent`] does for a store that does not
/// index tasks).
pub async fn delegations_listed<R: AgentInvocationRepository + ?Sized>(
    repo: &R,
    run_id: &RunId,
    parent: &InvocationId,
) -> StorageResult<u64> {
    Ok(repo
        .list_tasks_by_parent(run_id, parent)
        .await?
        .iter()
        .filter(|task| task.continuation == TaskContinuation::ReturnToParent)
        .count() as u64)
}

/// The workspace keys of the run's tasks that are `base` or start with `base-`, picked from
/// the listing of all its tasks (what [`AgentInvocationRepository::workspace_keys_like`] does
/// for a store that does not index tasks).
pub async fn workspace_keys_listed<R: AgentInvocationRepository + ?Sized>(
    repo: &R,
    run_id: &RunId,
    base: &str,
) -> StorageResult<Vec<String>> {
    let prefix = format!("{base}-");
    Ok(repo
        .list_tasks(run_id)
        .await?
        .into_iter()
        .map(|task| task.workspace_key)
        .filter(|key| key == base || key.starts_with(&prefix))
        .collect())
}

#[async_trait]
pub trait AgentInvocationRepository: Send + Sync {
    async fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()>;

    async fn load_invocation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> StorageResult<AgentInvocation>;

    /// All invocations of a run, in creation order (`AgentInvocation::creation_order`:
    /// `creationSeq`, then `createdAt`, then id).
    async fn list_invocations(&self, run_id: &RunId) -> StorageResult<Vec<AgentInvocation>>;

    /// Creates a task record; `AlreadyExists` if the id is taken.
    async fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()>;

    async fn load_task(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<AgentTaskRecord>;

    /// The status of a task, without copying its record: `agent.await` asks for every task it
    /// still waits on at each change of any task, and loads a record only when its status
    /// moved. Stores that keep tasks in memory answer without cloning.
    async fn task_status(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<TaskStatus> {
        Ok(self.load_task(run_id, task_id).await?.status)
    }

    /// All tasks of a run, in creation order (`AgentTaskRecord::creation_order`:
    /// `creationSeq`, then `createdAt`, then id).
    async fn list_tasks(&self, run_id: &RunId) -> StorageResult<Vec<AgentTaskRecord>>;

    /// The tasks `parent` opened (delegations and handoffs), in creation order.
    /// Stores that index tasks answer without reading the others.
    async fn list_tasks_by_parent(
        &self,
        run_id: &RunId,
        parent: &InvocationId,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        tasks_where(self, run_id, |task| task.parent_invocation_id == *parent).await
    }

    /// How many tasks `parent` delegated (continuation `ReturnToParent`; handoffs it opened
    /// are not counted). `agent.delegate` checks this on every call, so stores that index tasks
    /// answer it without listing them: counting by listing costs O(N) per call, O(N²) per
    /// fan-out.
    async fn count_delegations_by_parent(
        &self,
        run_id: &RunId,
        parent: &InvocationId,
    ) -> StorageResult<u64> {
        delegations_listed(self, run_id, parent).await
    }

    /// The workspace keys of the run's tasks (delegations and handoffs share one namespace)
    /// that are `base` itself or start with `base-`, in no particular order.
    async fn workspace_keys_like(&self, run_id: &RunId, base: &str) -> StorageResult<Vec<String>> {
        workspace_keys_listed(self, run_id, base).await
    }

    /// The tasks whose child invocation is `child` (at most one when the runtime wrote them),
    /// in creation order.
    async fn list_tasks_by_child(
        &self,
        run_id: &RunId,
        child: &InvocationId,
    ) -> StorageResult<Vec<AgentTaskRecord>> {
        tasks_where(self, run_id, |task| task.child_invocation_id == *child).await
    }

    /// Applies `transition` atomically with respect to other transitions of the same task:
    /// a task that is already terminal is returned unchanged with `changed = false`.
    async fn transition_task(
        &self,
        run_id: &RunId,
        task_id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_document_is_kept_as_it_is_on_one_line_and_made_compact_otherwise() {
        let raw = |text: &str| serde_json::value::RawValue::from_string(text.to_owned()).unwrap();
        let one_line = SerializedDocument::from_raw(&raw(r#"{"a": [1, "x\ny"]}"#)).unwrap();
        assert_eq!(one_line.as_str(), r#"{"a": [1, "x\ny"]}"#);
        let spread = SerializedDocument::from_raw(&raw("{\n  \"a\": [1,\r\n 2]\n}")).unwrap();
        assert_eq!(spread.as_str(), r#"{"a":[1,2]}"#);
    }

    #[test]
    fn every_document_reads_back_from_its_logical_path() {
        let agent = InvocationId::from_raw("inv_0123");
        let documents = [
            RunDocument::PromptSnapshot,
            RunDocument::ResolvedProfile,
            RunDocument::PersistSnapshot,
            RunDocument::InvocationToolSnapshot(agent.clone()),
            RunDocument::InvocationResolvedSkills(InvocationId::root()),
            RunDocument::InvocationResolvedSkills(agent.clone()),
            RunDocument::InvocationPromptSnapshot(agent.clone()),
            RunDocument::InvocationPromptAssembly(agent.clone()),
            RunDocument::InvocationForkPrefix(agent.clone()),
            RunDocument::ToolArgs {
                call_file_key: "call_0123456789abcdef".into(),
            },
            RunDocument::ToolResult {
                call_file_key: "call_0123456789abcdef".into(),
            },
            RunDocument::ModelResponse {
                invocation_id: InvocationId::root(),
                round: 3,
            },
            RunDocument::ModelResponse {
                invocation_id: agent.clone(),
                round: 12,
            },
            RunDocument::AgentResult(agent),
        ];
        for document in documents {
            assert_eq!(
                RunDocument::from_relative_path(&document.relative_path()),
                Some(document.clone()),
                "{}",
                document.relative_path()
            );
        }
        assert_eq!(RunDocument::from_relative_path("run.json"), None);
        assert_eq!(RunDocument::from_relative_path("tool-args/x"), None);
    }

    #[test]
    fn a_model_response_path_has_its_round_in_at_least_three_digits() {
        let agent = InvocationId::from_raw("inv_0123");
        for round in [0, 1, 9, 10, 99, 100, 999, 1_000, 12_345, u32::MAX] {
            let root = RunDocument::ModelResponse {
                invocation_id: InvocationId::root(),
                round,
            };
            assert_eq!(
                root.relative_path(),
                format!("model-responses/round-{round:03}.json")
            );
            let delegated = RunDocument::ModelResponse {
                invocation_id: agent.clone(),
                round,
            };
            assert_eq!(
                delegated.relative_path(),
                format!("model-responses/inv_0123/round-{round:03}.json")
            );
        }
    }
}
