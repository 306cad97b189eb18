//! `FanoutModel`: the zero-latency scripted model of the fan-out benchmark. It decides every turn
//! from the request alone (agent profile, round, and a child's `[child-NNNN]` tag in its brief),
//! never from a shared queue, so children interleave freely.

use async_trait::async_trait;
use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::model::{
    AgentModelMessage, AgentModelRequest, AgentModelResponse, ModelContentPart, ModelRole,
};
use tt_domain::tool::AgentToolCall;
use tt_ports::{CancellationToken, ModelError, ModelProvider};

/// Profile id of the delegating agent.
pub const ROOT_PROFILE: &str = "fanout-root";
/// Profile id of every delegated agent.
pub const CHILD_PROFILE: &str = "fanout-child";
/// Model turns of one child (K): `K - 1` note writes, then `task_return`.
pub const CHILD_TURNS: u32 = 5;
/// Model turns of the root: delegate, await, finish.
pub const ROOT_TURNS: u32 = 3;
/// Exact size of every note a child writes.
pub const NOTE_BYTES: usize = 1024;
/// `timeoutMs` of the root's `agent_await`.
pub const AWAIT_TIMEOUT_MS: u64 = 300_000;
/// Findings per child result.
pub const FINDINGS_PER_CHILD: usize = 3;

/// The model name put on every response.
const MODEL_NAME: &str = "fanout-scripted";

/// One child's identity in the workload: its 1-based index, shown as `child-0007`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChildTag(pub u32);

impl ChildTag {
    /// `child-0007`.
    pub fn name(self) -> String {
        format!("child-{:04}", self.0)
    }

    /// The objective the root delegates to this child.
    pub fn objective(self) -> String {
        format!(
            "[{}] Investigate topic #{} and write short notes.",
            self.name(),
            self.0
        )
    }

    /// Where this child writes its note of `round` (1-based).
    pub fn note_path(self, round: u32) -> String {
        format!("scratch/{}/{round}.md", self.name())
    }

    /// Finds the first `[child-NNNN]` tag in `text` (at least four digits, no sign).
    pub fn find_in(text: &str) -> Option<ChildTag> {
        let mut rest = text;
        while let Some(at) = rest.find("[child-") {
            let after = rest.get(at + "[child-".len()..).unwrap_or_default();
            let digits_len = after.bytes().take_while(u8::is_ascii_digit).count();
            let digits = after.get(..digits_len).unwrap_or_default();
            let closed = after
                .get(digits_len..)
                .is_some_and(|tail| tail.starts_with(']'));
            if digits_len >= 4
                && closed
                && let Ok(index) = digits.parse::<u32>()
            {
                return Some(ChildTag(index));
            }
            rest = after;
        }
        None
    }
}

/// The exact text of a child's note for `round`: a heading and filler, exactly [`NOTE_BYTES`]
/// ASCII bytes, different for every child and round.
pub fn note_content(tag: ChildTag, round: u32) -> String {
    let mut text = format!(
        "# Notes on topic #{} ({}), part {round}\n\n",
        tag.0,
        tag.name()
    );
    let filler = "Observation: the topic holds up under a second look; more detail follows. ";
    while text.len() < NOTE_BYTES {
        text.push_str(filler);
    }
    text.truncate(NOTE_BYTES - 1);
    text.push('\n');
    text
}

/// What the model answers on one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Root round 1: one response with `children` parallel `agent_delegate` calls.
    DelegateAll { children: u32 },
    /// Root round 2: `agent_await` for all tasks.
    AwaitAll,
    /// Root round 3: `workspace_finish`.
    Finish,
    /// Child rounds 1..K-1: write one note.
    WriteNote { tag: ChildTag, round: u32 },
    /// Child round K: `task_return`.
    Return { tag: ChildTag },
}

/// Why the model has no answer for a request (the benchmark then fails loudly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnError {
    UnknownProfile(String),
    RoundOutOfScript { profile: String, round: u32 },
    MissingChildTag,
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnError::UnknownProfile(profile) => {
                write!(f, "the fan-out model has no script for agent `{profile}`")
            }
            TurnError::RoundOutOfScript { profile, round } => write!(
                f,
                "the fan-out model has no turn {round} for agent `{profile}`"
            ),
            TurnError::MissingChildTag => {
                f.write_str("no `[child-NNNN]` tag in the delegated agent's brief")
            }
        }
    }
}

/// Picks the turn for one request.
pub fn decide(request: &AgentModelRequest, children: u32) -> Result<Turn, TurnError> {
    let profile = request.agent_profile_id.as_str();
    let round = request.round;
    match profile {
        ROOT_PROFILE => match round {
            1 => Ok(Turn::DelegateAll { children }),
            2 => Ok(Turn::AwaitAll),
            3 => Ok(Turn::Finish),
            _ => Err(TurnError::RoundOutOfScript {
                profile: profile.to_owned(),
                round,
            }),
        },
        CHILD_PROFILE => {
            let tag = brief_tag(&request.messages).ok_or(TurnError::MissingChildTag)?;
            match round {
                0 => Err(TurnError::RoundOutOfScript {
                    profile: profile.to_owned(),
                    round,
                }),
                r if r < CHILD_TURNS => Ok(Turn::WriteNote { tag, round }),
                r if r == CHILD_TURNS => Ok(Turn::Return { tag }),
                _ => Err(TurnError::RoundOutOfScript {
                    profile: profile.to_owned(),
                    round,
                }),
            }
        }
        other => Err(TurnError::UnknownProfile(other.to_owned())),
    }
}

/// The child tag in the brief: the first tag found in a user message.
fn brief_tag(messages: &[AgentModelMessage]) -> Option<ChildTag> {
    messages
        .iter()
        .filter(|message| message.role == ModelRole::User)
        .find_map(|message| ChildTag::find_in(&message.text_content()))
}

/// The tool calls of a turn, as `(call id, model-facing tool name, arguments)`.
pub fn tool_calls(turn: &Turn) -> Vec<(String, &'static str, Value)> {
    match turn {
        Turn::DelegateAll { children } => (1..=*children)
            .map(|index| {
                let tag = ChildTag(index);
                (
                    format!("call_d{index:04}"),
                    "agent_delegate",
                    json!({ "agentId": CHILD_PROFILE, "task": { "objective": tag.objective() } }),
                )
            })
            .collect(),
        Turn::AwaitAll => vec![(
            "call_await".to_owned(),
            "agent_await",
            json!({ "mode": "allCompleted", "timeoutMs": AWAIT_TIMEOUT_MS }),
        )],
        Turn::Finish => vec![("call_finish".to_owned(), "workspace_finish", json!({}))],
        Turn::WriteNote { tag, round } => vec![(
            format!("call_c{:04}_w{round}", tag.0),
            "workspace_write_file",
            json!({ "path": tag.note_path(*round), "content": note_content(*tag, *round) }),
        )],
        Turn::Return { tag } => vec![(
            format!("call_c{:04}_ret", tag.0),
            "task_return",
            json!({
                "summary": format!("Topic #{} is covered; notes are under scratch/{}/.", tag.0, tag.name()),
                "findings": (1..=FINDINGS_PER_CHILD)
                    .map(|n| json!({ "point": format!("finding {n} on topic #{}", tag.0), "confidence": "medium" }))
                    .collect::<Vec<_>>(),
            }),
        )],
    }
}

/// An assistant message made only of the turn's tool calls.
pub fn response(turn: &Turn) -> AgentModelResponse {
    let parts = tool_calls(turn)
        .into_iter()
        .map(|(id, name, arguments)| ModelContentPart::ToolCall {
            call: AgentToolCall::new(id, name.to_owned(), arguments),
        })
        .collect();
    AgentModelResponse {
        message: AgentModelMessage::assistant(parts),
        response_id: None,
        model: Some(MODEL_NAME.to_owned()),
        finish_reason: Some("tool_calls".to_owned()),
        usage: None,
        raw_response: Value::Null,
    }
}

/// The benchmark's model provider: answers at once, from the request only.
#[derive(Debug, Clone, Copy)]
pub struct FanoutModel {
    children: u32,
}

impl FanoutModel {
    pub fn new(children: u32) -> Self {
        Self { children }
    }
}

#[async_trait]
impl ModelProvider for FanoutModel {
    fn name(&self) -> &str {
        "fanout"
    }

    async fn complete(
        &self,
        request: &AgentModelRequest,
        cancel: CancellationToken,
    ) -> Result<AgentModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        decide(request, self.children)
            .map(|turn| response(&turn))
            .map_err(|err| ModelError::Unavailable {
                code: error_codes::MODEL_SCRIPT_EXHAUSTED,
                message: err.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::ids::{InvocationId, ProfileId, RunId};
    use tt_domain::model::ProviderSession;

    fn request(profile: &str, round: u32, brief: Option<&str>) -> AgentModelRequest {
        let mut messages = vec![AgentModelMessage::text(
            ModelRole::System,
            "You are doing one focused task. [child-9999] in a system prompt is ignored.",
        )];
        if let Some(brief) = brief {
            messages.push(AgentModelMessage::text(ModelRole::User, brief));
        }
        AgentModelRequest::new(
            ProviderSession::new(&RunId::from_raw("run_x"), &InvocationId::root()),
            ProfileId::parse(profile).unwrap(),
            round,
            messages,
        )
    }

    #[test]
    fn child_tags_are_found_in_briefs() {
        let brief = "## Objective\n\n[child-0007] Investigate topic #7 and write short notes.";
        assert_eq!(ChildTag::find_in(brief), Some(ChildTag(7)));
        assert_eq!(
            ChildTag::find_in("[child-12345] big"),
            Some(ChildTag(12345))
        );
        assert_eq!(
            ChildTag::find_in("[child-1] short, then [child-0002] ok"),
            Some(ChildTag(2))
        );
        for none in [
            "",
            "child-0007",
            "[child-0007",
            "[child-00x7]",
            "[child--0007]",
        ] {
            assert_eq!(ChildTag::find_in(none), None, "{none}");
        }
        assert_eq!(
            ChildTag::find_in(&ChildTag(42).objective()),
            Some(ChildTag(42))
        );
    }

    #[test]
    fn child_names_paths_and_objectives() {
        let tag = ChildTag(7);
        assert_eq!(tag.name(), "child-0007");
        assert_eq!(tag.note_path(3), "scratch/child-0007/3.md");
        assert_eq!(
            tag.objective(),
            "[child-0007] Investigate topic #7 and write short notes."
        );
    }

    #[test]
    fn notes_are_exactly_1024_bytes_and_distinct() {
        let a = note_content(ChildTag(1), 1);
        let b = note_content(ChildTag(1), 2);
        let c = note_content(ChildTag(256), 4);
        for note in [&a, &b, &c] {
            assert_eq!(note.len(), NOTE_BYTES);
            assert!(note.is_ascii());
            assert!(note.ends_with('\n'));
        }
        assert_ne!(a, b);
        assert_ne!(b, c);
    }

    #[test]
    fn the_root_delegates_awaits_then_finishes() {
        assert_eq!(
            decide(&request(ROOT_PROFILE, 1, Some("go")), 16),
            Ok(Turn::DelegateAll { children: 16 })
        );
        assert_eq!(
            decide(&request(ROOT_PROFILE, 2, None), 16),
            Ok(Turn::AwaitAll)
        );
        assert_eq!(
            decide(&request(ROOT_PROFILE, 3, None), 16),
            Ok(Turn::Finish)
        );
        assert!(matches!(
            decide(&request(ROOT_PROFILE, 4, None), 16),
            Err(TurnError::RoundOutOfScript { round: 4, .. })
        ));
    }

    #[test]
    fn a_child_writes_four_notes_then_returns() {
        let brief = Some(
            "# Task\n\n## Objective\n\n[child-0042] Investigate topic #42 and write short notes.",
        );
        for round in 1..CHILD_TURNS {
            assert_eq!(
                decide(&request(CHILD_PROFILE, round, brief), 1),
                Ok(Turn::WriteNote {
                    tag: ChildTag(42),
                    round
                })
            );
        }
        assert_eq!(
            decide(&request(CHILD_PROFILE, CHILD_TURNS, brief), 1),
            Ok(Turn::Return { tag: ChildTag(42) })
        );
        assert!(decide(&request(CHILD_PROFILE, CHILD_TURNS + 1, brief), 1).is_err());
        assert!(decide(&request(CHILD_PROFILE, 0, brief), 1).is_err());
    }

    #[test]
    fn a_child_without_a_tag_or_an_unknown_agent_is_an_error() {
        assert_eq!(
            decide(&request(CHILD_PROFILE, 1, Some("no tag here")), 1),
            Err(TurnError::MissingChildTag)
        );
        assert_eq!(
            decide(&request("someone-else", 1, None), 1),
            Err(TurnError::UnknownProfile("someone-else".to_owned()))
        );
    }

    #[test]
    fn turns_become_tool_calls() {
        let delegate = tool_calls(&Turn::DelegateAll { children: 3 });
        assert_eq!(delegate.len(), 3);
        let (id, name, args) = &delegate[2];
        assert_eq!(id, "call_d0003");
        assert_eq!(*name, "agent_delegate");
        assert_eq!(
            args,
            &json!({ "agentId": "fanout-child", "task": { "objective": "[child-0003] Investigate topic #3 and write short notes." } })
        );

        let [(_, name, args)] = tool_calls(&Turn::AwaitAll).try_into().unwrap();
        assert_eq!(name, "agent_await");
        assert_eq!(args, json!({ "mode": "allCompleted", "timeoutMs": 300000 }));

        let [(_, name, args)] = tool_calls(&Turn::Finish).try_into().unwrap();
        assert_eq!((name, args), ("workspace_finish", json!({})));

        let [(id, name, args)] = tool_calls(&Turn::WriteNote {
            tag: ChildTag(5),
            round: 2,
        })
        .try_into()
        .unwrap();
        assert_eq!(
            (id.as_str(), name),
            ("call_c0005_w2", "workspace_write_file")
        );
        assert_eq!(args["path"], "scratch/child-0005/2.md");
        assert_eq!(args["content"].as_str().unwrap().len(), NOTE_BYTES);

        let [(_, name, args)] = tool_calls(&Turn::Return { tag: ChildTag(5) })
            .try_into()
            .unwrap();
        assert_eq!(name, "task_return");
        assert!(args["summary"].as_str().unwrap().contains("#5"));
        assert_eq!(
            args["findings"].as_array().unwrap().len(),
            FINDINGS_PER_CHILD
        );
    }

    #[test]
    fn responses_carry_only_tool_calls() {
        let response = response(&Turn::DelegateAll { children: 2 });
        assert_eq!(response.message.role, ModelRole::Assistant);
        assert_eq!(response.tool_calls().len(), 2);
        assert_eq!(response.text(), "");
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[tokio::test]
    async fn the_provider_answers_from_the_request_and_fails_loudly_off_script() {
        let model = FanoutModel::new(2);
        let answer = model
            .complete(&request(ROOT_PROFILE, 1, None), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(answer.tool_calls().len(), 2);
        let err = model
            .complete(&request(ROOT_PROFILE, 9, None), CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "model.script_exhausted");
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            model
                .complete(&request(ROOT_PROFILE, 1, None), cancel)
                .await
                .unwrap_err(),
            ModelError::Cancelled
        );
    }
}
