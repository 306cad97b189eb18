//! Commit bridges a host can choose from: answer through the host API
//! (`resolve_chat_commit`, `pending_commits`, or a commit handler the bridge calls, and
//! `resolve_agent_persistent_state_metadata_update` for the metadata handshake at finish), or
//! record commits in the store's transcript (the CLI's stand-in for a chat window, which keeps
//! no metadata and acknowledges the handshake at once).

use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tt_domain::error_codes;
use tt_domain::ids::{CommitId, RunId};
use tt_ports::{
    ChatCommitReceipt, ChatCommitRequest, CommitAnswer, HostBridgeError, HostCommitBridge,
    MetadataUpdateAnswer, PersistentStateMetadataUpdate, StorageResult, TranscriptRepository,
};

pub use tt_domain::transcript::TranscriptEntry;

/// Error of a host's `resolve_chat_commit` call, with its contract code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ResolveCommitError {
    pub code: tt_domain::error_codes::Code,
    pub message: String,
}

struct PendingCommit {
    /// Registration order, so `pending_commits` lists commits oldest first.
    order: u64,
    run_id: RunId,
    request: ChatCommitRequest,
    reply: oneshot::Sender<Result<ChatCommitReceipt, HostBridgeError>>,
}

#[derive(Default)]
struct PendingState {
    next_order: u64,
    commits: HashMap<CommitId, PendingCommit>,
}

struct PendingMetadataUpdate {
    run_id: RunId,
    request: PersistentStateMetadataUpdate,
    reply: oneshot::Sender<Result<(), HostBridgeError>>,
}

type PendingMetadataMap = Arc<Mutex<HashMap<String, PendingMetadataUpdate>>>;

type PendingMap = Arc<Mutex<PendingState>>;

/// What a commit handler answers: `Ok(messageId)` once the text is published, or `Err(reason)`
/// to refuse it (the run then fails, or ends `partial_success` after an earlier commit).
pub type CommitHandlerResult = Result<String, String>;

/// A host's async commit handler: the bridge calls it once per commit, with the typed request.
pub(crate) type CommitHandler = Arc<
    dyn Fn(
            ChatCommitRequest,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = CommitHandlerResult> + Send>>
        + Send
        + Sync,
>;

/// Parks each commit until the host resolves it by `commitId`, and each persistent-state
/// metadata update until the host resolves it by `updateId` (or the run is cancelled). With a
/// commit handler, the bridge also hands each commit to the handler and resolves it with the
/// handler's answer; the commit stays visible to `pending_commits` (and answerable by
/// `resolve_chat_commit`) until then, and the first answer wins.
#[derive(Default)]
pub(crate) struct HostApiCommitBridge {
    pending: PendingMap,
    handler: Option<CommitHandler>,
    metadata: PendingMetadataMap,
}

/// Withdraws a metadata update when its answer is dropped unanswered (cancel).
struct WithdrawMetadata {
    pending: PendingMetadataMap,
    update_id: String,
}

impl Drop for WithdrawMetadata {
    fn drop(&mut self) {
        lock(&self.pending).remove(&self.update_id);
    }
}

/// Withdraws a commit from the pending map when its answer is dropped unanswered (cancel), and
/// stops the commit handler still working on it.
struct Withdraw {
    pending: PendingMap,
    commit_id: CommitId,
    handler_task: Option<tokio::task::AbortHandle>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        lock(&self.pending).commits.remove(&self.commit_id);
        if let Some(task) = &self.handler_task {
            task.abort();
        }
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The map behind `mutex`, also after a holder panicked (each change of a map is whole).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl std::fmt::Debug for HostApiCommitBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostApiCommitBridge")
            .finish_non_exhaustive()
    }
}

impl HostApiCommitBridge {
    /// A bridge that also hands every commit to `handler`.
    pub(crate) fn with_handler(handler: CommitHandler) -> Self {
        Self {
            pending: PendingMap::default(),
            handler: Some(handler),
            metadata: PendingMetadataMap::default(),
        }
    }

    /// Every commit of `run_id` still waiting for an answer, oldest first.
    pub(crate) fn pending_for_run(&self, run_id: &RunId) -> Vec<ChatCommitRequest> {
        let pending = lock(&self.pending);
        let mut commits: Vec<&PendingCommit> = pending
            .commits
            .values()
            .filter(|entry| &entry.run_id == run_id)
            .collect();
        commits.sort_by_key(|entry| entry.order);
        commits
            .into_iter()
            .map(|entry| entry.request.clone())
            .collect()
    }

    /// Completes a pending commit with exactly one of `message_id` or `error`.
    pub(crate) fn resolve(
        &self,
        run_id: &RunId,
        commit_id: &CommitId,
        message_id: Option<String>,
        error: Option<String>,
    ) -> Result<(), ResolveCommitError> {
        resolve_pending(&self.pending, run_id, commit_id, message_id, error)
    }
}

impl HostApiCommitBridge {
    /// Every persistent-state metadata update of `run_id` still waiting for an answer, by id.
    pub(crate) fn pending_metadata_updates(
        &self,
        run_id: &RunId,
    ) -> Vec<PersistentStateMetadataUpdate> {
        let pending = lock(&self.metadata);
        let mut updates: Vec<PersistentStateMetadataUpdate> = pending
            .values()
            .filter(|entry| &entry.run_id == run_id)
            .map(|entry| entry.request.clone())
            .collect();
        updates.sort_by(|a, b| a.update_id.cmp(&b.update_id));
        updates
    }

    /// Completes a pending persistent-state metadata update: `error` (non-empty) fails it,
    /// none acknowledges it.
    pub(crate) fn resolve_metadata_update(
        &self,
        run_id: &RunId,
        update_id: &str,
        error: Option<String>,
    ) -> Result<(), ResolveCommitError> {
        let entry = {
            let mut pending = lock(&self.metadata);
            match pending.get(update_id) {
                None => {
                    return Err(ResolveCommitError {
                        code: error_codes::AGENT_PERSISTENT_STATE_METADATA_UPDATE_NOT_PENDING,
                        message: format!("metadata update {update_id} is not pending"),
                    });
                }
                Some(entry) if &entry.run_id != run_id => {
                    return Err(ResolveCommitError {
                        code: error_codes::AGENT_PERSISTENT_STATE_METADATA_UPDATE_RUN_MISMATCH,
                        message: format!("metadata update {update_id} belongs to another run"),
                    });
                }
                Some(_) => pending.remove(update_id),
            }
        };
        let answer = match error.filter(|error| !error.trim().is_empty()) {
            Some(error) => Err(HostBridgeError::Rejected(error)),
            None => Ok(()),
        };
        send_answer(entry.map(|entry| entry.reply), answer, || {
            ResolveCommitError {
                code: error_codes::AGENT_PERSISTENT_STATE_METADATA_UPDATE_CHANNEL_CLOSED,
                message: format!("metadata update {update_id} is no longer awaited"),
            }
        })
    }
}

fn resolve_pending(
    pending: &PendingMap,
    run_id: &RunId,
    commit_id: &CommitId,
    message_id: Option<String>,
    error: Option<String>,
) -> Result<(), ResolveCommitError> {
    let answer = match (
        message_id.filter(|id| !id.trim().is_empty()),
        error.filter(|e| !e.trim().is_empty()),
    ) {
        (Some(id), None) => Ok(ChatCommitReceipt { message_id: id }),
        (None, Some(error)) => Err(HostBridgeError::Rejected(error)),
        _ => {
            return Err(ResolveCommitError {
                code: error_codes::AGENT_CHAT_COMMIT_RESOLVE_INVALID,
                message: "give exactly one of messageId or error".to_owned(),
            });
        }
    };
    let entry = {
        let mut pending = lock(pending);
        match pending.commits.get(commit_id) {
            None => return Err(not_pending(commit_id)),
            Some(entry) if &entry.run_id != run_id => return Err(run_mismatch(commit_id)),
            Some(_) => pending.commits.remove(commit_id),
        }
    };
    send_answer(entry.map(|entry| entry.reply), answer, || {
        ResolveCommitError {
            code: error_codes::AGENT_CHAT_COMMIT_CHANNEL_CLOSED,
            message: format!("commit {commit_id} is no longer awaited"),
        }
    })
}

/// Hands a host's answer to the agent waiting on `reply` (none: nothing waits); `closed` is the
/// error when the agent no longer waits.
fn send_answer<T>(
    reply: Option<oneshot::Sender<T>>,
    answer: T,
    closed: impl FnOnce() -> ResolveCommitError,
) -> Result<(), ResolveCommitError> {
    match reply {
        Some(reply) => reply.send(answer).map_err(|_| closed()),
        None => Ok(()),
    }
}

fn not_pending(commit_id: &CommitId) -> ResolveCommitError {
    ResolveCommitError {
        code: error_codes::AGENT_CHAT_COMMIT_NOT_PENDING,
        message: format!("commit {commit_id} is not pending"),
    }
}

fn run_mismatch(commit_id: &CommitId) -> ResolveCommitError {
    ResolveCommitError {
        code: error_codes::AGENT_CHAT_COMMIT_RUN_MISMATCH,
        message: format!("commit {commit_id} belongs to another run"),
    }
}

#[async_trait]
impl HostCommitBridge for HostApiCommitBridge {
    async fn request_commit(
        &self,
        request: ChatCommitRequest,
    ) -> Result<CommitAnswer, HostBridgeError> {
        let (reply, answer) = oneshot::channel();
        let commit_id = request.commit_id.clone();
        let run_id = request.run_id.clone();
        let for_handler = self.handler.as_ref().map(|_| request.clone());
        {
            let mut pending = lock(&self.pending);
            if pending.commits.contains_key(&commit_id) {
                return Err(HostBridgeError::Unavailable(format!(
                    "{}: {commit_id}",
                    error_codes::AGENT_CHAT_COMMIT_ID_COLLISION
                )));
            }
            let order = pending.next_order;
            pending.next_order += 1;
            pending.commits.insert(
                commit_id.clone(),
                PendingCommit {
                    order,
                    run_id: run_id.clone(),
                    request,
                    reply,
                },
            );
        }
        // The commit is registered before the handler starts, so the handler's answer (or the
        // host's, whichever comes first) always finds it.
        let handler_task = self
            .handler
            .as_ref()
            .zip(for_handler)
            .map(|(handler, request)| {
                let answer = handler(request);
                let pending = Arc::clone(&self.pending);
                let commit_id = commit_id.clone();
                tokio::spawn(async move {
                    // The handler runs in a task of its own so that a panic in it refuses the
                    // commit instead of leaving it pending; aborting this task aborts it too.
                    let mut handler = AbortOnDrop(tokio::spawn(answer));
                    // An empty answer would also leave the commit pending forever: a refusal.
                    let refusal = |reason: &str| (None, Some(reason.to_owned()));
                    let (message_id, error) = match (&mut handler.0).await {
                        Ok(Ok(message_id)) if !message_id.trim().is_empty() => {
                            (Some(message_id), None)
                        }
                        Ok(Ok(_)) => refusal("the commit handler gave an empty message id"),
                        Ok(Err(reason)) if !reason.trim().is_empty() => (None, Some(reason)),
                        Ok(Err(_)) => refusal("the commit handler refused the commit"),
                        Err(_) => refusal("the commit handler failed (it panicked)"),
                    };
                    // `not_pending`: the host answered first or the run was cancelled; nothing to do.
                    let _ = resolve_pending(&pending, &run_id, &commit_id, message_id, error);
                })
                .abort_handle()
            });
        let withdraw = Withdraw {
            pending: Arc::clone(&self.pending),
            commit_id,
            handler_task,
        };
        Ok(awaited(
            answer,
            withdraw,
            error_codes::AGENT_CHAT_COMMIT_CHANNEL_CLOSED,
        ))
    }

    async fn request_metadata_update(
        &self,
        request: PersistentStateMetadataUpdate,
    ) -> Result<MetadataUpdateAnswer, HostBridgeError> {
        if self.handler.is_some() {
            // A host that publishes through a commit handler answers nothing by id: like the
            // transcript bridge, the bridge acknowledges the update at once.
            return Ok(Box::pin(async { Ok(()) }));
        }
        let (reply, answer) = oneshot::channel();
        let update_id = request.update_id.clone();
        {
            let mut pending = lock(&self.metadata);
            if pending.contains_key(&update_id) {
                return Err(HostBridgeError::Unavailable(format!(
                    "{}: {update_id}",
                    error_codes::AGENT_PERSISTENT_STATE_METADATA_UPDATE_ID_COLLISION
                )));
            }
            pending.insert(
                update_id.clone(),
                PendingMetadataUpdate {
                    run_id: request.run_id.clone(),
                    request,
                    reply,
                },
            );
        }
        let withdraw = WithdrawMetadata {
            pending: Arc::clone(&self.metadata),
            update_id,
        };
        Ok(awaited(
            answer,
            withdraw,
            error_codes::AGENT_PERSISTENT_STATE_METADATA_UPDATE_CHANNEL_CLOSED,
        ))
    }
}

/// The host's answer as the agent waits for it: `closed` when nothing can answer any more;
/// `withdraw`, dropped with the wait, takes the request back from the pending ones.
fn awaited<T: Send + 'static>(
    answer: oneshot::Receiver<Result<T, HostBridgeError>>,
    withdraw: impl Send + 'static,
    closed: error_codes::Code,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, HostBridgeError>> + Send>> {
    Box::pin(async move {
        let _withdraw = withdraw;
        answer
            .await
            .unwrap_or_else(|_| Err(HostBridgeError::Unavailable(closed.to_string())))
    })
}

/// Records every commit as an entry of the workspace's transcript, in the store's transcript
/// port (`transcripts/<workspaceId>.jsonl` in a data dir, rows on PostgreSQL), and answers
/// once it is stored.
///
/// Message ids count per transcript: a run's first commit creates message `N+1`; its later
/// commits reuse that id (`replace` overwrites the message, `append` extends it).
pub(crate) struct TranscriptCommitBridge {
    store: Arc<dyn TranscriptRepository>,
    // runId -> messageId; held across the read and the append so ids are handed out in turn.
    state: tokio::sync::Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for TranscriptCommitBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TranscriptCommitBridge")
            .finish_non_exhaustive()
    }
}

impl TranscriptCommitBridge {
    pub(crate) fn new(store: Arc<dyn TranscriptRepository>) -> Self {
        Self {
            store,
            state: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Every entry recorded for a workspace, oldest first.
    pub(crate) async fn read_transcript(
        &self,
        workspace_id: &str,
    ) -> StorageResult<Vec<TranscriptEntry>> {
        self.store.read_transcript(workspace_id).await
    }

    async fn record(&self, request: &ChatCommitRequest) -> StorageResult<String> {
        let workspace_id = request.workspace_id.as_str();
        let mut state = self.state.lock().await;
        let message_id = match state.get(request.run_id.as_str()) {
            Some(id) => id.clone(),
            None => {
                let existing = self.store.read_transcript(workspace_id).await?;
                let mut ids: Vec<&str> = existing
                    .iter()
                    .map(|entry| entry.message_id.as_str())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                (ids.len() + 1).to_string()
            }
        };
        let entry = TranscriptEntry {
            message_id: message_id.clone(),
            run_id: request.run_id.to_string(),
            commit_id: request.commit_id.to_string(),
            mode: request.mode.clone(),
            path: request.path.clone(),
            content: request.content.clone(),
        };
        self.store
            .append_transcript_entry(workspace_id, &entry)
            .await?;
        // Remembered once stored: a failed first commit leaves the next one to number afresh.
        state.insert(request.run_id.to_string(), message_id.clone());
        Ok(message_id)
    }
}

#[async_trait]
impl HostCommitBridge for TranscriptCommitBridge {
    async fn request_commit(
        &self,
        request: ChatCommitRequest,
    ) -> Result<CommitAnswer, HostBridgeError> {
        let answer = self
            .record(&request)
            .await
            .map(|message_id| ChatCommitReceipt { message_id })
            .map_err(|err| {
                HostBridgeError::Rejected(format!("could not write the transcript: {err}"))
            });
        Ok(Box::pin(std::future::ready(answer)))
    }
}
