//! Commit bridges a host can choose from: answer through the host API
//! (`resolve_chat_commit`, and `resolve_agent_persistent_state_metadata_update` for the
//! metadata handshake at finish), or record commits in a transcript file (the CLI's stand-in
//! for a chat window, which keeps no metadata and acknowledges the handshake at once).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tt_domain::ids::{CommitId, RunId};
use tt_ports::{
    ChatCommitReceipt, ChatCommitRequest, CommitAnswer, HostBridgeError, HostCommitBridge,
    MetadataUpdateAnswer, PersistentStateMetadataUpdate,
};

/// Error of a host's `resolve_chat_commit` call, with its contract code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ResolveCommitError {
    pub code: &'static str,
    pub message: String,
}

struct PendingCommit {
    run_id: RunId,
    request: ChatCommitRequest,
    reply: oneshot::Sender<Result<ChatCommitReceipt, HostBridgeError>>,
}

type PendingMap = Arc<Mutex<HashMap<CommitId, PendingCommit>>>;

struct PendingMetadataUpdate {
    run_id: RunId,
    reply: oneshot::Sender<Result<(), HostBridgeError>>,
}

type PendingMetadataMap = Arc<Mutex<HashMap<String, PendingMetadataUpdate>>>;

/// Parks each commit until the host resolves it by `commitId`, and each persistent-state
/// metadata update until the host resolves it by `updateId` (or the run is cancelled).
#[derive(Default)]
pub struct HostApiCommitBridge {
    pending: PendingMap,
    metadata: PendingMetadataMap,
}

/// Withdraws a metadata update when its answer is dropped unanswered (cancel).
struct WithdrawMetadata {
    pending: PendingMetadataMap,
    update_id: String,
}

impl Drop for WithdrawMetadata {
    fn drop(&mut self) {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.update_id);
    }
}

/// Withdraws a commit from the pending map when its answer is dropped unanswered (cancel).
struct Withdraw {
    pending: PendingMap,
    commit_id: CommitId,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.commit_id);
    }
}

impl std::fmt::Debug for HostApiCommitBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostApiCommitBridge")
            .finish_non_exhaustive()
    }
}

impl HostApiCommitBridge {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CommitId, PendingCommit>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The full request of a pending commit (including the text), for a host that did not
    /// keep the event.
    pub fn pending_request(
        &self,
        run_id: &RunId,
        commit_id: &CommitId,
    ) -> Result<ChatCommitRequest, ResolveCommitError> {
        let pending = self.lock();
        let entry = pending
            .get(commit_id)
            .ok_or_else(|| not_pending(commit_id))?;
        if &entry.run_id != run_id {
            return Err(run_mismatch(commit_id));
        }
        Ok(entry.request.clone())
    }

    /// Completes a pending commit with exactly one of `message_id` or `error`.
    pub fn resolve(
        &self,
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
                    code: "agent.chat_commit_resolve_invalid",
                    message: "give exactly one of messageId or error".to_owned(),
                });
            }
        };
        let entry = {
            let mut pending = self.lock();
            match pending.get(commit_id) {
                None => return Err(not_pending(commit_id)),
                Some(entry) if &entry.run_id != run_id => return Err(run_mismatch(commit_id)),
                Some(_) => pending.remove(commit_id),
            }
        };
        if let Some(entry) = entry {
            entry.reply.send(answer).map_err(|_| ResolveCommitError {
                code: "agent.chat_commit_channel_closed",
                message: format!("commit {commit_id} is no longer awaited"),
            })?;
        }
        Ok(())
    }
}

impl HostApiCommitBridge {
    /// Completes a pending persistent-state metadata update: `error` (non-empty) fails it,
    /// none acknowledges it.
    pub fn resolve_metadata_update(
        &self,
        run_id: &RunId,
        update_id: &str,
        error: Option<String>,
    ) -> Result<(), ResolveCommitError> {
        let entry = {
            let mut pending = self
                .metadata
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match pending.get(update_id) {
                None => {
                    return Err(ResolveCommitError {
                        code: "agent.persistent_state_metadata_update_not_pending",
                        message: format!("metadata update {update_id} is not pending"),
                    });
                }
                Some(entry) if &entry.run_id != run_id => {
                    return Err(ResolveCommitError {
                        code: "agent.persistent_state_metadata_update_run_mismatch",
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
        if let Some(entry) = entry {
            entry.reply.send(answer).map_err(|_| ResolveCommitError {
                code: "agent.persistent_state_metadata_update_channel_closed",
                message: format!("metadata update {update_id} is no longer awaited"),
            })?;
        }
        Ok(())
    }
}

fn not_pending(commit_id: &CommitId) -> ResolveCommitError {
    ResolveCommitError {
        code: "agent.chat_commit_not_pending",
        message: format!("commit {commit_id} is not pending"),
    }
}

fn run_mismatch(commit_id: &CommitId) -> ResolveCommitError {
    ResolveCommitError {
        code: "agent.chat_commit_run_mismatch",
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
        {
            let mut pending = self.lock();
            if pending.contains_key(&commit_id) {
                return Err(HostBridgeError::Unavailable(format!(
                    "agent.chat_commit_id_collision: {commit_id}"
                )));
            }
            pending.insert(
                commit_id.clone(),
                PendingCommit {
                    run_id: request.run_id.clone(),
                    request,
                    reply,
                },
            );
        }
        let withdraw = Withdraw {
            pending: Arc::clone(&self.pending),
            commit_id,
        };
        Ok(Box::pin(async move {
            let _withdraw = withdraw;
            answer.await.unwrap_or_else(|_| {
                Err(HostBridgeError::Unavailable(
                    "agent.chat_commit_channel_closed".to_owned(),
                ))
            })
        }))
    }

    async fn request_metadata_update(
        &self,
        request: PersistentStateMetadataUpdate,
    ) -> Result<MetadataUpdateAnswer, HostBridgeError> {
        let (reply, answer) = oneshot::channel();
        let update_id = request.update_id.clone();
        {
            let mut pending = self
                .metadata
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if pending.contains_key(&update_id) {
                return Err(HostBridgeError::Unavailable(format!(
                    "agent.persistent_state_metadata_update_id_collision: {update_id}"
                )));
            }
            pending.insert(
                update_id.clone(),
                PendingMetadataUpdate {
                    run_id: request.run_id,
                    reply,
                },
            );
        }
        let withdraw = WithdrawMetadata {
            pending: Arc::clone(&self.metadata),
            update_id,
        };
        Ok(Box::pin(async move {
            let _withdraw = withdraw;
            answer.await.unwrap_or_else(|_| {
                Err(HostBridgeError::Unavailable(
                    "agent.persistent_state_metadata_update_channel_closed".to_owned(),
                ))
            })
        }))
    }
}

/// One published message in a transcript file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptEntry {
    pub message_id: String,
    pub run_id: String,
    pub commit_id: String,
    pub mode: String,
    pub path: String,
    pub content: String,
}

/// Records every commit as a JSON line in `<dir>/<workspaceId>.jsonl` and answers at once.
///
/// Message ids count per transcript: a run's first commit creates message `N+1`; its later
/// commits reuse that id (`replace` overwrites the message, `append` extends it).
#[derive(Debug)]
pub struct TranscriptCommitBridge {
    dir: PathBuf,
    state: Mutex<HashMap<String, String>>, // runId -> messageId
}

impl TranscriptCommitBridge {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            state: Mutex::new(HashMap::new()),
        }
    }

    pub fn transcript_path(&self, workspace_id: &str) -> PathBuf {
        self.dir.join(format!("{workspace_id}.jsonl"))
    }

    /// Every entry recorded for a workspace, oldest first.
    pub fn read_transcript(&self, workspace_id: &str) -> std::io::Result<Vec<TranscriptEntry>> {
        let text = match std::fs::read_to_string(self.transcript_path(workspace_id)) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    fn record(&self, request: &ChatCommitRequest) -> std::io::Result<String> {
        std::fs::create_dir_all(&self.dir)?;
        let workspace_id = request.workspace_id.as_str();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let message_id = match state.get(request.run_id.as_str()) {
            Some(id) => id.clone(),
            None => {
                let existing = self.read_transcript(workspace_id)?;
                let mut ids: Vec<&str> = existing
                    .iter()
                    .map(|entry| entry.message_id.as_str())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                let id = (ids.len() + 1).to_string();
                state.insert(request.run_id.to_string(), id.clone());
                id
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
        let line = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.transcript_path(workspace_id))?;
        file.write_all(format!("{line}\n").as_bytes())?;
        file.sync_data()?;
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
            .map(|message_id| ChatCommitReceipt { message_id })
            .map_err(|err| {
                HostBridgeError::Rejected(format!("could not write the transcript: {err}"))
            });
        Ok(Box::pin(std::future::ready(answer)))
    }
}
