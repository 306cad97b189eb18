//! Runs whose host died: once a run's lease has expired, a runtime on another host marks it
//! `interrupted` (its unfinished tasks and invocations too, each with its event) and lets the
//! lease go so it can be resumed; a run a live host holds is left alone. The lease is ended by
//! hand on the server, so nothing waits for real time.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tt_adapter_storage_postgres::{OWNER_EXITED, PostgresStore};
use tt_domain::event::RunEventType;
use tt_domain::ids::{EventId, TaskId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::task::TaskStatus;
use tt_ports::{AgentInvocationRepository, AgentRunRepository, EventPage, RunJournal};
use tt_testkit::contract::{
    assert_code, invocation, manifest_for, new_event, sample_run, task, tool_event, transition_to,
    ts,
};

async fn host(url: &str, name: &str) -> Arc<PostgresStore> {
    super::host(url, name, Duration::from_secs(60)).await
}

fn ids() -> impl FnMut() -> EventId + Send {
    let mut n = 0_u32;
    move || {
        n += 1;
        EventId::generate(format!("{:032x}", 0xdead_0000_u32 + n))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_hosts_unfinished_run_is_marked_interrupted_by_another_host() {
    let (url, a, b) = super::two_hosts("tt_case_recovery", Duration::from_secs(60)).await;

    // Host A works on a run: the root is running, one delegated task is running, one done.
    let mut run = sample_run(1);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    run.status = AgentRunStatus::CallingModel;
    a.save_run(&run).await.unwrap();
    let mut root = invocation(&run, "inv_root", 1);
    root.transition(InvocationStatus::Running, ts(2)).unwrap();
    a.save_invocation(&root).await.unwrap();
    for (id, at) in [("task_open", 3), ("task_done", 4)] {
        a.create_task(&task(&run, id, at)).await.unwrap();
    }
    let running = transition_to(TaskStatus::Running);
    a.transition_task(&run.id, &TaskId::from_raw("task_open"), &running, ts(5))
        .await
        .unwrap();
    let completed = transition_to(TaskStatus::Completed);
    a.transition_task(&run.id, &TaskId::from_raw("task_done"), &completed, ts(6))
        .await
        .unwrap();
    a.append(new_event(
        &run.id,
        1,
        RunEventType::StatusChanged,
        json!({"status": "dispatching_tool"}),
    ))
    .await
    .unwrap();

    // Host B's own run is live: nobody may interrupt it.
    let live = sample_run(2);
    b.create_run(&live, &manifest_for(&live)).await.unwrap();

    // While A's lease is live, B finds nothing to do.
    assert!(
        b.recover_interrupted_runs(ts(100), ids())
            .await
            .unwrap()
            .is_empty()
    );

    // A dies; its lease runs out.
    drop(a);
    crate::pg::ownership::expire_lease(&url, run.id.as_str()).await;

    let recovered = b.recover_interrupted_runs(ts(200), ids()).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].run_id, run.id);
    assert_eq!(
        recovered[0].previous_status,
        AgentRunStatus::DispatchingTool
    );
    assert_eq!(recovered[0].last_seq, 1);

    assert_eq!(
        b.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::Interrupted
    );
    assert_eq!(
        b.load_run(&live.id).await.unwrap().status,
        AgentRunStatus::Created
    );
    let open = b
        .load_task(&run.id, &TaskId::from_raw("task_open"))
        .await
        .unwrap();
    assert_eq!(open.status, TaskStatus::Interrupted);
    let done = b
        .load_task(&run.id, &TaskId::from_raw("task_done"))
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    let root = b.load_invocation(&run.id, &root.id).await.unwrap();
    assert_eq!(root.status, InvocationStatus::Interrupted);

    let events = b.read(&run.id, &EventPage::default()).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "status_changed",
            "agent_task_interrupted",
            "agent_invocation_interrupted",
            "run_interrupted"
        ]
    );
    let last = events.last().unwrap();
    assert_eq!(last.payload["reason"], OWNER_EXITED);
    assert_eq!(last.payload["lastSeq"], 1);
    assert_eq!(last.payload["previousStatus"], "dispatching_tool");

    // The lease was let go: a third host can take the run at once to resume it, and a second
    // recovery has nothing left to do.
    let c = host(&url, "host-c").await;
    c.claim_run(&run.id).await.unwrap();
    assert!(
        b.recover_interrupted_runs(ts(300), ids())
            .await
            .unwrap()
            .is_empty()
    );
}

/// A database written at schema version 3 gets the `unfinished` flag of each run from its
/// record when it is migrated, so recovery reads only those runs through the index; the flag
/// then follows every save.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_stored_before_the_unfinished_index_are_flagged_by_the_migration() {
    use tt_adapter_storage_postgres::schema::MIGRATIONS;
    let url = super::database("tt_case_migrate_from_3").await;
    let client = super::sql_client(&url).await;
    client
        .batch_execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY,
             description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .unwrap();
    for (version, description, sql) in MIGRATIONS.iter().filter(|(v, _, _)| *v <= 3) {
        client.batch_execute(sql).await.unwrap();
        client
            .execute(
                "INSERT INTO schema_migrations (version, description) VALUES ($1, $2)",
                &[version, description],
            )
            .await
            .unwrap();
    }
    // Two runs as version 3 stored them: one ended, one working when its host died.
    for (n, status) in [
        (1, AgentRunStatus::Completed),
        (2, AgentRunStatus::CallingModel),
    ] {
        let mut run = sample_run(n);
        run.status = status;
        client
            .execute(
                "INSERT INTO runs (run_id, created_ms, body, manifest) VALUES ($1, $2, $3, $4)",
                &[
                    &run.id.as_str(),
                    &run.created_at.unix_millis(),
                    &serde_json::to_string(&run).unwrap(),
                    &serde_json::to_string(&manifest_for(&run)).unwrap(),
                ],
            )
            .await
            .unwrap();
    }
    let store = host(&url, "host-new").await;
    let latest = MIGRATIONS.last().map(|(version, _, _)| *version).unwrap();
    assert_eq!(store.schema_version().await.unwrap(), latest);
    assert_eq!(flagged(&client).await, [sample_run(2).id.to_string()]);
    let recovered = store.recover_interrupted_runs(ts(9), ids()).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].run_id, sample_run(2).id);
    // Marked interrupted, it is no longer unfinished.
    assert!(flagged(&client).await.is_empty());
}

/// The runs flagged `unfinished`, by id.
async fn flagged(client: &tokio_postgres::Client) -> Vec<String> {
    client
        .query(
            "SELECT run_id FROM runs WHERE unfinished ORDER BY run_id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect()
}

/// A host whose session ended (dropped here; a crash or `kill -9` closes its connections the
/// same way) lets its owner locks go at once: another host marks its run `interrupted` without
/// waiting out the 60 s lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_session_ended_is_taken_over_before_its_lease_runs_out() {
    let url = super::database("tt_case_session_end").await;
    let a = host(&url, "host-a").await;
    let mut run = sample_run(1);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    run.status = AgentRunStatus::CallingModel;
    a.save_run(&run).await.unwrap();
    let b = host(&url, "host-b").await;
    // While A lives, B takes nothing.
    assert!(
        b.recover_interrupted_runs(ts(8), ids())
            .await
            .unwrap()
            .is_empty()
    );
    drop(a);
    // The server sees A's sessions end a moment after its connections close.
    let mut recovered = Vec::new();
    for _ in 0..100 {
        recovered = b.recover_interrupted_runs(ts(9), ids()).await.unwrap();
        if !recovered.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(recovered.len(), 1, "A's run was not taken over");
    assert_eq!(recovered[0].run_id, run.id);
    assert_eq!(
        b.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::Interrupted
    );
}

/// A host that stalled past its lease, whose run another host marked `interrupted` and let go,
/// does not take the run back with its next write: every write it still tries is refused
/// until it lets the run go itself (its executor ended), after which it may resume it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_taken_over_does_not_take_the_run_back_once_the_other_let_it_go() {
    let (url, a, b) = super::two_hosts("tt_case_no_take_back", Duration::from_secs(60)).await;
    let mut run = sample_run(8);
    a.create_run(&run, &manifest_for(&run)).await.unwrap();
    a.append(tool_event(&run.id, 1, "inv_root")).await.unwrap();
    crate::pg::ownership::expire_lease(url.as_str(), run.id.as_str()).await;
    let recovered = b.recover_interrupted_runs(ts(10), ids()).await.unwrap();
    assert_eq!(recovered.len(), 1);
    let journaled = b.read(&run.id, &EventPage::default()).await.unwrap().len();

    for seq in [2, 3] {
        let late = a.append(tool_event(&run.id, seq, "inv_root")).await;
        assert_code(late, tt_domain::error_codes::AGENT_RUN_LOCKED);
    }
    run.status = AgentRunStatus::Cancelled;
    assert_code(
        a.save_run(&run).await,
        tt_domain::error_codes::AGENT_RUN_LOCKED,
    );
    assert_eq!(
        b.read(&run.id, &EventPage::default()).await.unwrap().len(),
        journaled
    );
    assert_eq!(
        b.load_run(&run.id).await.unwrap().status,
        AgentRunStatus::Interrupted
    );

    // Once A lets the run go, it may take it up again (a resume would).
    a.release_run(&run.id).await.unwrap();
    a.claim_run(&run.id).await.unwrap();
}
