//! What trimming takes out of an agent's history before it shortens anything: the turns the
//! agent has moved past. A *drift turn* is a plain-text answer and the runtime's reminder to use
//! tools that follows it; a *slip turn* is an answer whose every call was refused as a model slip
//! (a malformed call, too many calls). Once a later turn shows the agent past them they only take
//! room, so they leave whole (the answer and what answered it; any other message of the turn,
//! such as guidance the user sent, stays):
//!
//! - a drift turn followed later by another drift turn (the later reminder says the same, and
//!   the later text replaced the earlier one in the file the runtime saved it to), or by a turn
//!   with a call that ran (the agent is back on track);
//! - a slip turn followed later by a turn with a call that ran.
//!
//! The latest drift turn before the agent's latest turn, when only slips followed it, keeps its
//! reminder, and its text (saved to a workspace file) may become a stub naming that file.
//!
//! Whole answer-and-reply pairs leave, so the history keeps its alternation of the agent's
//! answers and what answered them (some local chat templates refuse anything else).

use crate::model::{AgentModelMessage, ModelContentPart, ModelRole};

/// How the runtime's reminder after a plain-text answer begins (`engine::tool_loop::drift_nudge`).
pub const DRIFT_REMINDER_PREFIX: &str = "[system reminder, direct output recovery attempt ";

/// How the reminder says where the plain text was saved: this, the path, a backtick.
pub const DRIFT_SAVED_TO: &str = "Your text was saved to `";

/// What kind of turn the agent's answer at some index opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnKind {
    /// A plain-text answer answered by the reminder.
    Drift,
    /// Every call refused as a model slip.
    Slip,
    /// Anything else: at least one call ran (or was refused as a tool's own refusal).
    Good,
}

/// One turn: the agent's answer at `answer`, then the messages up to the next answer.
#[derive(Debug, Clone)]
struct Turn {
    answer: usize,
    end: usize,
    kind: TurnKind,
}

fn is_reminder(message: &AgentModelMessage) -> bool {
    message.role == ModelRole::User && message.text_content().starts_with(DRIFT_REMINDER_PREFIX)
}

fn is_slip_result(message: &AgentModelMessage) -> bool {
    message.parts.iter().all(|part| match part {
        ModelContentPart::ToolResult { result } => {
            result.is_error
                && result
                    .error_code
                    .as_deref()
                    .is_some_and(crate::error_codes::is_model_slip)
        }
        _ => false,
    }) && !message.parts.is_empty()
}

/// The turns of `messages` after the first `opening` ones.
fn turns(messages: &[AgentModelMessage], opening: usize) -> Vec<Turn> {
    let answers: Vec<usize> = messages
        .iter()
        .enumerate()
        .skip(opening)
        .filter(|(_, message)| message.role == ModelRole::Assistant)
        .map(|(index, _)| index)
        .collect();
    answers
        .iter()
        .enumerate()
        .map(|(n, &answer)| {
            let end = answers.get(n + 1).copied().unwrap_or(messages.len());
            let replies = &messages[answer + 1..end];
            let calls = messages[answer].tool_calls().count();
            let kind = if calls == 0 && replies.iter().any(is_reminder) {
                TurnKind::Drift
            } else if calls > 0
                && replies
                    .iter()
                    .filter(|message| message.role == ModelRole::Tool)
                    .all(is_slip_result)
                && replies
                    .iter()
                    .any(|message| message.role == ModelRole::Tool)
            {
                TurnKind::Slip
            } else {
                TurnKind::Good
            };
            Turn { answer, end, kind }
        })
        .collect()
}

/// The messages of the turns the agent has moved past (see the module header), ascending:
/// never the first `opening` messages nor the latest turn (from the agent's latest answer on).
pub fn settled_turns(messages: &[AgentModelMessage], opening: usize) -> Vec<usize> {
    let turns = turns(messages, opening);
    let Some((_, earlier)) = turns.split_last() else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for (n, turn) in earlier.iter().enumerate() {
        let later = &turns[n + 1..];
        let settled = match turn.kind {
            TurnKind::Drift => later
                .iter()
                .any(|later| matches!(later.kind, TurnKind::Drift | TurnKind::Good)),
            TurnKind::Slip => later.iter().any(|later| later.kind == TurnKind::Good),
            TurnKind::Good => false,
        };
        if !settled {
            continue;
        }
        removed.push(turn.answer);
        for (index, message) in messages
            .iter()
            .enumerate()
            .take(turn.end)
            .skip(turn.answer + 1)
        {
            let answering = match turn.kind {
                TurnKind::Drift => is_reminder(message),
                _ => message.role == ModelRole::Tool,
            };
            if answering {
                removed.push(index);
            }
        }
    }
    removed
}

/// Where the plain text of the answer at `index` was saved, when it is a drift turn's answer
/// whose reminder names the file.
pub fn saved_text_path(messages: &[AgentModelMessage], index: usize) -> Option<String> {
    let answer = messages.get(index)?;
    if answer.role != ModelRole::Assistant || answer.tool_calls().next().is_some() {
        return None;
    }
    let reminder = messages[index + 1..]
        .iter()
        .take_while(|message| message.role != ModelRole::Assistant)
        .find(|message| is_reminder(message))?
        .text_content();
    let start = reminder.find(DRIFT_SAVED_TO)? + DRIFT_SAVED_TO.len();
    let length = reminder[start..].find('`')?;
    Some(reminder[start..start + length].to_owned())
}

/// `messages` without the ones at `indices` (ascending; indices past the end are ignored).
pub fn remove_messages(messages: &mut Vec<AgentModelMessage>, indices: &[usize]) {
    let mut index = 0;
    messages.retain(|_| {
        let keep = indices.binary_search(&index).is_err();
        index += 1;
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{AgentToolCall, AgentToolResult};
    use serde_json::json;

    fn answer(text: &str) -> AgentModelMessage {
        AgentModelMessage::text(ModelRole::Assistant, text)
    }

    fn reminder(saved: bool) -> AgentModelMessage {
        let mut text = format!("{DRIFT_REMINDER_PREFIX}1] Plain text is not delivered.");
        if saved {
            text.push_str(
                " Your text was saved to `output/direct_output.md`; you can refer to it.",
            );
        }
        AgentModelMessage::text(ModelRole::User, text)
    }

    fn calling(id: &str) -> AgentModelMessage {
        AgentModelMessage::assistant(vec![ModelContentPart::ToolCall {
            call: AgentToolCall::new(id, "workspace.list_files", json!({})),
        }])
    }

    fn result(id: &str, code: Option<&str>) -> AgentModelMessage {
        AgentModelMessage::tool_result(AgentToolResult {
            call_id: id.into(),
            name: "workspace.list_files".into(),
            content: "x".into(),
            structured: serde_json::Value::Null,
            is_error: code.is_some(),
            error_code: code.map(str::to_owned),
            error_reason: None,
            resource_refs: Vec::new(),
        })
    }

    fn opening() -> Vec<AgentModelMessage> {
        vec![
            AgentModelMessage::text(ModelRole::System, "You write."),
            AgentModelMessage::text(ModelRole::User, "Write a story."),
        ]
    }

    #[test]
    fn drift_turns_leave_once_superseded_or_recovered_never_the_latest() {
        let mut messages = opening();
        messages.extend([answer("a"), reminder(true), answer("b"), reminder(true)]);
        // Still drifting: the first turn is superseded, the latest stays.
        assert_eq!(settled_turns(&messages, 2), vec![2, 3]);
        messages.extend([calling("c"), result("c", None)]);
        assert_eq!(settled_turns(&messages, 2), vec![2, 3, 4, 5]);
    }

    #[test]
    fn slip_turns_leave_only_once_a_call_ran() {
        let slip = Some("model.invalid_tool_call");
        let mut messages = opening();
        messages.extend([
            calling("a"),
            result("a", slip),
            calling("b"),
            result("b", slip),
        ]);
        assert!(settled_turns(&messages, 2).is_empty());
        // A tool's own refusal is no slip: the agent is back on track.
        messages.extend([calling("c"), result("c", Some("workspace.file_not_found"))]);
        assert_eq!(settled_turns(&messages, 2), vec![2, 3, 4, 5]);
    }

    #[test]
    fn a_guidance_message_in_a_settled_turn_stays() {
        let mut messages = opening();
        let guidance = AgentModelMessage::text(ModelRole::User, "Make it shorter.");
        messages.extend([answer("a"), reminder(false), guidance, calling("c")]);
        assert_eq!(settled_turns(&messages, 2), vec![2, 3]);
        remove_messages(&mut messages, &[2, 3]);
        assert_eq!(messages[2].text_content(), "Make it shorter.");
    }

    #[test]
    fn the_saved_path_is_read_from_the_reminder() {
        let mut messages = opening();
        messages.extend([answer("a"), reminder(true), answer("b"), reminder(false)]);
        assert_eq!(
            saved_text_path(&messages, 2).as_deref(),
            Some("output/direct_output.md")
        );
        assert_eq!(saved_text_path(&messages, 4), None);
        assert_eq!(saved_text_path(&messages, 1), None);
    }
}
