//! Branching runs (docs/branching.md): a branch of the writers' room at the writer's last
//! turn replays everything before it without a model call and writes another ending; branches
//! at pseudo-random seqs of a finished fan-out and of an interrupted run all complete with
//! valid journals and leave their source byte for byte as it was; refusals are coded.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tt_domain::model::{AgentModelRequest, AgentModelResponse};
use tt_ports::{ModelDeltaSink, ModelError};
use tt_runtime::{
    AgentRunEvent, AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice,
    ForkChanges, ForkPoint, ForkRunRequest, InvocationId, ModelProvider, ScriptedProvider,
};

use crate::delegation::{WRITERS_ROOM_SCRIPT, all_events, install_writers_room};
use crate::support::start_request;

/// The run directory of `run_id` under data dir `dir`.
pub(crate) fn run_dir(dir: &Path, run_id: &str) -> PathBuf {
    std::fs::read_dir(dir.join("chats"))
        .unwrap()
        .flatten()
        .map(|chat| chat.path().join("runs").join(run_id))
        .find(|candidate| candidate.is_dir())
        .unwrap_or_else(|| panic!("no run dir for {run_id}"))
}

/// Every file of the run's model-visible roots, by relative path.
pub(crate) fn workspace_files(dir: &Path, run_id: &str) -> BTreeMap<String, String> {
    let run_dir = run_dir(dir, run_id);
    let mut files = BTreeMap::new();
    for root in ["output", "summaries", "scratch", "plan", "persist"] {
        collect(&run_dir, &run_dir.join(root), &mut files, false);
    }
    files
}

/// Every file of the run directory (workspace, journal, records, blobs, run.json), by
/// relative path, with its bytes.
pub(crate) fn all_files(dir: &Path, run_id: &str) -> BTreeMap<String, String> {
    let run_dir = run_dir(dir, run_id);
    let mut files = BTreeMap::new();
    collect(&run_dir, &run_dir, &mut files, true);
    files
}

fn collect(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>, lossy: bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(base, &path, out, lossy);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            let key = path.strip_prefix(base).unwrap().display().to_string();
            let text = if lossy {
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                String::from_utf8(bytes).unwrap()
            };
            out.insert(key, text);
        }
    }
}

/// Each model call: (run id, profile, round, the request's messages as JSON).
type CallLog = Arc<Mutex<Vec<(String, String, u32, String)>>>;

/// Plays the writers' room for the first run it sees and `branch` for every other run, logs
/// every call, and takes a picture of the calling run's workspace when the writer starts its
/// round `snapshot_round`.
struct TwoScripts {
    source: ScriptedProvider,
    branch: ScriptedProvider,
    first_run: Mutex<Option<String>>,
    calls: CallLog,
    data_dir: PathBuf,
    snapshot_round: u32,
    snapshots: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
}

impl TwoScripts {
    fn before(&self, request: &AgentModelRequest) -> &ScriptedProvider {
        let run = request.session.run_id.to_string();
        self.calls.lock().unwrap().push((
            run.clone(),
            request.agent_profile_id.to_string(),
            request.round,
            serde_json::to_string(&request.messages).unwrap(),
        ));
        if request.agent_profile_id.as_str() == "writer" && request.round == self.snapshot_round {
            let files = workspace_files(&self.data_dir, &run);
            self.snapshots.lock().unwrap().insert(run.clone(), files);
        }
        let mut first = self.first_run.lock().unwrap();
        if first.get_or_insert_with(|| run.clone()) == &run {
            &self.source
        } else {
            &self.branch
        }
    }
}

#[async_trait]
impl ModelProvider for TwoScripts {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let provider = self.before(request);
        provider.complete(request, cancel).await
    }

    async fn stream(
        &self,
        request: &AgentModelRequest,
        sink: Arc<dyn ModelDeltaSink>,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        let provider = self.before(request);
        provider.stream(request, sink, cancel).await
    }
}

/// The writers' room with another last turn for the writer: before it hands off, it adds a
/// second light to the ending.
fn branch_script() -> String {
    let mut script: Value = serde_json::from_str(WRITERS_ROOM_SCRIPT).unwrap();
    let writer = script["agents"]["writer"].as_array_mut().unwrap();
    let handoff = writer.pop().unwrap();
    writer.push(json!({
        "text": "The note asks for a second light; I'll add it before the handoff.",
        "toolCalls": [{
            "id": "call_second_light",
            "name": "workspace_apply_patch",
            "arguments": {
                "path": "output/main.md",
                "old_string": "a horn answered.",
                "new_string": "a horn answered, and a second lamp woke on the headland."
            }
        }]
    }));
    writer.push(handoff);
    script.to_string()
}

fn sha(text: &str) -> String {
    // Not a cryptographic need: the test compares contents; a short digest keeps messages short.
    format!("{:016x}", {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        hash
    })
}

fn hashes(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(path, text)| (path.clone(), sha(text)))
        .collect()
}

fn count(events: &[AgentRunEvent], kind: &str) -> usize {
    events
        .iter()
        .filter(|event| event.event_type == kind)
        .count()
}

pub(crate) fn assert_gapless(events: &[AgentRunEvent]) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_at_the_writers_last_turn_replays_without_model_calls_and_ends_differently() {
    let dir = tempfile::tempdir().unwrap();
    let calls = CallLog::default();
    let provider = Arc::new(TwoScripts {
        source: ScriptedProvider::from_json_str(WRITERS_ROOM_SCRIPT).unwrap(),
        branch: ScriptedProvider::from_json_str(&branch_script()).unwrap(),
        first_run: Mutex::new(None),
        calls: Arc::clone(&calls),
        data_dir: dir.path().to_owned(),
        snapshot_round: 8,
        snapshots: Mutex::default(),
    });
    let runtime: AgentRuntime = AgentRuntimeBuilder::new()
        .data_dir(dir.path())
        .provider(Arc::clone(&provider) as Arc<dyn ModelProvider>)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .prompt_broker(tt_runtime::PromptBrokerChoice::Templates)
        .build()
        .unwrap();
    install_writers_room(&runtime, dir.path()).await;
    let mut request = start_request();
    request.profile_id = Some("writer".into());
    let source = runtime.start_run(request).await.unwrap();
    let source_id = source.id.to_string();
    let source = runtime.wait_for_run(&source_id).await.unwrap();
    assert_eq!(source.status, AgentRunStatus::Completed);
    let source_calls = calls.lock().unwrap().len();
    let source_files = all_files(dir.path(), &source_id);

    let guidance = "Give the ending a second light, on the headland.";
    let branch = runtime
        .fork(
            &source_id,
            ForkRunRequest {
                at: ForkPoint::AgentRound {
                    invocation_id: InvocationId::root(),
                    round: 8,
                },
                changes: ForkChanges {
                    guidance: Some(guidance.to_owned()),
                    ..ForkChanges::default()
                },
            },
        )
        .await
        .unwrap();
    let branch_id = branch.run_id().to_owned();
    let ended = branch.wait().await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    let forked_from = ended.forked_from.clone().unwrap();
    assert_eq!(forked_from.run_id.as_str(), source_id);
    assert_eq!(ended.stable_chat_id, source.stable_chat_id);

    // No model call before the fork point: the branch's first call is the writer's round 8,
    // and it carries the note.
    let log = calls.lock().unwrap().clone();
    let branch_calls: Vec<_> = log[source_calls..].to_vec();
    assert!(branch_calls.iter().all(|(run, ..)| *run == branch_id));
    let asked: Vec<(&str, u32)> = branch_calls
        .iter()
        .map(|(_, profile, round, _)| (profile.as_str(), *round))
        .collect();
    assert_eq!(
        asked,
        [
            ("writer", 8),
            ("writer", 9),
            ("final-editor", 1),
            ("final-editor", 2),
            ("final-editor", 3),
            ("final-editor", 4)
        ]
    );
    assert!(branch_calls[0].3.contains(guidance));

    // The workspace the writer's round 8 saw is the source's at that point.
    let snapshots = provider.snapshots.lock().unwrap().clone();
    assert_eq!(
        hashes(&snapshots[&branch_id]),
        hashes(&snapshots[&source_id])
    );

    // The journal: the source's up to the fork point, then the branch's own.
    let source_events = all_events(&runtime, &source_id).await;
    let events = all_events(&runtime, &branch_id).await;
    assert_gapless(&events);
    let cut = usize::try_from(forked_from.seq).unwrap();
    for (copy, original) in events[..cut].iter().zip(&source_events[..cut]) {
        assert_eq!(copy.event_type, original.event_type);
        if copy.event_type != "run_created" {
            // Payloads that name the run name the branch.
            let renamed = copy.payload.to_string().replace(&branch_id, &source_id);
            assert_eq!(renamed, original.payload.to_string(), "seq {}", copy.seq);
        }
    }
    assert_eq!(
        events[0].payload["forkedFrom"],
        json!({"runId": source_id, "seq": forked_from.seq})
    );
    // The agent working at the cut is marked interrupted, then the branch resumes it.
    let after: Vec<&str> = events[cut..cut + 4]
        .iter()
        .map(|event| event.event_type.as_str())
        .collect();
    assert_eq!(
        after,
        [
            "agent_invocation_interrupted",
            "run_interrupted",
            "user_guidance_submitted",
            "run_resumed"
        ]
    );
    assert_eq!(events[cut + 1].payload["reason"], "forked");
    assert_eq!(events[cut + 1].payload["lastSeq"], json!(forked_from.seq));
    // Only the six live calls are new model requests; the replayed ones are not journaled again.
    assert_eq!(count(&events[cut..], "model_request_created"), 6);

    // Another ending, published as a new message of the same chat.
    let published = runtime
        .transcript(source.workspace_id.as_str())
        .await
        .unwrap();
    assert_eq!(published.len(), 2);
    assert!(!published[0].content.contains("second lamp"));
    assert!(published[1].content.contains("second lamp"));
    assert!(
        published[1]
            .content
            .starts_with("# The Keeper of the Storm Light")
    );

    // The source is untouched, and the chat lists both, the branch naming its source.
    assert_eq!(all_files(dir.path(), &source_id), source_files);
    let runs = runtime
        .list_runs(tt_runtime::ListRunsRequest::default())
        .await
        .unwrap();
    let listed = runs
        .iter()
        .find(|run| run.id.as_str() == branch_id)
        .unwrap();
    assert_eq!(
        listed.forked_from.as_ref().unwrap().run_id.as_str(),
        source_id
    );
}

fn scripted_runtime(dir: &Path, provider: Arc<dyn ModelProvider>) -> AgentRuntime {
    AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(provider)
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap()
}

fn at(at: ForkPoint) -> ForkRunRequest {
    ForkRunRequest {
        at,
        changes: ForkChanges::default(),
    }
}

fn root_round(round: u32) -> ForkPoint {
    ForkPoint::AgentRound {
        invocation_id: InvocationId::root(),
        round,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_without_changes_asks_exactly_what_the_sources_cassette_recorded_after_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("source.cassette.jsonl");
    let source_id = {
        let scripted =
            ScriptedProvider::from_json_str(&crate::support::writer_script().to_string()).unwrap();
        let recorder =
            tt_runtime::RecordingProvider::create(Arc::new(scripted), &cassette).unwrap();
        let runtime = scripted_runtime(dir.path(), Arc::new(recorder));
        let run = runtime.start_run(start_request()).await.unwrap();
        let run = runtime.wait_for_run(run.id.as_str()).await.unwrap();
        assert_eq!(run.status, AgentRunStatus::Completed);
        runtime.shutdown().await.unwrap();
        run.id.to_string()
    };
    // The branch's first two rounds are replayed from the store; rounds 3 to 5 are asked live,
    // and must be the very requests the source made (a mismatch fails the run).
    let replay = Arc::new(tt_runtime::ReplayProvider::open(&cassette).unwrap());
    let runtime = scripted_runtime(dir.path(), Arc::clone(&replay) as Arc<dyn ModelProvider>);
    let before = all_files(dir.path(), &source_id);
    let branch = runtime
        .fork_run(&source_id, at(root_round(3)))
        .await
        .unwrap();
    let ended = runtime.wait_for_run(branch.id.as_str()).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    assert_eq!(replay.remaining(), 2, "rounds 1 and 2 are not asked again");
    let events = all_events(&runtime, branch.id.as_str()).await;
    assert_gapless(&events);
    assert_eq!(all_files(dir.path(), &source_id), before);
    // Same answers, same end: the branch's workspace is the source's.
    assert_eq!(
        workspace_files(dir.path(), branch.id.as_str()),
        workspace_files(dir.path(), &source_id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_of_a_branch_continues_from_the_branch_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let scripted =
        ScriptedProvider::from_json_str(&crate::support::writer_script().to_string()).unwrap();
    let runtime = scripted_runtime(dir.path(), Arc::new(scripted));
    let source = runtime.start_run(start_request()).await.unwrap();
    let source = runtime.wait_for_run(source.id.as_str()).await.unwrap();
    let first = runtime
        .fork_run(source.id.as_str(), at(root_round(3)))
        .await
        .unwrap();
    let first = runtime.wait_for_run(first.id.as_str()).await.unwrap();
    assert_eq!(first.status, AgentRunStatus::Completed);
    let first_files = all_files(dir.path(), first.id.as_str());
    let second = runtime
        .fork_run(first.id.as_str(), at(ForkPoint::LastCommit))
        .await
        .unwrap();
    let second = runtime.wait_for_run(second.id.as_str()).await.unwrap();
    assert_eq!(second.status, AgentRunStatus::Completed);
    let forked_from = second.forked_from.clone().unwrap();
    assert_eq!(forked_from.run_id, first.id);
    let events = all_events(&runtime, second.id.as_str()).await;
    assert_gapless(&events);
    // Its journal starts with the source's events (copied twice over) and names its source.
    assert_eq!(events[0].payload["forkedFrom"]["runId"], json!(first.id));
    assert_eq!(all_files(dir.path(), first.id.as_str()), first_files);
    // The branch tree of the chat: the source, its branch, and the branch's branch.
    let runs = runtime
        .list_runs(tt_runtime::ListRunsRequest::default())
        .await
        .unwrap();
    let parent = |id: &str| {
        runs.iter()
            .find(|run| run.id.as_str() == id)
            .and_then(|run| run.forked_from.as_ref())
            .map(|from| from.run_id.to_string())
    };
    assert_eq!(parent(second.id.as_str()), Some(first.id.to_string()));
    assert_eq!(parent(first.id.as_str()), Some(source.id.to_string()));
    assert_eq!(parent(source.id.as_str()), None);
    // The commit at the cut was published by the first branch; the second publishes nothing
    // again: the chat holds the source's reply and the first branch's.
    let published = runtime
        .transcript(source.workspace_id.as_str())
        .await
        .unwrap();
    assert_eq!(published.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_fork_requests_are_refused_with_codes_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scripted =
        ScriptedProvider::from_json_str(&crate::support::writer_script().to_string()).unwrap();
    let runtime = scripted_runtime(dir.path(), Arc::new(scripted));
    let source = runtime.start_run(start_request()).await.unwrap();
    let source_id = source.id.to_string();
    runtime.wait_for_run(&source_id).await.unwrap();
    let last = all_events(&runtime, &source_id).await.len() as u64;
    let before = all_files(dir.path(), &source_id);
    let refused = |at: ForkPoint, changes: ForkChanges| ForkRunRequest { at, changes };
    let cases = [
        (
            "run_missing",
            refused(ForkPoint::Seq { seq: 3 }, ForkChanges::default()),
            "agent.not_found",
        ),
        (
            source_id.as_str(),
            refused(ForkPoint::Seq { seq: 0 }, ForkChanges::default()),
            "agent.fork_point_invalid",
        ),
        (
            source_id.as_str(),
            refused(ForkPoint::Seq { seq: last + 1 }, ForkChanges::default()),
            "agent.fork_point_invalid",
        ),
        (
            source_id.as_str(),
            refused(ForkPoint::Seq { seq: 2 }, ForkChanges::default()),
            "agent.fork_point_invalid",
        ),
        (
            source_id.as_str(),
            refused(root_round(99), ForkChanges::default()),
            "agent.fork_point_invalid",
        ),
        (
            source_id.as_str(),
            refused(
                root_round(2),
                ForkChanges {
                    guidance: Some("  ".into()),
                    ..ForkChanges::default()
                },
            ),
            "agent.guidance_empty",
        ),
        (
            source_id.as_str(),
            refused(
                root_round(2),
                ForkChanges {
                    connection_ref: Some("nowhere".into()),
                    ..ForkChanges::default()
                },
            ),
            "agent.model_connection_not_found",
        ),
    ];
    for (run_id, request, code) in cases {
        let error = runtime.fork_run(run_id, request.clone()).await.unwrap_err();
        assert_eq!(error.code, code, "{request:?}: {error:?}");
    }
    let runs = runtime
        .list_runs(tt_runtime::ListRunsRequest::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(all_files(dir.path(), &source_id), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_is_still_working_is_branched_without_being_touched() {
    let dir = tempfile::tempdir().unwrap();
    // The source's fourth answer takes a minute; a branch whose note says `[fast]` plays the
    // same story without the wait.
    let mut slow = crate::support::writer_script();
    slow["agents"]["default-writer"][3]["delayMs"] = json!(60_000);
    let fast = crate::support::writer_script();
    let provider = tt_runtime::ScriptedScenarios::new(
        ScriptedProvider::from_json_str(&slow.to_string()).unwrap(),
    )
    .scenario(
        "[fast]",
        ScriptedProvider::from_json_str(&fast.to_string()).unwrap(),
    );
    let runtime = scripted_runtime(dir.path(), Arc::new(provider));
    let source = runtime.start_run(start_request()).await.unwrap();
    let source_id = source.id.to_string();
    let mut stream = runtime.subscribe(&source_id, 0, None);
    while let Some(event) = stream.next().await.unwrap() {
        if event.event_type == "model_call_attempt_started" && event.payload["round"] == 4 {
            break;
        }
    }
    let journal_before = all_files(dir.path(), &source_id)["events.jsonl"].clone();
    let branch = runtime
        .fork_run(
            &source_id,
            ForkRunRequest {
                at: root_round(3),
                changes: ForkChanges {
                    guidance: Some("Publish it now. [fast]".into()),
                    ..ForkChanges::default()
                },
            },
        )
        .await
        .unwrap();
    let ended = runtime.wait_for_run(branch.id.as_str()).await.unwrap();
    assert_eq!(ended.status, AgentRunStatus::Completed);
    // The source went on untouched: nothing was appended to its journal by the branch, it still
    // waits for its model, and it is still this runtime's to cancel.
    assert_eq!(
        all_files(dir.path(), &source_id)["events.jsonl"],
        journal_before
    );
    let live = runtime.get_run(&source_id).await.unwrap();
    assert!(!live.status.is_terminal(), "{:?}", live.status);
    runtime.cancel_run(&source_id).await.unwrap();
    let cancelled = runtime.wait_for_run(&source_id).await.unwrap();
    assert_eq!(cancelled.status, AgentRunStatus::Cancelled);
}
