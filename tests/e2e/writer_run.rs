//! A whole writer run on real storage: the run directory layout, audit files, journal and
//! transcript, and reading it all back after a restart.

use tt_runtime::{AgentRunStatus, CommitBridgeChoice, ListRunsRequest, ReadEventsRequest};

use crate::support::*;

#[tokio::test]
async fn writer_run_completes_and_persists_everything() {
    let env = env(writer_script(), CommitBridgeChoice::Transcript);
    let run = env.runtime.start_run(start_request()).await.unwrap();
    let run = env.runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);

    let run_dir = env
        .dir
        .path()
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("runs")
        .join(run.id.as_str());
    for file in [
        "run.json",
        "manifest.json",
        "events.jsonl",
        "input/prompt_snapshot.json",
        "input/resolved_profile.json",
        "input/persist_snapshot.json",
        "records.jsonl",
        "blobs.jsonl",
        "output/main.md",
    ] {
        assert!(run_dir.join(file).is_file(), "missing {file}");
    }
    // Audit records and checkpoints are records, read by the reference events use.
    for reference in [
        "input/invocations/inv_root/tool_snapshot.json",
        "model-responses/round-001.json",
        "model-responses/round-005.json",
        "checkpoints/cp_000001",
    ] {
        env.runtime
            .read_record(run.id.as_str(), reference)
            .await
            .unwrap_or_else(|err| panic!("{reference}: {err}"));
    }
    assert!(
        env.dir
            .path()
            .join("index/runs")
            .join(format!("{}.json", run.id))
            .is_file()
    );
    let calls = env
        .runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            limit: Some(500),
            ..Default::default()
        })
        .await
        .unwrap()
        .events
        .into_iter()
        .filter_map(|event| event.payload["argumentsRef"].as_str().map(str::to_owned))
        .collect::<Vec<_>>();
    assert_eq!(calls.len(), 6);
    for reference in &calls {
        env.runtime
            .read_record(run.id.as_str(), reference)
            .await
            .unwrap();
        let result = reference.replace("tool-args/", "tool-results/");
        env.runtime
            .read_record(run.id.as_str(), &result)
            .await
            .unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(run_dir.join("output/main.md")).unwrap(),
        "Night fell over the harbour.\n"
    );
    // persist/ was promoted into a chat-scoped state named after the run.
    let state = env
        .dir
        .path()
        .join("chats")
        .join(run.workspace_id.as_str())
        .join("persistent-states")
        .join(run.id.as_str());
    assert_eq!(
        std::fs::read_to_string(state.join("persist/facts.md")).unwrap(),
        "It is night.\n"
    );

    // The transcript holds the published text.
    let transcript = env
        .runtime
        .transcript(run.workspace_id.as_str())
        .await
        .unwrap();
    assert_eq!(transcript.len(), 1);
    assert_eq!(transcript[0].content, "Night fell over the harbour.\n");

    // The journal is gapless and ends with run_completed.
    let events = env
        .runtime
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            limit: Some(500),
            ..Default::default()
        })
        .await
        .unwrap()
        .events;
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=events.len() as u64).collect::<Vec<_>>()
    );
    assert_eq!(events.last().unwrap().event_type, "run_completed");

    // Token usage is summed from the journal, per invocation and in total.
    let usage = env.runtime.usage(run.id.as_str()).await.unwrap();
    assert_eq!(usage.model_calls, 5);
    assert_eq!(usage.by_invocation.len(), 1);
    assert_eq!(usage.by_invocation[0].invocation_id, "inv_root");
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0);
    assert_eq!(usage.input_tokens, usage.by_invocation[0].input_tokens);

    // A fresh runtime over the same data dir reads it all back.
    let again = runtime_at(&env.dir, writer_script(), CommitBridgeChoice::Transcript);
    let runs = again.list_runs(ListRunsRequest::default()).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, AgentRunStatus::Completed);
    let page = again
        .read_events(ReadEventsRequest {
            run_id: run.id.to_string(),
            before_seq: Some(events.len() as u64 + 1),
            limit: Some(2),
            include_timeline_projection: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.events.last().unwrap().event_type, "run_completed");
    let projection = page.timeline_projection.unwrap();
    assert_eq!(projection.foreground_invocation_ids.len(), 1);
    assert_eq!(projection.invocations.len(), 1);
    let file = again
        .read_workspace_file(run.id.as_str(), "output/main.md")
        .await
        .unwrap();
    assert_eq!(file.text, "Night fell over the harbour.\n");
}

#[tokio::test]
async fn live_subscription_sees_every_event_in_order() {
    let env = env(writer_script(), CommitBridgeChoice::Transcript);
    let run = env.runtime.start_run(start_request()).await.unwrap();
    let mut stream = env.runtime.subscribe(run.id.as_str(), 0, None);
    let mut seqs = Vec::new();
    let mut last = String::new();
    while let Some(event) = stream.next().await.unwrap() {
        seqs.push(event.seq);
        last = event.event_type.to_string();
    }
    assert_eq!(last, "run_completed");
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn model_call_cancel_on_real_storage() {
    let script = serde_json::json!({
        "schemaVersion": 1,
        "agents": {"default-writer": [{"delayMs": 600000, "toolCalls": [{"id": "x", "name": "workspace_finish", "arguments": {}}]}]}
    });
    let env = env(script, CommitBridgeChoice::Transcript);
    let run = env.runtime.start_run(start_request()).await.unwrap();
    let mut stream = env.runtime.subscribe(run.id.as_str(), 0, None);
    while let Some(event) = stream.next().await.unwrap() {
        if event.event_type == "model_call_attempt_started" {
            break;
        }
    }
    env.runtime.cancel_run(run.id.as_str()).await.unwrap();
    let run = env.runtime.wait_for_run(run.id.as_str()).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Cancelled);
}
