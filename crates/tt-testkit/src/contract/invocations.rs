//! Contract cases for `AgentInvocationRepository`: invocations and tasks round-trip in creation
//! order, and task transitions where the first terminal write wins, also under contention.

use std::sync::Arc;
use tt_domain::ids::{InvocationId, RunId, TaskId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRun;
use tt_domain::task::{AgentTaskRecord, TaskStatus, TaskTransition};

use super::{
    StorageUnderTest, assert_already_exists, assert_not_found, at_once, create_sample_run,
    invocation, task, ts,
};

fn to(status: TaskStatus, result_ref: Option<&str>, error: Option<&str>) -> TaskTransition {
    TaskTransition {
        status,
        result_ref: result_ref.map(str::to_owned),
        error: error.map(str::to_owned),
    }
}

pub async fn invocations_round_trip_in_creation_order(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let mut root = invocation(&run, "inv_root", 5);
    for inv in [
        root.clone(),
        invocation(&run, "inv_b", 3),
        invocation(&run, "inv_a", 3),
    ] {
        s.invocations.save_invocation(&inv).await.unwrap();
    }
    assert_eq!(
        invocation_ids(&s, &run.id).await,
        ["inv_a", "inv_b", "inv_root"]
    );

    root.transition(InvocationStatus::Running, ts(9)).unwrap();
    s.invocations.save_invocation(&root).await.unwrap();
    assert_eq!(
        s.invocations
            .load_invocation(&run.id, &InvocationId::root())
            .await
            .unwrap(),
        root
    );
    assert_not_found(
        s.invocations
            .load_invocation(&run.id, &InvocationId::from_raw("inv_missing"))
            .await,
    );
}

pub async fn tasks_round_trip_in_creation_order(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let tasks = [
        task(&run, "task_b", 2),
        task(&run, "task_a", 2),
        task(&run, "task_c", 1),
    ];
    for t in &tasks {
        s.invocations.create_task(t).await.unwrap();
    }
    assert_eq!(
        task_ids(s.invocations.list_tasks(&run.id).await.unwrap()),
        ["task_c", "task_a", "task_b"]
    );
    assert_eq!(
        s.invocations
            .load_task(&run.id, &TaskId::from_raw("task_a"))
            .await
            .unwrap(),
        tasks[1]
    );
    assert_already_exists(s.invocations.create_task(&tasks[0]).await);
    assert_not_found(
        s.invocations
            .load_task(&run.id, &TaskId::from_raw("task_missing"))
            .await,
    );
}

/// Registered in the same millisecond, with ids that sort the other way: `creationSeq` decides,
/// for every listing; records without one (written before it existed) come first.
pub async fn records_of_one_millisecond_list_in_registration_order(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let mut invocations = [
        invocation(&run, "inv_root", 3),
        invocation(&run, "inv_z", 3),
        invocation(&run, "inv_a", 3),
    ];
    invocations[1].creation_seq = 1;
    invocations[2].creation_seq = 2;
    for inv in &invocations {
        s.invocations.save_invocation(inv).await.unwrap();
    }
    assert_eq!(
        invocation_ids(&s, &run.id).await,
        ["inv_root", "inv_z", "inv_a"]
    );

    let mut tasks = [
        task(&run, "task_z", 3),
        task(&run, "task_a", 3),
        task(&run, "task_old", 3),
    ];
    tasks[0].creation_seq = 1;
    tasks[1].creation_seq = 2;
    for (i, t) in tasks.iter_mut().enumerate() {
        t.workspace_key = format!("critic-{i}");
        t.child_invocation_id = InvocationId::from_raw(format!("inv_c{i}"));
        s.invocations.create_task(t).await.unwrap();
    }
    let expected = ["task_old", "task_z", "task_a"];
    assert_eq!(
        task_ids(s.invocations.list_tasks(&run.id).await.unwrap()),
        expected
    );
    assert_eq!(
        task_ids(
            s.invocations
                .list_tasks_by_parent(&run.id, &InvocationId::root())
                .await
                .unwrap()
        ),
        expected
    );
    let reloaded = s
        .invocations
        .load_task(&run.id, &TaskId::from_raw("task_a"))
        .await
        .unwrap();
    assert_eq!(reloaded.creation_seq, 2);
}

pub async fn tasks_are_found_by_parent_and_by_child(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let mut other_parent = task(&run, "task_z", 1);
    other_parent.parent_invocation_id = InvocationId::from_raw("inv_writer_2");
    other_parent.workspace_key = "criticism".to_owned();
    for t in [
        task(&run, "task_b", 3),
        other_parent,
        keyed_task(&run, "task_a", 2, "critic-002"),
    ] {
        s.invocations.create_task(&t).await.unwrap();
    }
    // A status change keeps a task where it was found.
    s.invocations
        .transition_task(
            &run.id,
            &TaskId::from_raw("task_a"),
            &to(TaskStatus::Running, None, None),
            ts(4),
        )
        .await
        .unwrap();
    tasks_are_found_by_status_parent_and_child(&s, &run).await;
    workspace_keys_and_delegations_are_counted(&s, &run).await;
}

/// A task whose workspace is `key`.
fn keyed_task(run: &AgentRun, id: &str, created_at: i64, key: &str) -> AgentTaskRecord {
    let mut record = task(run, id, created_at);
    record.workspace_key = key.to_owned();
    record
}

/// The ids of the run's invocations, as listed.
async fn invocation_ids(s: &StorageUnderTest, run_id: &RunId) -> Vec<String> {
    s.invocations
        .list_invocations(run_id)
        .await
        .unwrap()
        .into_iter()
        .map(|inv| inv.id.to_string())
        .collect()
}

/// The ids of `tasks`, in order.
fn task_ids(tasks: Vec<AgentTaskRecord>) -> Vec<String> {
    tasks.into_iter().map(|t| t.id.to_string()).collect()
}

/// [`tasks_are_found_by_parent_and_by_child`]: `task_a` (running) and `task_b` of the root,
/// `task_z` of another parent.
async fn tasks_are_found_by_status_parent_and_child(s: &StorageUnderTest, run: &AgentRun) {
    // A task's status alone, as it is now.
    for (id, expected) in [
        ("task_a", TaskStatus::Running),
        ("task_b", TaskStatus::Queued),
    ] {
        let status = s
            .invocations
            .task_status(&run.id, &TaskId::from_raw(id))
            .await
            .unwrap();
        assert_eq!(status, expected, "{id}");
    }
    assert_not_found(
        s.invocations
            .task_status(&run.id, &TaskId::from_raw("task_missing"))
            .await,
    );
    let by_parent = |parent: &'static str| async move {
        s.invocations
            .list_tasks_by_parent(&run.id, &InvocationId::from_raw(parent))
            .await
            .unwrap()
    };
    let by_root = by_parent("inv_root").await;
    assert_eq!(by_root[0].status, TaskStatus::Running);
    assert_eq!(task_ids(by_root), ["task_a", "task_b"]);
    assert_eq!(task_ids(by_parent("inv_writer_2").await), ["task_z"]);
    let by_child = |child: &'static str| async move {
        s.invocations
            .list_tasks_by_child(&run.id, &InvocationId::from_raw(child))
            .await
            .unwrap()
    };
    assert_eq!(task_ids(by_child("inv_for_task_b").await), ["task_b"]);
    assert!(by_child("inv_nobody").await.is_empty());
}

/// [`tasks_are_found_by_parent_and_by_child`]: workspace keys of one agent, delegations per
/// parent, and the next free workspace key.
async fn workspace_keys_and_delegations_are_counted(s: &StorageUnderTest, run: &AgentRun) {
    // Workspace keys of one agent: the key itself and its numbered repeats, nothing else.
    let mut keys = s
        .invocations
        .workspace_keys_like(&run.id, "critic")
        .await
        .unwrap();
    keys.sort();
    assert_eq!(keys, ["critic", "critic-002"]);
    assert!(
        s.invocations
            .workspace_keys_like(&run.id, "crit")
            .await
            .unwrap()
            .is_empty()
    );
    // Delegations are counted per parent; a handoff the parent opened is not a delegation.
    let mut handoff = keyed_task(run, "task_h", 5, "editor");
    handoff.continuation = tt_domain::task::TaskContinuation::TransferControl;
    s.invocations.create_task(&handoff).await.unwrap();
    for (parent, expected) in [
        (InvocationId::root(), 2),
        (InvocationId::from_raw("inv_writer_2"), 1),
        (InvocationId::from_raw("inv_nobody"), 0),
    ] {
        let counted = s
            .invocations
            .count_delegations_by_parent(&run.id, &parent)
            .await
            .unwrap();
        assert_eq!(counted, expected, "delegations by {parent}");
    }
    // The next workspace key, the domain's rule over the listed keys: the agent id, then its
    // first free numbered repeat.
    let next = |base: &'static str| async move {
        let used = s
            .invocations
            .workspace_keys_like(&run.id, base)
            .await
            .unwrap();
        tt_domain::task::next_workspace_key(base, used.iter().map(String::as_str))
    };
    assert_eq!(next("crit").await, "crit");
    assert_eq!(next("editor").await, "editor-002");
    assert_eq!(next("critic-002").await, "critic-002-002");
    assert_eq!(next("critic").await, "critic-003");
    for (id, key) in [("task_r3", "critic-003"), ("task_r5", "critic-005")] {
        s.invocations
            .create_task(&keyed_task(run, id, 6, key))
            .await
            .unwrap();
    }
    assert_eq!(next("critic").await, "critic-004");
    s.invocations
        .create_task(&keyed_task(run, "task_r4", 7, "critic-004"))
        .await
        .unwrap();
    assert_eq!(next("critic").await, "critic-006");
}

pub async fn first_terminal_write_wins(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let record = task(&run, "task_1", 1);
    s.invocations.create_task(&record).await.unwrap();
    let id = record.id.clone();

    let started = s
        .invocations
        .transition_task(&run.id, &id, &to(TaskStatus::Running, None, None), ts(2))
        .await
        .unwrap();
    assert!(started.changed);
    assert_eq!(started.task.status, TaskStatus::Running);

    let done = s
        .invocations
        .transition_task(
            &run.id,
            &id,
            &to(
                TaskStatus::Completed,
                Some("agent-results/inv_for_task_1.json"),
                None,
            ),
            ts(3),
        )
        .await
        .unwrap();
    assert!(done.changed);
    assert_eq!(done.task.status, TaskStatus::Completed);
    assert_eq!(done.task.updated_at, ts(3));

    let late = s
        .invocations
        .transition_task(
            &run.id,
            &id,
            &to(TaskStatus::Failed, None, Some("too late")),
            ts(4),
        )
        .await
        .unwrap();
    assert!(!late.changed);
    assert_eq!(late.task, done.task);
    assert_eq!(
        s.invocations.load_task(&run.id, &id).await.unwrap(),
        done.task
    );
    assert_not_found(
        s.invocations
            .transition_task(
                &run.id,
                &TaskId::from_raw("task_missing"),
                &to(TaskStatus::Running, None, None),
                ts(5),
            )
            .await,
    );
}

pub async fn concurrent_terminal_transitions_change_once(s: StorageUnderTest) {
    let run = create_sample_run(&s, 1).await;
    let record = task(&run, "task_race", 1);
    s.invocations.create_task(&record).await.unwrap();
    let repo = Arc::clone(&s.invocations);
    let outcomes = at_once(32, |i| {
        let repo = Arc::clone(&repo);
        let run_id = run.id.clone();
        let id = record.id.clone();
        let status = match i % 3 {
            0 => TaskStatus::Completed,
            1 => TaskStatus::Failed,
            _ => TaskStatus::Cancelled,
        };
        async move {
            let marker = format!("writer {i}");
            let at = ts(10 + i as i64);
            let outcome = repo
                .transition_task(&run_id, &id, &to(status, None, Some(&marker)), at)
                .await
                .unwrap();
            (outcome, status, marker)
        }
    })
    .await;
    let mut winners = Vec::new();
    for (outcome, status, marker) in outcomes {
        assert!(outcome.task.status.is_terminal());
        if outcome.changed {
            winners.push((status, marker));
        }
    }
    assert_eq!(winners.len(), 1, "exactly one terminal write must win");
    let (status, marker) = &winners[0];
    let stored = s.invocations.load_task(&run.id, &record.id).await.unwrap();
    assert_eq!(stored.status, *status);
    assert_eq!(stored.error.as_deref(), Some(marker.as_str()));
}
