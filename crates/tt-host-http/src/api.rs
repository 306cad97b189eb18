//! The routes: the host command table (`tt_runtime::for_each_host_command!`) over HTTP, twice
//! over one mapping: every command at `POST /api/commands/{name}` with its JSON request, and
//! the REST routes the inspector and `docs/host-http.md` use, each of which builds one
//! command's request from its path, query and body and runs that command; plus the live event
//! stream and the page. Inputs are validated here before they reach the runtime: ids are short
//! plain tokens (never paths), bodies are JSON of a bounded size.

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use tt_runtime::error_codes;
use tt_runtime::{
    AgentProfileDefinition, AnswerSpendLimitCommand, AnswerSpendLimitRequest,
    ApproveToolCallRequest, ConversationRequest, ForkAgentRunRequest, GuidanceRequest,
    ListRunsRequest, NoInput, PersistStateRequest, ReadEventsRequest, ReadPromptAssemblyRequest,
    RecordRequest, ResolveChatCommitRequest, ResolvePromptAssemblyRequest,
    ResolveToolApprovalRequest, RunRef, StartRunRequest, TaskRef, TranscriptRequest,
    WorkspaceFileRequest, host_commands,
};

use crate::error::ApiError;
use crate::extract::{AppState, JsonBody, PathParams, QueryParams, valid_id};
use crate::info::ServerInfo;
use crate::security::Guard;

type ApiResult<T> = Result<T, ApiError>;

/// `value` as a JSON answer (200).
fn json(value: impl serde::Serialize) -> ApiResult<Response> {
    Ok(Json(value).into_response())
}

pub(crate) fn router(state: AppState, guard: Guard, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/", get(crate::page::page))
        .route("/api/info", get(info))
        .route("/api/runs", get(list_runs).post(start_run))
        .route("/api/run-updates", get(crate::stream::run_updates))
        .route("/api/connections", get(list_connections))
        .route("/api/runs/{run_id}", get(read_run))
        .route("/api/runs/{run_id}/cancel", post(cancel_run))
        .route("/api/runs/{run_id}/resume", post(resume_run))
        .route("/api/runs/{run_id}/abandon", post(abandon_run))
        .route("/api/runs/{run_id}/fork", post(fork_run))
        .route("/api/runs/{run_id}/guidance", post(submit_guidance))
        .route(
            "/api/runs/{run_id}/tasks/{task_id}/cancel",
            post(cancel_task),
        )
        .route("/api/runs/{run_id}/commits", get(pending_commits))
        .route("/api/runs/{run_id}/approvals", get(pending_approvals))
        .route(
            "/api/runs/{run_id}/approvals/{approval_id}/resolve",
            post(resolve_approval),
        )
        .route("/api/runs/{run_id}/spend-limit", get(pending_spend_limit))
        .route(
            "/api/runs/{run_id}/spend-limit/answer",
            post(answer_spend_limit),
        )
        .route(
            "/api/runs/{run_id}/persist-metadata/{update_id}/resolve",
            post(resolve_persist_metadata),
        )
        .route("/api/runs/{run_id}/events", get(read_events))
        .route("/api/runs/{run_id}/stream", get(crate::stream::stream))
        .route("/api/runs/{run_id}/timeline", get(timeline))
        .route("/api/runs/{run_id}/usage", get(usage))
        .route(
            "/api/runs/{run_id}/agents/{invocation_id}/conversation",
            get(agent_conversation),
        )
        .route("/api/runs/{run_id}/failure", get(unrecorded_failure))
        .route("/api/runs/{run_id}/check", get(check_run))
        .route("/api/runs/unreadable", get(unreadable_runs))
        .route("/api/runs/{run_id}/files", get(read_file))
        .route("/api/runs/{run_id}/workspace", get(list_files))
        .route("/api/runs/{run_id}/records", get(read_record))
        .route(
            "/api/runs/{run_id}/commits/{commit_id}/resolve",
            post(resolve_commit),
        )
        .route(
            "/api/runs/{run_id}/prompt-assemblies/{assembly_id}",
            get(read_prompt_assembly),
        )
        .route(
            "/api/runs/{run_id}/prompt-assemblies/{assembly_id}/resolve",
            post(resolve_prompt_assembly),
        )
        .route("/api/transcripts/{workspace_id}", get(transcript))
        .route("/api/persist-state", get(latest_persist_state))
        .route("/api/profiles", post(save_profile))
        .route("/api/commands", get(list_commands))
        .route("/api/commands/{name}", post(run_command))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            guard,
            crate::security::guard,
        ))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        error_codes::HTTP_ROUTE_NOT_FOUND,
        "no such endpoint",
    )
}

/// Every host command's name: what `POST /api/commands/{name}` takes.
async fn list_commands() -> Json<&'static [&'static str]> {
    Json(tt_runtime::HOST_COMMANDS)
}

/// Runs one host command by name with its JSON request (`{}` for a command without input)
/// and answers its JSON answer; `host.command_unknown` (404) for a name not in the table.
async fn run_command(
    State(state): State<AppState>,
    axum::extract::Path(name): axum::extract::Path<String>,
    JsonBody(request): JsonBody<serde_json::Value>,
) -> ApiResult<Response> {
    let answer = state.runtime.execute_command(&name, request).await?;
    json(answer)
}

async fn info(State(state): State<AppState>) -> Json<ServerInfo> {
    Json(state.info.as_ref().clone())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
struct ListQuery {
    offset: usize,
    limit: Option<usize>,
    token: Option<String>,
}

async fn list_runs(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<ListQuery>,
) -> ApiResult<Response> {
    let _ = query.token;
    let mut request = ListRunsRequest {
        offset: query.offset,
        ..ListRunsRequest::default()
    };
    if let Some(limit) = query.limit {
        request.limit = limit;
    }
    let runs = host_commands::list_agent_runs(&state.runtime, request).await?;
    json(runs)
}

async fn start_run(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<StartRunRequest>,
) -> ApiResult<Response> {
    if request.stable_chat_id.trim().is_empty() {
        return Err(ApiError::bad_request(
            error_codes::HTTP_INVALID_REQUEST,
            "stableChatId must not be empty",
        ));
    }
    if let Some(profile) = &request.profile_id {
        valid_id("profile", profile)?;
    }
    let run = host_commands::start_agent_run(&state.runtime, request).await?;
    Ok((StatusCode::CREATED, Json(run)).into_response())
}

async fn read_run(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    // The live status of a run this server executes, else the stored record.
    let run = host_commands::read_agent_run(&state.runtime, RunRef::new(run_id)).await?;
    json(run)
}

/// Sends user guidance to a live run (`submit_guidance`): `{text, clientGuidanceId?}`.
async fn submit_guidance(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(body): JsonBody<tt_runtime::SubmitGuidanceRequest>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let receipt = host_commands::submit_agent_guidance(
        &state.runtime,
        GuidanceRequest {
            run_id,
            guidance: body,
        },
    )
    .await?;
    json(receipt)
}

/// Cancels one delegated task and what it delegated in turn (`cancel_task`).
async fn cancel_task(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let task_id = path.id("task_id", "task")?;
    let task =
        host_commands::cancel_agent_task(&state.runtime, TaskRef { run_id, task_id }).await?;
    json(task)
}

/// The commits of a run waiting for the host's answer, with their text (`pending_commits`).
async fn pending_commits(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run = RunRef::new(path.run_id()?);
    json(host_commands::list_agent_chat_commits(&state.runtime, run).await?)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MetadataAnswerBody {
    error: Option<String>,
}

/// Answers a `persistent_state_metadata_update_requested`: `{}` acknowledges it, `{error}`
/// says why the host could not bind the state.
async fn resolve_persist_metadata(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(body): JsonBody<MetadataAnswerBody>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let update_id = path.id("update_id", "metadata update")?;
    let request = tt_runtime::ResolvePersistentStateMetadataUpdateRequest {
        run_id,
        update_id,
        error: body.error,
    };
    host_commands::resolve_agent_persistent_state_metadata_update(&state.runtime, request).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn cancel_run(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let run = host_commands::cancel_agent_run(&state.runtime, RunRef::new(run_id)).await?;
    json(run)
}

/// Resumes an interrupted, failed or cancelled run (`resume_run`, docs/resume.md).
async fn resume_run(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let run = host_commands::resume_agent_run(&state.runtime, RunRef::new(run_id)).await?;
    json(run)
}

/// Gives a run up so that it is never resumed (`abandon_run`, docs/resume.md).
async fn abandon_run(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let run = host_commands::abandon_agent_run(&state.runtime, RunRef::new(run_id)).await?;
    json(run)
}

/// Branches a run into a new run of the same chat (`fork_run`, docs/branching.md):
/// `{at, changes?}`; answers the branch as resumed.
async fn fork_run(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(body): JsonBody<tt_runtime::ForkRunRequest>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let run =
        host_commands::fork_agent_run(&state.runtime, ForkAgentRunRequest { run_id, fork: body })
            .await?;
    json(run)
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
struct EventsQuery {
    after: Option<u64>,
    before: Option<u64>,
    limit: Option<usize>,
    invocation: Option<String>,
    timeline: bool,
    token: Option<String>,
}

async fn read_events(
    State(state): State<AppState>,
    path: PathParams,
    QueryParams(query): QueryParams<EventsQuery>,
) -> ApiResult<Response> {
    let _ = query.token;
    let run_id = path.run_id()?;
    if let Some(invocation) = &query.invocation {
        valid_id("invocation", invocation)?;
    }
    let page = host_commands::read_agent_run_events(
        &state.runtime,
        ReadEventsRequest {
            run_id,
            after_seq: query.after,
            before_seq: query.before,
            limit: query.limit,
            invocation_id: query.invocation,
            include_timeline_projection: query.timeline,
        },
    )
    .await?;
    json(page)
}

async fn timeline(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run = RunRef::new(path.run_id()?);
    json(host_commands::read_agent_timeline(&state.runtime, run).await?)
}

async fn list_connections(State(state): State<AppState>) -> ApiResult<Response> {
    json(host_commands::list_agent_connections(&state.runtime, NoInput {}).await?)
}

/// Every file of the run's workspace, as logical paths.
async fn list_files(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run = RunRef::new(path.run_id()?);
    json(host_commands::list_agent_workspace_files(&state.runtime, run).await?)
}

async fn usage(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run = RunRef::new(path.run_id()?);
    json(host_commands::read_agent_usage(&state.runtime, run).await?)
}

/// One agent's conversation as a chat, rebuilt from the journal and the stored records
/// (`agent_conversation`).
async fn agent_conversation(
    State(state): State<AppState>,
    path: PathParams,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let invocation_id = path.id("invocation_id", "invocation")?;
    let conversation = host_commands::read_agent_conversation(
        &state.runtime,
        ConversationRequest {
            run_id,
            invocation_id,
        },
    )
    .await?;
    json(conversation)
}

/// Why a run ended when its journal could not keep the end (`read_agent_run_failure`).
async fn unrecorded_failure(
    State(state): State<AppState>,
    path: PathParams,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let failure =
        host_commands::read_agent_run_failure(&state.runtime, RunRef::new(run_id)).await?;
    json(failure)
}

async fn unreadable_runs(State(state): State<AppState>) -> ApiResult<Response> {
    json(host_commands::list_unreadable_agent_runs(&state.runtime, NoInput {}).await?)
}

async fn check_run(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run = RunRef::new(path.run_id()?);
    json(host_commands::check_agent_run(&state.runtime, run).await?)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileQuery {
    path: String,
    token: Option<String>,
}

/// A workspace file by its logical path; the runtime resolves and guards the path, so
/// nothing outside the run's workspace can be named.
async fn read_file(
    State(state): State<AppState>,
    path: PathParams,
    QueryParams(query): QueryParams<FileQuery>,
) -> ApiResult<Response> {
    let _ = query.token;
    let run_id = path.run_id()?;
    let request = WorkspaceFileRequest {
        run_id,
        path: query.path,
    };
    Ok(
        Json(host_commands::read_agent_workspace_file(&state.runtime, request).await?)
            .into_response(),
    )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RecordQuery {
    #[serde(rename = "ref")]
    reference: String,
    token: Option<String>,
}

/// A stored record by the reference an event names (`argumentsRef`, `blobs/<sha256>`, …).
async fn read_record(
    State(state): State<AppState>,
    path: PathParams,
    QueryParams(query): QueryParams<RecordQuery>,
) -> ApiResult<Response> {
    let _ = query.token;
    let run_id = path.run_id()?;
    let request = RecordRequest {
        run_id,
        reference: query.reference,
    };
    let record = host_commands::read_agent_record(&state.runtime, request).await?;
    json(record)
}

/// The tool calls of a run waiting for a person, with their arguments (`pending_approvals`).
async fn pending_approvals(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let run = RunRef::new(path.run_id()?);
    json(host_commands::list_agent_tool_approvals(&state.runtime, run).await?)
}

/// Answers a waiting call (`resolve_tool_approval`): body `{decision: "approve"}`,
/// `{decision: "approve_with_arguments", arguments}` or `{decision: "deny", message?}`, with
/// an optional `decidedBy`; the receipt.
async fn resolve_approval(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(body): JsonBody<ResolveToolApprovalRequest>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let approval_id = path.id("approval_id", "approval")?;
    let request = ApproveToolCallRequest {
        run_id,
        approval_id,
        resolution: body,
    };
    let receipt = host_commands::approve_agent_tool_call(&state.runtime, request).await?;
    json(receipt)
}

/// The run's spend limit while it is parked there (`read_agent_spend_limit`): `{spentUsd,
/// limitUsd}`, or `null` when the run is not parked.
async fn pending_spend_limit(
    State(state): State<AppState>,
    path: PathParams,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let pending =
        host_commands::read_agent_spend_limit(&state.runtime, RunRef::new(run_id)).await?;
    Ok(Json(pending).into_response())
}

/// Answers a run parked at its spend limit (`answer_agent_spend_limit`): body `{decision:
/// "raise", limitUsd}` or `{decision: "refuse"}`, with an optional `decidedBy`; the receipt.
async fn answer_spend_limit(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(answer): JsonBody<AnswerSpendLimitRequest>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let request = AnswerSpendLimitCommand { run_id, answer };
    let receipt = host_commands::answer_agent_spend_limit(&state.runtime, request).await?;
    Ok(Json(receipt).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CommitAnswerBody {
    message_id: Option<String>,
    error: Option<String>,
}

async fn resolve_commit(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(body): JsonBody<CommitAnswerBody>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let commit_id = path.id("commit_id", "commit")?;
    let request = ResolveChatCommitRequest {
        run_id,
        commit_id,
        message_id: body.message_id,
        error: body.error,
    };
    host_commands::resolve_agent_chat_commit(&state.runtime, request).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn read_prompt_assembly(
    State(state): State<AppState>,
    path: PathParams,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let assembly_id = path.id("assembly_id", "prompt assembly")?;
    let request = ReadPromptAssemblyRequest {
        run_id,
        assembly_id,
    };
    let request =
        host_commands::read_agent_prompt_assembly_request(&state.runtime, request).await?;
    json(request)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PromptAnswerBody {
    prompt_snapshot: Option<serde_json::Value>,
    frozen_run_input_snapshot: Option<serde_json::Value>,
    generation_intent: Option<serde_json::Value>,
    assembly: Option<serde_json::Value>,
    settings: Option<tt_runtime::AssembledSettings>,
    error: Option<String>,
}

async fn resolve_prompt_assembly(
    State(state): State<AppState>,
    path: PathParams,
    JsonBody(body): JsonBody<PromptAnswerBody>,
) -> ApiResult<Response> {
    let run_id = path.run_id()?;
    let assembly_id = path.id("assembly_id", "prompt assembly")?;
    host_commands::resolve_agent_prompt_assembly(
        &state.runtime,
        ResolvePromptAssemblyRequest {
            run_id,
            assembly_id,
            prompt_snapshot: body.prompt_snapshot,
            frozen_run_input_snapshot: body.frozen_run_input_snapshot,
            generation_intent: body.generation_intent,
            assembly: body.assembly,
            settings: body.settings,
            error: body.error,
        },
    )
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Messages published for a workspace (transcript commit bridge).
async fn transcript(State(state): State<AppState>, path: PathParams) -> ApiResult<Response> {
    let workspace_id = path.id("workspace_id", "workspace")?;
    Ok(Json(
        host_commands::read_agent_transcript(&state.runtime, TranscriptRequest { workspace_id })
            .await?,
    )
    .into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PersistQuery {
    chat: String,
    token: Option<String>,
}

async fn latest_persist_state(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<PersistQuery>,
) -> ApiResult<Response> {
    let _ = query.token;
    let request = PersistStateRequest {
        stable_chat_id: query.chat,
    };
    let answer = host_commands::read_agent_persist_state(&state.runtime, request).await?;
    json(answer)
}

async fn save_profile(
    State(state): State<AppState>,
    JsonBody(definition): JsonBody<AgentProfileDefinition>,
) -> ApiResult<Response> {
    host_commands::save_agent_profile(&state.runtime, definition).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_tokens() {
        assert!(valid_id("run", "run_0123abc").is_ok());
        for bad in ["", "../etc", "a/b", "a.b", "a%2f", &"x".repeat(129)] {
            let error = valid_id("run", bad).unwrap_err();
            assert_eq!(error.code, "http.invalid_id", "{bad}");
        }
    }
}
