//! Runs of one chat finishing at the same moment in two runtimes, each with its own store
//! instance on the same data (docs/storage.md, "One writer per conversation"): in every round
//! exactly one run's `persist/` update becomes the chat's state; the other ends
//! `partial_success` with `agent.persistent_state_conflict`, its update kept in its own
//! `persist/`. On the file store (one data dir) and on PostgreSQL (one database).
//!
//! "The same moment" is made exact, not left to timing: each runtime's workspace port waits,
//! after its run promoted `persist/`, until the other runtime's run has promoted too, so both
//! check the rule with both states on disk.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Barrier;
use tt_adapter_storage_postgres::cluster::TestCluster;
use tt_domain::ids::{CheckpointId, RunId, WorkspaceId};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{
    CheckpointReason, CheckpointRecord, PersistSnapshot, PersistentChangeSet, WorkspacePath,
    WorkspaceRoot, WriteGuard,
};
use tt_ports::{FileContent, StorageResult, WorkspaceEntry, WorkspaceRepository, WriteOutcome};
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, StoragePorts,
    StoreChoice, UserDataStore,
};

use crate::chat_state::{CHAT, persisted, remembering_writer, start};
use crate::delegation::{WRITERS_ROOM, all_events};

const ROUNDS: usize = 50;

/// A workspace port whose promotion returns only once every racer has promoted.
struct MeetingPoint {
    inner: Arc<dyn WorkspaceRepository>,
    barrier: Arc<Barrier>,
}

#[async_trait]
impl WorkspaceRepository for MeetingPoint {
    async fn list(
        &self,
        run_id: &RunId,
        path: Option<&WorkspacePath>,
        depth: u32,
    ) -> StorageResult<Vec<WorkspaceEntry>> {
        self.inner.list(run_id, path, depth).await
    }

    async fn read(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<FileContent> {
        self.inner.read(run_id, path).await
    }

    async fn sha256(&self, run_id: &RunId, path: &WorkspacePath) -> StorageResult<Option<String>> {
        self.inner.sha256(run_id, path).await
    }

    async fn write(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
        guard: &WriteGuard,
    ) -> StorageResult<WriteOutcome> {
        self.inner.write(run_id, path, content, guard).await
    }

    async fn append(
        &self,
        run_id: &RunId,
        path: &WorkspacePath,
        content: &str,
    ) -> StorageResult<WriteOutcome> {
        self.inner.append(run_id, path, content).await
    }

    async fn create_checkpoint(
        &self,
        run_id: &RunId,
        reason: CheckpointReason,
        event_seq: u64,
        paths: &[WorkspacePath],
        created_at: Timestamp,
    ) -> StorageResult<CheckpointRecord> {
        self.inner
            .create_checkpoint(run_id, reason, event_seq, paths, created_at)
            .await
    }

    async fn init_persist_projection(
        &self,
        run_id: &RunId,
        base_state_id: Option<&str>,
    ) -> StorageResult<PersistSnapshot> {
        self.inner
            .init_persist_projection(run_id, base_state_id)
            .await
    }

    async fn promote_persist(
        &self,
        run_id: &RunId,
        snapshot: &PersistSnapshot,
        created_at: Timestamp,
    ) -> StorageResult<PersistentChangeSet> {
        let promoted = self
            .inner
            .promote_persist(run_id, snapshot, created_at)
            .await;
        self.barrier.wait().await;
        promoted
    }

    async fn promoted_state(&self, run_id: &RunId) -> StorageResult<Option<PersistentChangeSet>> {
        self.inner.promoted_state(run_id).await
    }

    async fn chat_head(&self, workspace_id: &WorkspaceId) -> StorageResult<Option<RunId>> {
        self.inner.chat_head(workspace_id).await
    }

    async fn swap_chat_head(
        &self,
        workspace_id: &WorkspaceId,
        expected: Option<&RunId>,
        run_id: &RunId,
    ) -> StorageResult<bool> {
        self.inner
            .swap_chat_head(workspace_id, expected, run_id)
            .await
    }

    async fn walk_files(
        &self,
        run_id: &RunId,
        roots: &[WorkspaceRoot],
        max_depth: u32,
        max_files: usize,
    ) -> StorageResult<Vec<WorkspacePath>> {
        self.inner
            .walk_files(run_id, roots, max_depth, max_files)
            .await
    }

    async fn checkpoint_record(
        &self,
        run_id: &RunId,
        id: &CheckpointId,
    ) -> StorageResult<Option<CheckpointRecord>> {
        self.inner.checkpoint_record(run_id, id).await
    }

    async fn checkpoint_blob(&self, run_id: &RunId, sha256: &str) -> StorageResult<Option<String>> {
        self.inner.checkpoint_blob(run_id, sha256).await
    }
}

/// A runtime on `ports` whose promotions meet at `barrier`, with the `lead` writer profile.
async fn racer(
    dir: &std::path::Path,
    mut ports: StoragePorts,
    barrier: &Arc<Barrier>,
) -> AgentRuntime {
    ports.workspace = Arc::new(MeetingPoint {
        inner: Arc::clone(&ports.workspace),
        barrier: Arc::clone(barrier),
    });
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .store(StoreChoice::Ports(ports))
        .provider(remembering_writer())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let mut profile: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    profile.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    runtime.save_profile(profile).await.unwrap();
    runtime
}

/// `ROUNDS` rounds of one run in each runtime, both from the chat's latest state.
async fn race(first: &AgentRuntime, second: &AgentRuntime) {
    for round in 0..ROUNDS {
        let base = first.latest_persist_state(CHAT).await.unwrap();
        let asked = [
            format!("Round {round}: the first fact."),
            format!("Round {round}: the second fact."),
        ];
        let (a, b) = tokio::join!(
            start(first, "lead", &asked[0], base.clone()),
            start(second, "lead", &asked[1], base.clone()),
        );
        let (ended_a, ended_b) = tokio::join!(first.wait_for_run(&a), second.wait_for_run(&b));
        let ended = [ended_a.unwrap().status, ended_b.unwrap().status];
        let winners: Vec<usize> = (0..2)
            .filter(|&i| ended[i] == AgentRunStatus::Completed)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {ended:?}");
        let (winner, loser) = if winners[0] == 0 {
            ((first, &a), (second, &b, &asked[1]))
        } else {
            ((second, &b), (first, &a, &asked[0]))
        };
        assert_eq!(
            ended[1 - winners[0]],
            AgentRunStatus::PartialSuccess,
            "round {round}"
        );
        let events = all_events(loser.0, loser.1).await;
        let end = events.last().unwrap();
        assert_eq!(end.event_type, "run_partial_success", "round {round}");
        assert_eq!(
            end.payload["code"], "agent.persistent_state_conflict",
            "round {round}"
        );
        // The loser's update stays in its own persist/, on top of the base it started from.
        assert!(
            persisted(loser.0, loser.1)
                .await
                .ends_with(&format!("{}\n", loser.2)),
            "round {round}"
        );
        for runtime in [first, second] {
            assert_eq!(
                runtime.latest_persist_state(CHAT).await.unwrap().as_deref(),
                Some(winner.1.as_str()),
                "round {round}"
            );
        }
    }
    // Every round built on the one before: the chat holds exactly one fact per round.
    let last = first.latest_persist_state(CHAT).await.unwrap().unwrap();
    let facts = persisted(first, &last).await;
    assert_eq!(facts.lines().count(), ROUNDS, "{facts}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runtimes_on_one_data_dir_finishing_together_let_exactly_one_win_each_round() {
    let dir = tempfile::tempdir().unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let ports = || {
        StoragePorts::from_store(
            UserDataStore::open(dir.path().to_path_buf()).unwrap(),
            "data dir",
        )
    };
    let first = racer(dir.path(), ports(), &barrier).await;
    let second = racer(dir.path(), ports(), &barrier).await;
    race(&first, &second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_one_database_finishing_together_let_exactly_one_win_each_round() {
    let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
    let url = cluster.create_database("tt_chat_race").await.unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let mut hosts = Vec::new();
    for _ in 0..2 {
        let StoreChoice::Ports(ports) = tt_runtime::open_store_url(&url).await.unwrap() else {
            panic!("a postgres URL opens the PostgreSQL store");
        };
        // Each host its own data dir (connections, templates); the runs are in the database.
        let dir = tempfile::tempdir().unwrap();
        hosts.push((racer(dir.path(), ports, &barrier).await, dir));
    }
    race(&hosts[0].0, &hosts[1].0).await;
}
