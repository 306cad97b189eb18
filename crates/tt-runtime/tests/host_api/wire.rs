//! Every public type a host exchanges with the runtime serializes (camelCase JSON, both ways):
//! what the host API takes and answers, what its events, handles and feeds carry. A type
//! added to the crate root's re-exports that crosses the host API belongs on this list.
//! Not on it: what is built in code and never crosses (`ConnectionSpec` and `ConnectionKind`,
//! the builder's; connection files have their own format), the provider side
//! (`ConnectionModelInfo`), traits and live handles (`RunHandle`, `EventSubscription`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tempfile::TempDir;
use tt_runtime as rt;

use super::{committing_writer, request, runtime};

/// Compiles only for a type that serializes and deserializes.
fn assert_serde<T: Serialize + DeserializeOwned>() {}

#[test]
fn every_type_a_host_exchanges_serializes() {
    // Requests and answers of the host API.
    assert_serde::<rt::HostError>();
    assert_serde::<rt::StartRunRequest>();
    assert_serde::<rt::PromptMessage>();
    assert_serde::<rt::PromptRole>();
    assert_serde::<rt::ReadEventsRequest>();
    assert_serde::<rt::ReadEventsResponse>();
    assert_serde::<rt::ListRunsRequest>();
    assert_serde::<rt::ResolveChatCommitRequest>();
    assert_serde::<rt::ResolvePersistentStateMetadataUpdateRequest>();
    assert_serde::<rt::ReadPromptAssemblyRequest>();
    assert_serde::<rt::ResolvePromptAssemblyRequest>();
    assert_serde::<rt::AssembledSettings>();
    assert_serde::<rt::ConnectionSummary>();
    assert_serde::<rt::ConnectionSource>();
    assert_serde::<rt::WorkspaceFileDto>();
    assert_serde::<rt::TranscriptEntry>();
    assert_serde::<rt::SubmitGuidanceRequest>();
    assert_serde::<rt::GuidanceReceipt>();
    assert_serde::<rt::PendingToolApproval>();
    assert_serde::<rt::ResolveToolApprovalRequest>();
    assert_serde::<rt::ToolApprovalReceipt>();
    assert_serde::<rt::ApprovalDecision>();
    assert_serde::<rt::ApprovalPolicy>();
    assert_serde::<rt::ApprovalRule>();
    assert_serde::<rt::ForkRunRequest>();
    assert_serde::<rt::ForkPoint>();
    assert_serde::<rt::ForkChanges>();
    assert_serde::<rt::ChatCommitRequest>();
    assert_serde::<rt::PendingHostRequests>();
    assert_serde::<rt::RunUpdate>();
    // Runs, their events and what is read of them.
    assert_serde::<rt::AgentRun>();
    assert_serde::<rt::AgentRunStatus>();
    assert_serde::<rt::ConversationKind>();
    assert_serde::<rt::ForkedFrom>();
    assert_serde::<rt::RebuiltRecord>();
    assert_serde::<rt::UnrecordedEnd>();
    assert_serde::<rt::AgentRunEvent>();
    assert_serde::<rt::EventLevel>();
    assert_serde::<rt::RunEventType>();
    assert_serde::<rt::RunEventPayload>();
    assert_serde::<rt::TypedRunEvent>();
    assert_serde::<rt::TimelineProjection>();
    assert_serde::<rt::TimelineInvocation>();
    assert_serde::<rt::DelegationEdge>();
    assert_serde::<rt::RunUsage>();
    assert_serde::<rt::InvocationUsage>();
    assert_serde::<rt::UsageTotals>();
    assert_serde::<rt::InheritedUsage>();
    assert_serde::<rt::RunResult>();
    assert_serde::<rt::RunFailure>();
    assert_serde::<rt::PublishedCommit>();
    assert_serde::<rt::AgentConversation>();
    assert_serde::<rt::ConversationEntry>();
    assert_serde::<rt::ConversationToolCall>();
    assert_serde::<rt::InjectedTaskResult>();
    assert_serde::<rt::InheritedAnswers>();
    assert_serde::<rt::RunDamage>();
    assert_serde::<rt::DamageFinding>();
    assert_serde::<rt::UnreadableRun>();
    assert_serde::<rt::AgentTaskRecord>();
    assert_serde::<rt::TaskContinuation>();
    assert_serde::<rt::TaskStatus>();
    assert_serde::<rt::InvocationKind>();
    assert_serde::<rt::InvocationStatus>();
    assert_serde::<rt::ExitPolicy>();
    assert_serde::<rt::RunId>();
    assert_serde::<rt::InvocationId>();
    assert_serde::<rt::TaskId>();
    assert_serde::<rt::ProfileId>();
    assert_serde::<rt::CheckpointId>();
    // Profiles, skills, models and tools.
    assert_serde::<rt::AgentProfileDefinition>();
    assert_serde::<rt::ProfileSummary>();
    assert_serde::<rt::ProfileDeleted>();
    assert_serde::<rt::SkillScope>();
    assert_serde::<rt::SkillScopeRefs>();
    assert_serde::<rt::GenerationSettings>();
    assert_serde::<rt::ReasoningEffort>();
    assert_serde::<rt::ModelPrice>();
    assert_serde::<rt::PriceTable>();
    assert_serde::<rt::AgentModelRequest>();
    assert_serde::<rt::AgentModelResponse>();
    assert_serde::<rt::AgentModelMessage>();
    assert_serde::<rt::ModelContentPart>();
    assert_serde::<rt::ModelRole>();
    assert_serde::<rt::ModelUsage>();
    assert_serde::<rt::AgentToolCall>();
    assert_serde::<rt::AgentToolResult>();
    assert_serde::<rt::AgentToolSpec>();
    assert_serde::<rt::ToolSummary>();
    assert_serde::<rt::HostToolCall>();
    assert_serde::<rt::HostToolReply>();
    assert_serde::<rt::McpServerEntry>();
    assert_serde::<rt::McpServerConfig>();
    assert_serde::<rt::McpTransport>();
    assert_serde::<rt::McpCatalog>();
    assert_serde::<rt::McpToolInfo>();
    assert_serde::<rt::McpCallOutput>();
    assert_serde::<rt::ExternalToolFacts>();
    assert_serde::<rt::SideEffect>();
    assert_serde::<rt::ToolPermission>();
}

/// JSON and back, unchanged.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) -> Value {
    let wire = serde_json::to_value(value).unwrap();
    let back: T = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(&back, value, "{wire}");
    wire
}

/// A whole run's typed events, what it waited on the host for, and the run updates it made,
/// each to JSON and back.
#[tokio::test]
async fn a_runs_typed_events_pending_requests_and_updates_round_trip() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), committing_writer());
    let mut updates = runtime.run_updates().unwrap();
    let handle = runtime.start(request()).await.unwrap();
    let mut events = handle.events();
    let mut typed = 0;
    let mut pending_seen = 0;
    while let Some(item) = events.next().await.unwrap() {
        let wire = round_trip(&item);
        if item.payload.is_some() {
            typed += 1;
            assert_eq!(wire["payload"]["type"], json!(item.event.event_type));
        }
        match item.payload {
            Some(rt::RunEventPayload::ChatCommitRequested(requested)) => {
                let pending = handle.pending().await.unwrap();
                let wire = round_trip(&pending);
                assert_eq!(wire["commits"][0]["commitId"], json!(requested.commit_id));
                pending_seen += 1;
                handle
                    .publish_commit(requested.commit_id.as_str(), "msg-1")
                    .unwrap();
            }
            Some(rt::RunEventPayload::PersistentStateMetadataUpdateRequested(requested)) => {
                let pending = handle.pending().await.unwrap();
                let wire = round_trip(&pending);
                assert_eq!(
                    wire["metadataUpdates"][0]["updateId"],
                    json!(requested.update_id)
                );
                assert_eq!(wire["promptAssemblies"], json!([]));
                pending_seen += 1;
                handle
                    .answer_metadata_update(&requested.update_id, None)
                    .unwrap();
            }
            _ => {}
        }
    }
    assert!(typed > 10, "{typed}");
    assert_eq!(pending_seen, 2);
    let ended = handle.wait().await.unwrap();
    // The updates the run made, up to its end.
    loop {
        let update = updates.next().await.unwrap();
        let wire = round_trip(&update);
        match update {
            rt::RunUpdate::Changed(run) => {
                assert_eq!(wire["type"], "changed");
                assert_eq!(wire["run"]["id"], json!(run.id));
                if run.status == ended.status {
                    break;
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        round_trip(&rt::RunUpdate::Lagged),
        json!({"type": "lagged"})
    );
}
