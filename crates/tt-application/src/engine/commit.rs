//! `workspace.commit`: publish a workspace file as the reply through the host commit bridge and
//! record it in the run's commit ledger (reference §6 "Commit and commit ledger").

use serde_json::json;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{CheckpointId, CommitId};
use tt_domain::profile::ArtifactTarget;
use tt_domain::run::AgentRunStatus;
use tt_domain::text::{char_count, word_count};
use tt_domain::tool::{AgentToolCall, ToolName};
use tt_domain::workspace::CheckpointReason;
use tt_ports::{ChatCommitRequest, FileContent, HostBridgeError, StorageError};

use crate::engine::context::{CommitRecord, RunContext};
use crate::engine::invocation::InvocationRuntime;
use crate::engine::scheduler::Wait;
use crate::error::{ApplicationError, ToolCallError, ToolError};
use crate::tools::ToolSuccess;
use crate::tools::workspace::{CommitArgs, parse_commit_args};

/// One publication on its way: what is published and under which id and checkpoint.
struct Publication<'a> {
    ctx: &'a RunContext,
    inv: &'a InvocationRuntime,
    call: &'a AgentToolCall,
    args: CommitArgs,
    file: FileContent,
    commit_id: CommitId,
    chars: usize,
    words: usize,
}

/// Runs the commit handshake for one `workspace.commit` call: the file is read and checked,
/// a checkpoint taken, the host asked to publish it, and what it published recorded.
pub(crate) async fn run_commit(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    round: u32,
    call: &AgentToolCall,
) -> Result<ToolSuccess, ToolCallError> {
    let args = parse_commit_args(&call.arguments, &inv.profile.message_body_path, &inv.policy)?;
    let file = publishable_file(ctx, inv, &args).await?;
    // A commit offered before the run was interrupted is offered again under the same id, so
    // the host can tell it already has it (docs/resume.md).
    let commit_id = inv
        .replayed_call(round, &call.id, |replay, key| {
            replay.commit_id(key).cloned()
        })
        .unwrap_or_else(|| CommitId::generate(ctx.services.ids.next_token()));
    let publication = Publication {
        ctx,
        inv,
        call,
        chars: char_count(&file.text),
        words: word_count(&file.text),
        args,
        file,
        commit_id,
    };
    let checkpoint_id = publication.checkpoint().await?;
    let message_id = publication.ask_host(&checkpoint_id).await?;
    publication
        .record_published(round, &checkpoint_id, message_id)
        .await
}

/// The file to publish: it exists, is a file, and is not empty when the profile requires the
/// reply there.
async fn publishable_file(
    ctx: &RunContext,
    inv: &InvocationRuntime,
    args: &CommitArgs,
) -> Result<FileContent, ToolCallError> {
    let file = match ctx.services.workspace.read(&ctx.run_id, &args.path).await {
        Ok(file) => file,
        Err(StorageError::NotFound { .. }) => {
            return Err(ToolError::new(
                error_codes::WORKSPACE_FILE_NOT_FOUND,
                format!(
                    "`{}` does not exist yet. Write it with `{}` first.",
                    args.path,
                    ToolName::WorkspaceWriteFile.model_alias()
                ),
            )
            .into());
        }
        Err(StorageError::IsDirectory { .. }) => {
            return Err(ToolError::new(
                error_codes::WORKSPACE_PATH_IS_DIRECTORY,
                format!("`{}` is a folder; commit a file.", args.path),
            )
            .into());
        }
        Err(other) => return Err(other.into()),
    };
    let required_body = inv
        .profile
        .definition
        .output
        .artifacts
        .iter()
        .any(|artifact| {
            artifact.required
                && artifact.target == ArtifactTarget::MessageBody
                && tt_domain::workspace::WorkspacePath::parse(&artifact.path)
                    .is_ok_and(|path| path == args.path)
        });
    if required_body && file.text.trim().is_empty() {
        return Err(ToolError::new(
            error_codes::WORKSPACE_REQUIRED_ARTIFACT_EMPTY,
            format!(
                "`{}` is empty. Write the reply there before you publish it.",
                args.path
            ),
        )
        .into());
    }
    Ok(file)
}

impl Publication<'_> {
    /// Journals `chat_commit_started`, takes the checkpoint of the file and journals it.
    async fn checkpoint(&self) -> Result<CheckpointId, ToolCallError> {
        let (ctx, inv, args) = (self.ctx, self.inv, &self.args);
        let started = ctx
            .events
            .record(
                &ctx.run_id,
                EventLevel::Info,
                &payload::ChatCommitStarted {
                    commit_id: self.commit_id.to_string(),
                    invocation_id: inv.invocation.id.clone(),
                    call_id: self.call.id.clone(),
                    path: args.path.to_string(),
                    mode: args.mode.as_str().to_owned(),
                    reason: args.reason.clone(),
                },
            )
            .await?;
        ctx.try_set_status(AgentRunStatus::CreatingCheckpoint)
            .await?;
        let checkpoint = ctx
            .services
            .workspace
            .create_checkpoint(
                &ctx.run_id,
                CheckpointReason::ChatCommit,
                started.seq,
                std::slice::from_ref(&args.path),
                ctx.services.clock.now(),
            )
            .await?;
        ctx.events
            .record(
                &ctx.run_id,
                EventLevel::Info,
                &payload::CheckpointCreated {
                    invocation_id: inv.invocation.id.clone(),
                    checkpoint_id: checkpoint.id.clone(),
                    reason: CheckpointReason::ChatCommit,
                    event_seq: started.seq,
                    files: checkpoint.files.clone(),
                },
            )
            .await?;
        Ok(checkpoint.id)
    }

    /// Registers the commit with the host, journals `chat_commit_requested` and waits for the
    /// host's answer (or the agent's cancel): the id of the message it published. A host that
    /// cannot publish ends the agent (`agent.chat_commit_failed`, journaled).
    async fn ask_host(&self, checkpoint_id: &CheckpointId) -> Result<String, ToolCallError> {
        // The host's time to publish is not the agent's inactivity (its watchdog pauses).
        let (scheduler, id) = (&self.inv.scheduler, &self.inv.invocation.id);
        scheduler.set_waiting(id, Wait::Host, true);
        let answer = self.ask_host_waiting(checkpoint_id).await;
        scheduler.set_waiting(id, Wait::Host, false);
        answer
    }

    async fn ask_host_waiting(
        &self,
        checkpoint_id: &CheckpointId,
    ) -> Result<String, ToolCallError> {
        let (ctx, inv, args) = (self.ctx, self.inv, &self.args);
        ctx.try_set_status(AgentRunStatus::AwaitingHostCommit)
            .await?;
        let run = ctx.run_snapshot().await;
        let mode = args.mode.as_str();
        let request = ChatCommitRequest {
            commit_id: self.commit_id.clone(),
            run_id: ctx.run_id.clone(),
            invocation_id: inv.invocation.id.clone(),
            call_id: self.call.id.clone(),
            workspace_id: run.workspace_id.clone(),
            stable_chat_id: run.stable_chat_id.clone(),
            chat_ref: run.chat_ref.clone(),
            generation_type: run.generation_type.clone(),
            profile_id: run.profile_id.as_ref().map(ToString::to_string),
            path: args.path.to_string(),
            mode: mode.to_owned(),
            reason: args.reason.clone(),
            content: self.file.text.clone(),
            chars: self.chars,
            words: self.words,
            sha256: self.file.sha256.clone(),
            checkpoint_id: checkpoint_id.clone(),
        };
        // Register with the host first, so it can never see a request it cannot answer yet.
        let outcome = match ctx.services.commit_bridge.request_commit(request).await {
            Ok(answer) => {
                ctx.events
                    .record(
                        &ctx.run_id,
                        EventLevel::Info,
                        &payload::ChatCommitRequested {
                            commit_id: self.commit_id.to_string(),
                            invocation_id: inv.invocation.id.clone(),
                            call_id: self.call.id.clone(),
                            run_id: ctx.run_id.clone(),
                            workspace_id: run.workspace_id.to_string(),
                            stable_chat_id: run.stable_chat_id.clone(),
                            chat_ref: run.chat_ref.clone(),
                            generation_type: run.generation_type.clone(),
                            profile_id: run.profile_id.clone(),
                            persist_base_state_id: run.persist_base_state_id.clone(),
                            path: args.path.to_string(),
                            mode: mode.to_owned(),
                            reason: args.reason.clone(),
                            chars: self.chars as u64,
                            words: self.words as u64,
                            sha256: self.file.sha256.clone(),
                            checkpoint_id: checkpoint_id.clone(),
                        },
                    )
                    .await?;
                tokio::select! {
                    biased;
                    () = inv.cancel.cancelled() => Err(HostBridgeError::Cancelled),
                    answer = answer => answer,
                }
            }
            Err(error) => Err(error),
        };
        match outcome {
            Ok(receipt) => Ok(receipt.message_id),
            Err(HostBridgeError::Cancelled) => Err(ApplicationError::cancelled().into()),
            Err(error) => {
                let message = error.to_string();
                ctx.events
                    .record(
                        &ctx.run_id,
                        EventLevel::Warn,
                        &payload::ChatCommitFailed {
                            commit_id: self.commit_id.to_string(),
                            invocation_id: inv.invocation.id.clone(),
                            call_id: self.call.id.clone(),
                            path: args.path.to_string(),
                            mode: mode.to_owned(),
                            message: message.clone(),
                        },
                    )
                    .await?;
                Err(ApplicationError::fatal(
                    error_codes::AGENT_CHAT_COMMIT_FAILED,
                    format!("the host could not publish the reply: {message}"),
                )
                .into())
            }
        }
    }

    /// Records what the host published in the run's ledger and journals
    /// `chat_commit_completed` and `chat_commit_recorded`; the agent's result.
    async fn record_published(
        self,
        round: u32,
        checkpoint_id: &CheckpointId,
        message_id: String,
    ) -> Result<ToolSuccess, ToolCallError> {
        let (ctx, inv, args) = (self.ctx, self.inv, &self.args);
        let mode = args.mode.as_str();
        let (chars, words) = (self.chars, self.words);
        let commit_count = ctx.record_commit(CommitRecord {
            path: args.path.to_string(),
            mode: mode.to_owned(),
            message_id: message_id.clone(),
            round,
        });
        ctx.try_set_status(AgentRunStatus::DispatchingTool).await?;
        let message_index = message_id.parse::<i64>().ok();
        ctx.events
            .record(
                &ctx.run_id,
                EventLevel::Info,
                &payload::ChatCommitCompleted {
                    commit_id: self.commit_id.to_string(),
                    invocation_id: inv.invocation.id.clone(),
                    call_id: self.call.id.clone(),
                    path: args.path.to_string(),
                    mode: mode.to_owned(),
                    chars: chars as u64,
                    words: words as u64,
                    sha256: self.file.sha256.clone(),
                    checkpoint_id: checkpoint_id.clone(),
                    message_id: message_id.clone(),
                    message_index,
                },
            )
            .await?;
        ctx.events
            .record(
                &ctx.run_id,
                EventLevel::Info,
                &payload::ChatCommitRecorded {
                    invocation_id: inv.invocation.id.clone(),
                    commit_count: commit_count as u64,
                    path: args.path.to_string(),
                    mode: mode.to_owned(),
                    message_id,
                },
            )
            .await?;
        let content = format!(
            "Published `{}` ({chars} chars / {words} words). You may revise and publish again; end your work with `{}`.",
            args.path,
            ToolName::WorkspaceFinish.model_alias()
        );
        Ok(ToolSuccess::new(
            content,
            json!({"path": args.path, "mode": mode, "chars": chars, "words": words, "sha256": self.file.sha256, "committed": true, "commitCount": commit_count}),
        ))
    }
}
