//! The persistent-state metadata handshake when a run finishes: after `persist/` is promoted,
//! the host is asked to bind the new state to the chat message the run committed last, so the
//! next run of the conversation can find the state from that message.

use serde_json::Value;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::workspace::PersistentChangeSet;
use tt_ports::{HostBridgeError, PersistentStateMetadataUpdate};

use crate::engine::context::RunContext;
use crate::error::{ApplicationError, ApplicationResult};

/// How long the run waits for the host to answer the metadata update before it ends
/// `partial_success` with `agent.persistent_state_metadata_update_failed` (its commits kept).
pub(crate) const METADATA_UPDATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs the handshake for `change_set`; does nothing for a run that committed nothing. A
/// latest commit without a message id is `agent.persistent_state_message_missing`; a host
/// error is `agent.persistent_state_metadata_update_failed` (both fail-fast: the run keeps its
/// commits as partial success).
pub(crate) async fn bind_state_to_last_commit(
    ctx: &RunContext,
    change_set: &PersistentChangeSet,
    changes: &[Value],
) -> ApplicationResult<()> {
    let Some(latest) = ctx.commits().pop() else {
        return Ok(());
    };
    if latest.message_id.trim().is_empty() {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_PERSISTENT_STATE_MESSAGE_MISSING,
            format!(
                "the last commit ({}) has no message id to bind persistent state {} to",
                latest.path, change_set.state_id
            ),
        ));
    }
    let run = ctx.run_snapshot().await;
    let request = PersistentStateMetadataUpdate {
        update_id: format!("persist_metadata_{}", ctx.services.ids.next_token()),
        run_id: ctx.run_id.clone(),
        workspace_id: run.workspace_id.to_string(),
        stable_chat_id: run.stable_chat_id.clone(),
        chat_ref: run.chat_ref.clone(),
        generation_type: run.generation_type.clone(),
        profile_id: run.profile_id.as_ref().map(ToString::to_string),
        message_id: latest.message_id.clone(),
        state_id: change_set.state_id.clone(),
        base_state_id: change_set.base_state_id.clone(),
        change_count: changes.len() as u64,
        changes: Value::Array(changes.to_vec()),
    };
    let summary = payload::PersistentStateMetadataUpdated {
        update_id: request.update_id.clone(),
        message_id: request.message_id.clone(),
        state_id: request.state_id.clone(),
    };
    let outcome = match ctx
        .services
        .commit_bridge
        .request_metadata_update(request.clone())
        .await
    {
        Ok(answer) => {
            // The request the host answers is the event's payload itself.
            ctx.events
                .record(&ctx.run_id, EventLevel::Info, &request)
                .await?;
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => Err(HostBridgeError::Cancelled),
                answer = answer => answer,
                // A host that never answers must not hold the run in `finishing` for good.
                () = tokio::time::sleep(METADATA_UPDATE_TIMEOUT) => Err(HostBridgeError::Rejected(format!(
                    "the host did not answer within {} s",
                    METADATA_UPDATE_TIMEOUT.as_secs()
                ))),
            }
        }
        Err(error) => Err(error),
    };
    match outcome {
        Ok(()) => {
            ctx.events
                .record(&ctx.run_id, EventLevel::Info, &summary)
                .await?;
            Ok(())
        }
        Err(HostBridgeError::Cancelled) => Err(ApplicationError::cancelled()),
        Err(error) => {
            let message = error.to_string();
            let failed = payload::PersistentStateMetadataUpdateFailed {
                update_id: summary.update_id,
                message_id: summary.message_id,
                state_id: summary.state_id,
                message: message.clone(),
            };
            ctx.events
                .record(&ctx.run_id, EventLevel::Warn, &failed)
                .await?;
            Err(ApplicationError::fatal(
                error_codes::AGENT_PERSISTENT_STATE_METADATA_UPDATE_FAILED,
                format!(
                    "the host could not bind persistent state {} to message {}: {message}",
                    change_set.state_id, latest.message_id
                ),
            ))
        }
    }
}
