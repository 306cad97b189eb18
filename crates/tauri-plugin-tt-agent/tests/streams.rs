//! The stream commands: a run's events over a channel from any seq (a reloaded page picks up
//! where it left off), the runs list's changes, closing a stream; and the shutdown on exit.

use serde_json::{Value, json};

use crate::support::{app, app_transcript};

fn script() -> Value {
    json!({"schemaVersion": 1, "agents": {"default-writer": [
        {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "draft"}}]},
        {"toolCalls": [{"id": "c2", "name": "workspace_commit", "arguments": {}}]},
        {"toolCalls": [{"id": "c3", "name": "workspace_finish", "arguments": {}}]}
    ]}})
}

/// A model call that does not come back: the run waits until it is stopped.
fn hold_script() -> Value {
    json!({"schemaVersion": 1, "agents": {"default-writer": [
        {"text": "Thinking.", "delayMs": 86_400_000u64}
    ]}})
}

#[test]
fn a_page_that_reloads_follows_on_from_its_last_seq_without_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_transcript(dir.path(), &script());
    let run_id = &app.start(None);
    let mut parked = Vec::new();
    // The first page sees the run up to its first file write, then goes away.
    let first = app.follow(1, run_id, 0);
    let before = app.events_until(1, "workspace_file_written", &mut parked);
    let last_seq = before.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(
        app.call("unsubscribe_agent_stream", json!({"streamId": first})),
        json!(true)
    );
    // The reloaded page asks from the last seq it kept.
    app.follow(2, run_id, last_seq);
    let after = app.events_until(2, "run_completed", &mut parked);
    assert_eq!(app.next_message(2, &mut parked), json!({"kind": "end"}));
    let seqs: Vec<u64> = before
        .iter()
        .chain(&after)
        .map(|event| event["seq"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "every event once, in order");
    // The whole journal again from 0, now replayed.
    app.follow(3, run_id, 0);
    let replayed = app.events_until(3, "run_completed", &mut parked);
    assert_eq!(replayed.len(), seqs.len());
    assert_eq!(
        app.call("unsubscribe_agent_stream", json!({"streamId": first})),
        json!(false)
    );
}

#[test]
fn the_runs_list_follows_itself_and_bad_subscriptions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = app_transcript(dir.path(), &script());
    app.invoke(
        "subscribe_agent_run_updates",
        json!({"onUpdate": "__CHANNEL__:9"}),
    )
    .unwrap();
    let run_id = app.start(None);
    let mut parked = Vec::new();
    loop {
        let message = app.next_message(9, &mut parked);
        assert_eq!(message["kind"], "changed", "{message}");
        assert_eq!(message["run"]["id"], run_id.as_str());
        if message["run"]["status"] == "completed" {
            break;
        }
    }
    let refusals = [
        (
            json!({"request": {"runId": "run_unknown"}, "onEvent": "__CHANNEL__:5"}),
            "agent.not_found",
        ),
        (
            json!({"request": {"runId": run_id, "invocationId": ""}, "onEvent": "__CHANNEL__:5"}),
            "agent.read_events_invocation_id_invalid",
        ),
        (
            json!({"request": {"runId": run_id, "afterSeq": -1}, "onEvent": "__CHANNEL__:5"}),
            "host.request_invalid",
        ),
    ];
    for (body, code) in refusals {
        let err = app
            .invoke("subscribe_agent_run_events", body.clone())
            .unwrap_err();
        assert_eq!(err["code"], code, "{body}: {err}");
    }
    let err = app
        .invoke(
            "unsubscribe_agent_stream",
            json!({"request": {"streamId": "one"}}),
        )
        .unwrap_err();
    assert_eq!(err["code"], "host.request_invalid", "{err}");
}

#[test]
fn the_app_exit_shuts_the_runtime_down_and_the_run_resumes_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path(), &hold_script());
    let run_id = app.start(None);
    let mut parked = Vec::new();
    app.follow(4, &run_id, 0);
    app.events_until(4, "model_request_created", &mut parked);
    // The last window goes once the event loop runs: it asks to exit, then exits
    // (`RunEvent::Exit`, where the plugin shuts the runtime down).
    let crate::support::TestApp {
        app: tauri_app,
        window,
        ..
    } = app;
    tauri_app.run_return(move |_, event| {
        if let tauri::RunEvent::Ready = event {
            window.destroy().unwrap();
        }
    });

    let next = app_transcript(dir.path(), &script());
    let stopped = next.call("read_agent_run", json!({"runId": run_id}));
    assert_eq!(stopped["status"], "interrupted", "{stopped}");
    let end = next.call(
        "read_agent_run_events",
        json!({"runId": run_id, "beforeSeq": u64::MAX, "limit": 1}),
    );
    assert_eq!(end["events"][0]["type"], "run_interrupted", "{end}");
    assert_eq!(
        end["events"][0]["payload"]["reason"], "host_shutdown",
        "{end}"
    );
    let resumed = next.call("resume_agent_run", json!({"runId": run_id}));
    assert_eq!(resumed["id"], json!(run_id));
    let ended = next.call("wait_agent_run", json!({"runId": run_id}));
    assert_eq!(ended["status"], "completed", "{ended}");
}
