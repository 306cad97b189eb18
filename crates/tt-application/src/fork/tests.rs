//! Where a cut falls: the requested point, moved back before what a branch cannot continue
//! from; and the request's JSON shape.

use super::*;
use serde_json::json;
use tt_domain::event::EventLevel;
use tt_domain::ids::EventId;
use tt_domain::time::Timestamp;

/// A journal of `(type, payload)` lines, seqs from 1.
fn journal(lines: &[(&str, Value)]) -> Vec<AgentRunEvent> {
    lines
        .iter()
        .enumerate()
        .map(|(index, (kind, payload))| AgentRunEvent {
            seq: index as u64 + 1,
            id: EventId::from_raw(format!("evt_{index}")),
            run_id: RunId::from_raw("run_a"),
            timestamp: Timestamp::from_unix_millis(0),
            level: EventLevel::Info,
            event_type: tt_domain::event::RunEventType::from_name(kind),
            payload: payload.clone(),
        })
        .collect()
}

fn root() -> Value {
    json!({"invocationId": "inv_root"})
}

fn call(kind: &'static str, round: u32, call: &str, name: &str) -> (&'static str, Value) {
    (
        kind,
        json!({"invocationId": "inv_root", "round": round, "callId": call, "name": name}),
    )
}

/// run_created, the root starting, a write (result stored before the file change is
/// journaled), a commit, and the run's end.
fn sample() -> Vec<AgentRunEvent> {
    journal(&[
        ("run_created", json!({})),           // 1
        ("agent_invocation_started", root()), // 2
        (
            "model_response_stored",
            json!({"invocationId": "inv_root", "round": 1}),
        ), // 3
        call("tool_call_started", 1, "w", "workspace.write_file"), // 4
        call("tool_result_stored", 1, "w", "workspace.write_file"), // 5
        call("tool_call_completed", 1, "w", "workspace.write_file"), // 6
        (
            "workspace_file_written",
            json!({"invocationId": "inv_root", "path": "output/main.md"}),
        ), // 7
        (
            "checkpoint_created",
            json!({"invocationId": "inv_root", "eventSeq": 7,
            "files": [{"path": "output/main.md", "sha256": "aa", "bytes": 1}]}),
        ), // 8
        (
            "model_response_stored",
            json!({"invocationId": "inv_root", "round": 2}),
        ), // 9
        call("tool_call_started", 2, "c", "workspace.commit"), // 10
        (
            "chat_commit_started",
            json!({"invocationId": "inv_root", "commitId": "commit_1"}),
        ), // 11
        (
            "chat_commit_recorded",
            json!({"invocationId": "inv_root", "commitId": "commit_1"}),
        ), // 12
        call("tool_result_stored", 2, "c", "workspace.commit"), // 13
        call("tool_call_completed", 2, "c", "workspace.commit"), // 14
        ("persistent_changes_committed", root()), // 15
        ("run_completed", root()),            // 16
    ])
}

fn cut(at: ForkPoint) -> Result<u64, &'static str> {
    resolve_cut(&sample(), &at).map_err(|error| error.code().as_str())
}

#[test]
fn a_cut_moves_back_before_what_a_branch_cannot_continue_from() {
    assert_eq!(cut(ForkPoint::Seq { seq: 3 }), Ok(3));
    // The write's result is stored, its file change not yet journaled: before the result.
    assert_eq!(cut(ForkPoint::Seq { seq: 5 }), Ok(4));
    assert_eq!(cut(ForkPoint::Seq { seq: 6 }), Ok(4));
    assert_eq!(cut(ForkPoint::Seq { seq: 8 }), Ok(8));
    // Inside the commit call: before its commit started.
    assert_eq!(cut(ForkPoint::Seq { seq: 12 }), Ok(10));
    assert_eq!(cut(ForkPoint::Seq { seq: 13 }), Ok(13));
    // The run's end is never copied.
    assert_eq!(cut(ForkPoint::Seq { seq: 16 }), Ok(14));
    assert_eq!(cut(ForkPoint::LastCommit), Ok(13));
    assert_eq!(
        cut(ForkPoint::AgentRound {
            invocation_id: InvocationId::root(),
            round: 2
        }),
        Ok(8)
    );
}

#[test]
fn points_outside_the_journal_or_before_the_first_agent_are_refused() {
    for at in [
        ForkPoint::Seq { seq: 0 },
        ForkPoint::Seq { seq: 17 },
        ForkPoint::Seq { seq: 1 },
        ForkPoint::AgentRound {
            invocation_id: InvocationId::root(),
            round: 9,
        },
    ] {
        assert_eq!(cut(at.clone()), Err("agent.fork_point_invalid"), "{at:?}");
    }
    let no_commit = journal(&[
        ("run_created", json!({})),
        ("agent_invocation_started", root()),
    ]);
    assert_eq!(
        resolve_cut(&no_commit, &ForkPoint::LastCommit).map_err(|error| error.code().as_str()),
        Err("agent.fork_point_invalid")
    );
}

#[test]
fn the_state_at_a_cut_counts_only_what_was_journaled_by_then() {
    let state = state_at(&sample(), 8);
    assert_eq!(
        state.files.get("output/main.md").map(String::as_str),
        Some("aa")
    );
    assert_eq!(state.responses.len(), 1);
    assert_eq!(state.call_results.len(), 1);
    assert_eq!(
        state.invocations.get(&InvocationId::root()),
        Some(&InvocationStatus::Running)
    );
    assert!(state_at(&sample(), 6).files.is_empty());
}

#[test]
fn a_fork_request_reads_from_camel_case_json() {
    let request: ForkRunRequest = serde_json::from_value(json!({
        "at": {"kind": "agentRound", "invocationId": "inv_root", "round": 3},
        "changes": {"guidance": "Shorter.", "connectionRef": "fast"}
    }))
    .unwrap();
    assert_eq!(
        request.at,
        ForkPoint::AgentRound {
            invocation_id: InvocationId::root(),
            round: 3
        }
    );
    assert_eq!(request.changes.connection_ref.as_deref(), Some("fast"));
    let seq: ForkPoint = serde_json::from_value(json!({"kind": "seq", "seq": 7})).unwrap();
    assert_eq!(seq, ForkPoint::Seq { seq: 7 });
    let last: ForkRunRequest =
        serde_json::from_value(json!({"at": {"kind": "lastCommit"}})).unwrap();
    assert_eq!(last.changes, ForkChanges::default());
}
