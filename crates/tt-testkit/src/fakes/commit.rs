//! `FakeCommitBridge`: a `HostCommitBridge` that approves, rejects or hangs, switchable while a
//! test runs, recording every `ChatCommitRequest` it receives; persistent-state metadata
//! updates are recorded and acknowledged, or rejected after `reject_metadata_updates`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tt_ports::{
    ChatCommitReceipt, ChatCommitRequest, CommitAnswer, HostBridgeError, HostCommitBridge,
    MetadataUpdateAnswer, PersistentStateMetadataUpdate,
};

/// How the bridge answers a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitBehavior {
    /// Publishes the commit; message ids are `"1"`, `"2"`, … in order of approval.
    Approve,
    /// Answers with `HostBridgeError::Rejected(message)`.
    Reject(String),
    /// Waits until the runtime drops the answer (run cancel) or until the behaviour is
    /// switched, in which case the waiting commit is answered by the new one.
    Hang,
}

#[derive(Debug, Default)]
struct Ledger {
    requests: Vec<ChatCommitRequest>,
    receipts: Vec<ChatCommitReceipt>,
    approved: u64,
    metadata_updates: Vec<PersistentStateMetadataUpdate>,
    /// When set, metadata updates are answered with this error.
    metadata_rejection: Option<String>,
    /// When set, metadata updates are never answered (a host that forgot them).
    metadata_silent: bool,
}

/// The host side of `workspace.commit`, for tests.
#[derive(Debug)]
pub struct FakeCommitBridge {
    behavior: Arc<watch::Sender<CommitBehavior>>,
    pending: Arc<watch::Sender<usize>>,
    ledger: Arc<Mutex<Ledger>>,
}

/// Decrements the pending count however the waiting commit ends (answer, cancel or drop).
struct PendingGuard(Arc<watch::Sender<usize>>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl FakeCommitBridge {
    pub fn new(behavior: CommitBehavior) -> Arc<Self> {
        Arc::new(Self {
            behavior: Arc::new(watch::Sender::new(behavior)),
            pending: Arc::new(watch::Sender::new(0)),
            ledger: Arc::new(Mutex::new(Ledger::default())),
        })
    }

    pub fn approving() -> Arc<Self> {
        Self::new(CommitBehavior::Approve)
    }

    pub fn rejecting(message: impl Into<String>) -> Arc<Self> {
        Self::new(CommitBehavior::Reject(message.into()))
    }

    pub fn hanging() -> Arc<Self> {
        Self::new(CommitBehavior::Hang)
    }

    /// Switches the behaviour; commits currently hanging are answered by the new behaviour
    /// (or keep hanging if it is `Hang` again).
    pub fn set_behavior(&self, behavior: CommitBehavior) {
        self.behavior.send_replace(behavior);
    }

    pub fn approve(&self) {
        self.set_behavior(CommitBehavior::Approve);
    }

    pub fn reject(&self, message: impl Into<String>) {
        self.set_behavior(CommitBehavior::Reject(message.into()));
    }

    pub fn hang(&self) {
        self.set_behavior(CommitBehavior::Hang);
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every request received, in order (approved, rejected, hanging or cancelled).
    pub fn requests(&self) -> Vec<ChatCommitRequest> {
        self.ledger().requests.clone()
    }

    /// Every persistent-state metadata update received, in order.
    pub fn metadata_updates(&self) -> Vec<PersistentStateMetadataUpdate> {
        self.ledger().metadata_updates.clone()
    }

    /// Never answers the following metadata updates.
    pub fn ignore_metadata_updates(&self) {
        self.ledger().metadata_silent = true;
    }

    /// Answers the following metadata updates with `HostBridgeError::Rejected(message)`.
    pub fn reject_metadata_updates(&self, message: impl Into<String>) {
        self.ledger().metadata_rejection = Some(message.into());
    }

    /// Receipts handed out so far.
    pub fn receipts(&self) -> Vec<ChatCommitReceipt> {
        self.ledger().receipts.clone()
    }

    /// Number of commits currently hanging.
    pub fn pending_count(&self) -> usize {
        *self.pending.borrow()
    }

    /// Resolves once at least `count` commits are hanging.
    pub async fn wait_for_pending(&self, count: usize) {
        let mut pending = self.pending.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = pending.wait_for(|current| *current >= count).await;
    }

    /// Registers and awaits one commit, racing `cancel` (what the runtime does).
    pub async fn commit(
        &self,
        request: ChatCommitRequest,
        cancel: CancellationToken,
    ) -> Result<ChatCommitReceipt, HostBridgeError> {
        if cancel.is_cancelled() {
            self.ledger().requests.push(request);
            return Err(HostBridgeError::Cancelled);
        }
        let answer = self.request_commit(request).await?;
        tokio::select! {
            () = cancel.cancelled() => Err(HostBridgeError::Cancelled),
            answer = answer => answer,
        }
    }
}

/// The answer `behavior` gives now, or `None` while it hangs.
fn answer(
    ledger: &Mutex<Ledger>,
    behavior: &CommitBehavior,
) -> Option<Result<ChatCommitReceipt, HostBridgeError>> {
    match behavior {
        CommitBehavior::Approve => {
            let mut ledger = ledger.lock().unwrap_or_else(PoisonError::into_inner);
            ledger.approved += 1;
            let receipt = ChatCommitReceipt {
                message_id: ledger.approved.to_string(),
            };
            ledger.receipts.push(receipt.clone());
            Some(Ok(receipt))
        }
        CommitBehavior::Reject(message) => Some(Err(HostBridgeError::Rejected(message.clone()))),
        CommitBehavior::Hang => None,
    }
}

#[async_trait]
impl HostCommitBridge for FakeCommitBridge {
    async fn request_commit(
        &self,
        request: ChatCommitRequest,
    ) -> Result<CommitAnswer, HostBridgeError> {
        self.ledger().requests.push(request);
        let mut behavior = self.behavior.subscribe();
        let ledger = Arc::clone(&self.ledger);
        let current = behavior.borrow_and_update().clone();
        if let Some(ready) = answer(&ledger, &current) {
            return Ok(Box::pin(std::future::ready(ready)));
        }
        // Counted as pending from registration until the answer resolves or is dropped.
        self.pending.send_modify(|count| *count += 1);
        let guard = PendingGuard(Arc::clone(&self.pending));
        Ok(Box::pin(async move {
            let _guard = guard;
            loop {
                if behavior.changed().await.is_err() {
                    // The sender lives in the bridge; treat a closed channel as a lost host.
                    return Err(HostBridgeError::Unavailable(
                        "fake host bridge closed".into(),
                    ));
                }
                let current = behavior.borrow_and_update().clone();
                if let Some(ready) = answer(&ledger, &current) {
                    return ready;
                }
            }
        }))
    }

    async fn request_metadata_update(
        &self,
        request: PersistentStateMetadataUpdate,
    ) -> Result<MetadataUpdateAnswer, HostBridgeError> {
        let mut ledger = self.ledger();
        ledger.metadata_updates.push(request);
        if ledger.metadata_silent {
            return Ok(Box::pin(std::future::pending()));
        }
        let answer = match &ledger.metadata_rejection {
            Some(message) => Err(HostBridgeError::Rejected(message.clone())),
            None => Ok(()),
        };
        Ok(Box::pin(std::future::ready(answer)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tt_domain::ids::{CheckpointId, CommitId, InvocationId, RunId, WorkspaceId};

    fn request(n: u32) -> ChatCommitRequest {
        ChatCommitRequest {
            commit_id: CommitId::from_raw(format!("commit_{n}")),
            run_id: RunId::from_raw("run_a"),
            invocation_id: InvocationId::root(),
            call_id: format!("call_{n}"),
            workspace_id: WorkspaceId::from_raw("chat_0"),
            stable_chat_id: "chat-1".into(),
            chat_ref: json!(null),
            generation_type: json!("normal"),
            profile_id: None,
            path: "output/main.md".into(),
            mode: "replace".into(),
            reason: None,
            content: "hello".into(),
            chars: 5,
            words: 1,
            sha256: "x".into(),
            checkpoint_id: CheckpointId::from_seq(1),
        }
    }

    #[tokio::test]
    async fn approves_with_counting_message_ids_and_records_requests() {
        let bridge = FakeCommitBridge::approving();
        let token = CancellationToken::new();
        let first = bridge.commit(request(1), token.clone()).await.unwrap();
        let second = bridge.commit(request(2), token.clone()).await.unwrap();
        assert_eq!(first.message_id, "1");
        assert_eq!(second.message_id, "2");
        bridge.reject("host refused");
        assert_eq!(
            bridge.commit(request(3), token).await.unwrap_err(),
            HostBridgeError::Rejected("host refused".into())
        );
        let calls: Vec<String> = bridge.requests().into_iter().map(|r| r.call_id).collect();
        assert_eq!(calls, ["call_1", "call_2", "call_3"]);
        assert_eq!(bridge.receipts().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn hanging_commit_ends_on_cancel_or_switch() {
        let bridge = FakeCommitBridge::hanging();
        let token = CancellationToken::new();
        let cancelled = tokio::spawn({
            let bridge = bridge.clone();
            let token = token.clone();
            async move { bridge.commit(request(1), token).await }
        });
        let approved = tokio::spawn({
            let bridge = bridge.clone();
            async move { bridge.commit(request(2), CancellationToken::new()).await }
        });
        bridge.wait_for_pending(2).await;
        token.cancel();
        assert_eq!(cancelled.await.unwrap(), Err(HostBridgeError::Cancelled));
        bridge.wait_for_pending(1).await;
        assert_eq!(bridge.pending_count(), 1);
        bridge.approve();
        assert_eq!(approved.await.unwrap().unwrap().message_id, "1");
        assert_eq!(bridge.pending_count(), 0);
    }
}
