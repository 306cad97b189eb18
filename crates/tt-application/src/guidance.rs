//! User guidance: a per-run mailbox for short notes the user sends while a run is working.
//!
//! The host submits text (`AgentRunService::submit_guidance`); everything pending is handed to
//! the foreground agent (root or handoff owner, never a delegated agent) as one `user` message
//! wrapped in `<user_guidance>` tags right before its next model request. When the run finishes,
//! fails or is cancelled, whatever is still pending is discarded and the mailbox closes.

use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;
use tt_domain::error_codes;
use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::{InvocationId, RunId};
use tt_domain::model::{AgentModelMessage, ModelRole};
use tt_domain::text::{char_count, word_count};

use crate::error::{ApplicationError, ApplicationResult};
use crate::events::EventSink;

/// Most characters one guidance item may have.
pub const MAX_GUIDANCE_CHARS: usize = 16_000;
/// Most items that may wait for the next model request.
pub const MAX_PENDING_GUIDANCE_ITEMS: usize = 8;
/// Most characters, over all pending items, that may wait for the next model request.
pub const MAX_PENDING_GUIDANCE_CHARS: usize = 64_000;
/// Characters of an item kept in the `preview` of `user_guidance_applied`.
const PREVIEW_CHARS: usize = 160;

/// What a host submits.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmitGuidanceRequest {
    /// The user's note, as typed.
    pub text: String,
    /// The host's own id for this note, echoed in the events.
    pub client_guidance_id: Option<String>,
}

/// The mailbox's answer to an accepted submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuidanceReceipt {
    pub guidance_id: String,
    pub run_id: RunId,
    /// Items waiting for the next model request, this one included.
    pub pending_count: usize,
    /// Characters waiting for the next model request, this item included.
    pub pending_chars: usize,
}

#[derive(Debug, Clone)]
struct PendingGuidance {
    guidance_id: String,
    client_guidance_id: Option<String>,
    text: String,
    chars: usize,
}

#[derive(Debug, Default)]
struct MailboxState {
    closed: bool,
    pending: Vec<PendingGuidance>,
    next: u64,
}

impl MailboxState {
    fn pending_chars(&self) -> usize {
        self.pending.iter().map(|item| item.chars).sum()
    }
}

/// Refuses an empty note (`agent.guidance_empty`) or one over [`MAX_GUIDANCE_CHARS`]
/// (`agent.guidance_too_large`).
pub(crate) fn check_text(text: &str) -> ApplicationResult<()> {
    if text.trim().is_empty() {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_GUIDANCE_EMPTY,
            "guidance text is empty",
        ));
    }
    let chars = char_count(text);
    if chars > MAX_GUIDANCE_CHARS {
        return Err(ApplicationError::fatal(
            error_codes::AGENT_GUIDANCE_TOO_LARGE,
            format!(
                "guidance has {chars} characters; one item may have at most {MAX_GUIDANCE_CHARS}"
            ),
        ));
    }
    Ok(())
}

/// One run's guidance mailbox. Its lock is held across the journal append, so
/// `user_guidance_submitted` always precedes the `user_guidance_applied` or
/// `user_guidance_discarded` that consumes the item.
#[derive(Debug, Default)]
pub(crate) struct GuidanceMailbox {
    state: Mutex<MailboxState>,
}

impl GuidanceMailbox {
    /// The mailbox of a resumed run: `pending` (guidance id, client id, text), submitted but
    /// never read before the process died, waits again for the foreground agent's next model
    /// request, and new notes are numbered after the `submitted` ones the run already had.
    pub(crate) async fn restore(
        &self,
        submitted: u64,
        pending: Vec<(String, Option<String>, String)>,
    ) {
        let mut state = self.state.lock().await;
        state.next = state.next.max(submitted);
        state.pending = pending
            .into_iter()
            .map(|(guidance_id, client_guidance_id, text)| PendingGuidance {
                chars: char_count(&text),
                guidance_id,
                client_guidance_id,
                text,
            })
            .collect();
    }

    /// Checks the limits, queues the item and journals `user_guidance_submitted`.
    pub(crate) async fn submit(
        &self,
        events: &EventSink,
        run_id: &RunId,
        request: SubmitGuidanceRequest,
    ) -> ApplicationResult<GuidanceReceipt> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(mailbox_closed());
        }
        check_text(&request.text)?;
        let chars = char_count(&request.text);
        if state.pending.len() >= MAX_PENDING_GUIDANCE_ITEMS {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_GUIDANCE_QUEUE_FULL,
                format!(
                    "{MAX_PENDING_GUIDANCE_ITEMS} guidance items are already waiting for the agent's next step"
                ),
            ));
        }
        let pending_chars = state.pending_chars();
        if pending_chars + chars > MAX_PENDING_GUIDANCE_CHARS {
            return Err(ApplicationError::fatal(
                error_codes::AGENT_GUIDANCE_PENDING_TOO_LARGE,
                format!(
                    "{pending_chars} characters of guidance are already waiting; with {chars} more \
                     they would exceed {MAX_PENDING_GUIDANCE_CHARS}"
                ),
            ));
        }
        state.next += 1;
        let item = PendingGuidance {
            guidance_id: format!("guidance_{:06}", state.next),
            client_guidance_id: request.client_guidance_id,
            text: request.text,
            chars,
        };
        let receipt = GuidanceReceipt {
            guidance_id: item.guidance_id.clone(),
            run_id: run_id.clone(),
            pending_count: state.pending.len() + 1,
            pending_chars: pending_chars + chars,
        };
        events
            .record_in(
                run_id,
                EventLevel::Info,
                &payload::UserGuidanceSubmitted {
                    guidance_id: item.guidance_id.clone(),
                    client_guidance_id: item.client_guidance_id.clone(),
                    text: item.text.clone(),
                    chars: chars as u64,
                    words: word_count(&item.text) as u64,
                    pending_count: receipt.pending_count as u64,
                    pending_chars: receipt.pending_chars as u64,
                    status: "pending".to_owned(),
                },
                &InvocationId::root(),
            )
            .await?;
        state.pending.push(item);
        Ok(receipt)
    }

    /// Hands everything pending to the agent about to call the model: appends one
    /// `<user_guidance>` user message to `messages` and journals `user_guidance_applied`.
    /// Does nothing when nothing is pending or the mailbox is closed.
    pub(crate) async fn apply(
        &self,
        events: &EventSink,
        run_id: &RunId,
        invocation_id: &tt_domain::ids::InvocationId,
        round: u32,
        messages: &mut Vec<AgentModelMessage>,
    ) -> ApplicationResult<()> {
        let mut state = self.state.lock().await;
        if state.closed || state.pending.is_empty() {
            return Ok(());
        }
        let items = std::mem::take(&mut state.pending);
        let texts: Vec<&str> = items.iter().map(|item| item.text.as_str()).collect();
        let message_index = messages.len();
        messages.push(AgentModelMessage::text(
            ModelRole::User,
            render_guidance_message(&texts),
        ));
        let joined = texts.join("\n\n");
        events
            .record(
                run_id,
                EventLevel::Info,
                &payload::UserGuidanceApplied {
                    guidance_ids: guidance_ids(&items),
                    client_guidance_ids: client_guidance_ids(&items),
                    invocation_id: invocation_id.clone(),
                    round,
                    count: items.len() as u64,
                    chars: total_chars(&items),
                    words: word_count(&joined) as u64,
                    preview: preview(&joined),
                    message_index: message_index as u64,
                    request_message_count: messages.len() as u64,
                    status: "applied".to_owned(),
                },
            )
            .await?;
        Ok(())
    }

    /// Closes the mailbox for good; anything still pending is journaled as
    /// `user_guidance_discarded` with `reason`. Closing twice does nothing the second time.
    pub(crate) async fn close(
        &self,
        events: &EventSink,
        run_id: &RunId,
        reason: &str,
    ) -> ApplicationResult<()> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Ok(());
        }
        state.closed = true;
        let items = std::mem::take(&mut state.pending);
        if items.is_empty() {
            return Ok(());
        }
        events
            .record_in(
                run_id,
                EventLevel::Warn,
                &payload::UserGuidanceDiscarded {
                    guidance_ids: guidance_ids(&items),
                    client_guidance_ids: client_guidance_ids(&items),
                    count: items.len() as u64,
                    chars: total_chars(&items),
                    reason: reason.to_owned(),
                    status: "discarded".to_owned(),
                },
                &InvocationId::root(),
            )
            .await?;
        Ok(())
    }
}

/// Refusal for a run whose mailbox is closed (the run is ending or has ended).
pub(crate) fn mailbox_closed() -> ApplicationError {
    ApplicationError::fatal(
        error_codes::AGENT_GUIDANCE_MAILBOX_CLOSED,
        "the run is no longer accepting guidance: it has finished, failed or been cancelled",
    )
}

/// The user message that carries guidance to the agent.
pub(crate) fn render_guidance_message(texts: &[&str]) -> String {
    let mut out = String::from(
        "<user_guidance>\nThe user sent this while you were working. Take it into account from \
         your next step on; it does not replace the original request unless it says so.\n",
    );
    for text in texts {
        out.push('\n');
        out.push_str(text.trim());
        out.push('\n');
    }
    out.push_str("</user_guidance>");
    out
}

fn guidance_ids(items: &[PendingGuidance]) -> Vec<String> {
    items.iter().map(|item| item.guidance_id.clone()).collect()
}

fn client_guidance_ids(items: &[PendingGuidance]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| item.client_guidance_id.clone())
        .collect()
}

fn total_chars(items: &[PendingGuidance]) -> u64 {
    items.iter().map(|item| item.chars as u64).sum()
}

fn preview(text: &str) -> String {
    let mut preview: String = text.chars().take(PREVIEW_CHARS).collect();
    if char_count(text) > PREVIEW_CHARS {
        preview.push('…');
    }
    preview
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guidance_message_as_the_model_sees_it() {
        let one = render_guidance_message(&["Make the storm arrive earlier."]);
        let two = render_guidance_message(&[
            "Make the storm arrive earlier.",
            "  Keep the ending hopeful.\n",
        ]);
        tt_testkit::leaks::assert_no_leaks("user guidance", &two);
        insta::assert_snapshot!("user_guidance_one_item", one);
        insta::assert_snapshot!("user_guidance_two_items", two);
    }

    #[test]
    fn preview_is_bounded() {
        let long = "a".repeat(500);
        assert_eq!(preview(&long).chars().count(), PREVIEW_CHARS + 1);
        assert_eq!(preview("short"), "short");
    }
}
