//! What an interrupted agent already did, for its tool loop to replay when its run is resumed
//! (`resume_run`, docs/resume.md): its stored model responses by round, its stored tool results
//! by call, the delegated results injected after each round, and the commit ids it offered.
//!
//! The loop takes a stored response instead of calling the model and a stored result instead
//! of running the tool, without journaling or side effects, so one code path rebuilds the
//! message history, read-state, budgets and round counter. The first step with nothing stored
//! turns the replay off for good: from there on the loop runs live.

use std::collections::{BTreeMap, HashMap, HashSet};
use tt_domain::ids::{CommitId, TaskId};
use tt_domain::model::AgentModelResponse;
use tt_domain::tool::AgentToolResult;

/// One journaled context-window step (`context_trimmed`, `context_compacted`), applied again
/// on resume by `engine::context_fit::apply_step`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ContextStep {
    Trim(tt_domain::context_window::TrimPlan),
    Summary {
        first: usize,
        count: usize,
        summary: String,
        /// The agent's request, when it was among the replaced messages: it stays, ahead of
        /// the summary.
        kept: Option<usize>,
    },
}

/// The stored steps of one invocation, consumed in order by its tool loop.
#[derive(Debug, Default, Clone)]
pub(crate) struct Replay {
    responses: BTreeMap<u32, AgentModelResponse>,
    /// Rounds whose stored response was journaled (`model_response_stored`).
    /// With the run's confirmed commit count at that moment: what the turn's reminders said.
    journaled_rounds: HashMap<u32, usize>,
    /// Calls whose stored result was journaled (`tool_result_stored`), by file key.
    journaled_results: HashSet<String>,
    /// Stored tool results by call file key (`call_<hex16>`).
    results: HashMap<String, AgentToolResult>,
    /// Task ids injected after a round (`agent_results_injected`), by that round.
    /// With the run's confirmed commit count then, which the injected text mentions.
    injections: BTreeMap<u32, (Vec<TaskId>, usize)>,
    /// User guidance the agent read before a round (`user_guidance_applied`), by that round.
    guidance: BTreeMap<u32, Vec<String>>,
    /// The context-window steps journaled before a round (`context_trimmed`,
    /// `context_compacted`), in order, by that round.
    context_steps: BTreeMap<u32, Vec<ContextStep>>,
    /// Calls journaled `tool_call_started` (by file key): their effect may be present.
    started: HashSet<String>,
    /// Commit ids offered to the host, by the call (file key) that offered them.
    commit_ids: HashMap<String, CommitId>,
    /// The sha256 of each workspace file's last journaled write (any agent of the run).
    written: HashMap<String, String>,
    /// Tasks registered by `agent.delegate` and `agent.handoff` calls, by the call's file key.
    registered_tasks: HashMap<String, TaskId>,
    /// Answers journaled for calls that waited for approval (decision, decider), by file key:
    /// running such a call again uses its answer instead of asking again.
    approvals: HashMap<String, (tt_domain::approval::ApprovalDecision, String)>,
    /// The return gate's journaled gradings (`task_return_graded`), by the graded call's
    /// file key: a `task.return` run again uses its grading instead of asking the grader again.
    gradings: HashMap<String, tt_domain::event_payload::TaskReturnGraded>,
    /// The agent record the call in flight had written when the process died, before it
    /// registered that agent's task.
    unregistered_agent: Option<UnregisteredAgent>,
    /// The fallback binding the agent's last journaled switch left in force
    /// (`agent_model_fallback_switched.fallbackIndex`), if it switched.
    fallback: Option<u32>,
    live: bool,
}

/// An agent record an `agent.delegate` or `agent.handoff` call wrote before the process died,
/// with no task naming it yet: running the call again takes it up instead of writing a second
/// agent that would leave this one `interrupted` for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnregisteredAgent {
    /// The call that wrote it (the last call the agent started).
    pub call_id: String,
    pub invocation_id: tt_domain::ids::InvocationId,
    /// The task its `agent_invocation_created` named, when that event reached the journal:
    /// the task is registered under that id.
    pub journaled_task: Option<TaskId>,
}

impl Replay {
    /// Stores the response of `round`.
    pub(crate) fn record_fallback(&mut self, index: u32) {
        self.fallback = Some(index);
    }

    /// The fallback binding in force when the journal ends, if the agent switched.
    pub(crate) fn fallback_in_force(&self) -> Option<u32> {
        self.fallback
    }

    pub(crate) fn record_response(&mut self, round: u32, response: AgentModelResponse) {
        self.responses.insert(round, response);
    }

    /// Stores the result of the call with `file_key`.
    pub(crate) fn record_result(&mut self, file_key: String, result: AgentToolResult) {
        self.results.insert(file_key, result);
    }

    /// Notes that `round`'s response was journaled when the run had `commits` confirmed
    /// commits.
    pub(crate) fn record_journaled_round(&mut self, round: u32, commits: usize) {
        self.journaled_rounds.insert(round, commits);
    }

    /// Notes that the result of the call with `file_key` was journaled.
    pub(crate) fn record_journaled_result(&mut self, file_key: String) {
        self.journaled_results.insert(file_key);
    }

    /// Whether the journal has the events of `round`'s stored response (a process can die
    /// between writing the response and journaling it).
    pub(crate) fn round_journaled(&self, round: u32) -> bool {
        self.journaled_rounds.contains_key(&round)
    }

    /// Whether the journal has the completion of a call whose result is stored.
    pub(crate) fn result_journaled(&self, file_key: &str) -> bool {
        self.journaled_results.contains(file_key)
    }

    /// Notes the tasks injected after `round`, when the run had `commits` confirmed commits.
    pub(crate) fn record_injection(&mut self, round: u32, tasks: Vec<TaskId>, commits: usize) {
        let entry = self.injections.entry(round).or_default();
        entry.0.extend(tasks);
        entry.1 = commits;
    }

    /// The run's confirmed commit count when `round`'s stored response was journaled: a
    /// replayed reminder after that response is rendered as it was then.
    pub(crate) fn commits_at_round(&self, round: u32) -> Option<usize> {
        self.journaled_rounds.get(&round).copied()
    }

    /// Notes the guidance texts the agent read before `round`.
    pub(crate) fn record_guidance(&mut self, round: u32, texts: Vec<String>) {
        self.guidance.entry(round).or_default().extend(texts);
    }

    /// The guidance notes the agent read before `round`, once.
    pub(crate) fn take_guidance(&mut self, round: u32) -> Option<Vec<String>> {
        self.guidance.remove(&round)
    }

    /// Notes a context-window step journaled before `round`.
    pub(crate) fn record_context_step(&mut self, round: u32, step: ContextStep) {
        self.context_steps.entry(round).or_default().push(step);
    }

    /// The context-window steps of `round`, once, in the order they were taken.
    pub(crate) fn take_context_steps(&mut self, round: u32) -> Vec<ContextStep> {
        self.context_steps.remove(&round).unwrap_or_default()
    }

    /// Notes that the call with `file_key` started.
    pub(crate) fn record_started(&mut self, file_key: String) {
        self.started.insert(file_key);
    }

    /// Notes the commit id the call with `file_key` offered.
    pub(crate) fn record_commit_id(&mut self, file_key: String, commit_id: CommitId) {
        self.commit_ids.insert(file_key, commit_id);
    }

    /// Notes the sha256 of the last journaled write of `path`.
    pub(crate) fn record_written(&mut self, path: String, sha256: String) {
        self.written.insert(path, sha256);
    }

    /// The sha256 the journal last recorded for `path`.
    pub(crate) fn last_written(&self, path: &tt_domain::workspace::WorkspacePath) -> Option<&str> {
        self.written.get(path.as_str()).map(String::as_str)
    }

    /// Notes the task the `agent.delegate` or `agent.handoff` call with `file_key` registered
    /// before the interruption.
    pub(crate) fn record_registered_task(&mut self, file_key: String, task: TaskId) {
        self.registered_tasks.insert(file_key, task);
    }

    /// Notes the journaled answer to the approval of the call with `file_key`.
    pub(crate) fn record_approval(
        &mut self,
        file_key: String,
        decision: tt_domain::approval::ApprovalDecision,
        decided_by: String,
    ) {
        self.approvals.insert(file_key, (decision, decided_by));
    }

    /// The journaled answer to the approval of the call with `file_key`, once.
    pub(crate) fn take_approval(
        &mut self,
        file_key: &str,
    ) -> Option<(tt_domain::approval::ApprovalDecision, String)> {
        self.approvals.remove(file_key)
    }

    /// Notes a journaled grading of the `task.return` call with `file_key`.
    pub(crate) fn record_grading(
        &mut self,
        file_key: String,
        graded: tt_domain::event_payload::TaskReturnGraded,
    ) {
        self.gradings.insert(file_key, graded);
    }

    /// The journaled grading of the call with `file_key`, if it was graded.
    pub(crate) fn grading(
        &self,
        file_key: &str,
    ) -> Option<&tt_domain::event_payload::TaskReturnGraded> {
        self.gradings.get(file_key)
    }

    /// Every journaled grading of the agent, in no order.
    pub(crate) fn gradings(
        &self,
    ) -> impl Iterator<Item = &tt_domain::event_payload::TaskReturnGraded> {
        self.gradings.values()
    }

    /// Whether the loop has passed the last stored step.
    #[cfg(test)]
    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    /// The stored response of `round`, or `None`, which ends the replay: this round's model
    /// call is the first step that did not complete.
    pub(crate) fn take_response(&mut self, round: u32) -> Option<AgentModelResponse> {
        if self.live {
            return None;
        }
        let response = self.responses.remove(&round);
        if response.is_none() {
            self.live = true;
        }
        response
    }

    /// The stored result of a call, or `None`, which ends the replay. The calls that end an
    /// agent's work (`workspace.finish`, `task.return`, `agent.handoff`) always run again: what
    /// follows them (finishing the run, completing the task) is not in the result, and each is
    /// safe to repeat.
    pub(crate) fn take_result(
        &mut self,
        file_key: &str,
        ends_loop: bool,
    ) -> Option<AgentToolResult> {
        if self.live {
            return None;
        }
        let result = if ends_loop {
            None
        } else {
            self.results.remove(file_key)
        };
        if result.is_none() {
            self.live = true;
        }
        result
    }

    /// The delegated results journaled as injected after `round` (`agent_results_injected`),
    /// once: they are part of the agent's history whether or not its next turn was stored.
    pub(crate) fn take_injection(&mut self, round: u32) -> Option<(Vec<TaskId>, usize)> {
        self.injections.remove(&round)
    }

    /// Whether the turn after `round` is still replayed: then nothing new may be injected
    /// after `round` (its stored turn did not see anything more).
    pub(crate) fn replays_next_turn(&self, round: u32) -> bool {
        !self.live && self.responses.contains_key(&(round + 1))
    }

    /// Whether a call has a stored result left to replay.
    pub(crate) fn has_result(&self, file_key: &str) -> bool {
        self.results.contains_key(file_key)
    }

    /// Whether a call without a stored result had started (its effect may be in the workspace).
    pub(crate) fn was_started(&self, file_key: &str) -> bool {
        self.started.contains(file_key)
    }

    /// The commit id a call already offered to the host, which a repeated offer reuses.
    pub(crate) fn commit_id(&self, file_key: &str) -> Option<&CommitId> {
        self.commit_ids.get(file_key)
    }

    /// Notes the agent record the call in flight wrote before its task.
    pub(crate) fn record_unregistered_agent(&mut self, agent: UnregisteredAgent) {
        self.unregistered_agent = Some(agent);
    }

    /// The agent record call `call_id` wrote before the process died, if it is that call.
    pub(crate) fn unregistered_agent(&self, call_id: &str) -> Option<&UnregisteredAgent> {
        self.unregistered_agent
            .as_ref()
            .filter(|agent| agent.call_id == call_id)
    }

    /// The task an interrupted `agent.delegate` or `agent.handoff` call already registered:
    /// running the call again answers with it instead of registering a second one.
    pub(crate) fn registered_task(&self, file_key: &str) -> Option<&TaskId> {
        self.registered_tasks.get(file_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::model::{AgentModelMessage, ModelRole};
    use tt_domain::tool::ToolName;

    fn response() -> AgentModelResponse {
        AgentModelResponse {
            message: AgentModelMessage::text(ModelRole::Assistant, "hi"),
            response_id: None,
            model: None,
            finish_reason: None,
            usage: None,
            raw_response: serde_json::Value::Null,
        }
    }

    fn result() -> AgentToolResult {
        AgentToolResult {
            call_id: "c1".into(),
            name: "workspace.read_file".into(),
            content: "x".into(),
            structured: serde_json::json!({}),
            is_error: false,
            error_code: None,
            error_reason: None,
            resource_refs: Vec::new(),
        }
    }

    #[test]
    fn the_first_missing_step_turns_the_replay_live_for_good() {
        let mut replay = Replay::default();
        replay.record_response(1, response());
        replay.record_response(2, response());
        replay.record_result("k1".into(), result());
        assert!(replay.take_response(1).is_some());
        assert!(
            replay
                .take_result("k1", ToolName::WorkspaceReadFile.ends_loop())
                .is_some()
        );
        assert!(replay.replays_next_turn(1));
        assert!(replay.take_response(2).is_some());
        assert!(replay.take_result("k2", false).is_none());
        assert!(replay.is_live());
        assert!(replay.take_response(3).is_none());
        assert!(!replay.replays_next_turn(2));
    }

    #[test]
    fn calls_that_end_the_work_always_run_again() {
        let mut replay = Replay::default();
        replay.record_result("k".into(), result());
        assert!(
            replay
                .take_result("k", ToolName::WorkspaceFinish.ends_loop())
                .is_none()
        );
        assert!(replay.is_live());
    }
}
