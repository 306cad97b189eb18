//! One agent's loop state (`InvocationRuntime`): its record, profile, frozen tool snapshot,
//! model binding, skills, read-state, call counts and the run's task scheduler. Its own module so that run-wide state
//! (`context`) does not know how an agent is set up or talks to its model.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tt_domain::invocation::AgentInvocation;
use tt_domain::profile::ResolvedProfile;
use tt_domain::tool::InvocationToolSnapshot;
use tt_domain::tool_model::ToolId;
use tt_domain::workspace::WorkspaceAccessPolicy;

use crate::engine::context::RunScheduler;
use crate::tools::workspace::ReadState;

/// Per-invocation tool-loop session: read-state and call counts (budgets are per invocation).
#[derive(Debug, Default)]
pub(crate) struct ToolSession {
    pub read_state: ReadState,
    /// Skill text this invocation has read (per-invocation budget).
    pub skill_budget: crate::skills::SkillReadBudget,
    pub calls_total: u32,
    pub calls_per_tool: BTreeMap<ToolId, u32>,
    /// Model slips in a row (see `dispatch`); any other call resets it.
    pub consecutive_slips: u32,
}

/// What the gradings of an agent's return gate have used so far (`return_gate.rs`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GateTally {
    pub gradings: u32,
    pub revisions: u32,
    pub tokens: u64,
}

/// One invocation as its loop sees it.
#[derive(Debug)]
pub(crate) struct InvocationRuntime {
    pub invocation: AgentInvocation,
    pub profile: ResolvedProfile,
    pub snapshot: Arc<InvocationToolSnapshot>,
    pub policy: WorkspaceAccessPolicy,
    pub session: ToolSession,
    /// Fires when this invocation must stop (run cancel, or its task was cancelled).
    pub cancel: CancellationToken,
    /// The provider and model this invocation talks to.
    pub model: crate::engine::binding::ModelBinding,
    /// The skills this invocation may use, resolved at its start.
    pub skills: Arc<crate::skills::ResolvedSkills>,
    /// Delegated results this agent has already seen (by `agent.await` or injection); kept in
    /// memory on purpose, so a result reaches it exactly once per loop.
    pub delivered: HashSet<tt_domain::ids::TaskId>,
    /// What this agent did before its run was interrupted, replayed by its loop on resume.
    pub replay: Option<crate::replay::Replay>,
    /// What it has learned about its model's context window.
    pub window: crate::engine::window_state::WindowState,
    /// The run's scheduler of delegated tasks (admission, budgets, idle limits), shared by
    /// every agent of the run.
    pub scheduler: Arc<RunScheduler>,
    /// Writes held back to go out with this agent's next commit: the end of a delegation
    /// (its result and `tool_call_completed`), so that each delegation of a reply is one
    /// commit (`crate::engine::held_writes`). Empty again before anything else of the agent's
    /// is written or read back, and before its next model call.
    pub held_writes: Vec<tt_ports::RunWrite>,
    /// Its delegations' units, committed without waiting for each (`EventSink::commit_chained`):
    /// one is stored only if the earlier ones were.
    pub chain: tt_ports::CommitChain,
    /// The last of those units while it is not known to be stored: settled
    /// (`held_writes::settle`) before anything else of the agent's is written.
    pub in_flight: Option<crate::events::Durable>,
    /// How many tasks it delegated: counted by the store at its first delegation, then here.
    pub delegations: Option<u64>,
    /// The target profiles its current reply's delegations resolved.
    pub targets: crate::engine::reply_targets::ReplyTargets,
    /// An agent started in fork mode: the tool specs its requests list, its delegating
    /// agent's as that agent sent them (fork mode, `fork_mode.rs`); its own snapshot still
    /// decides what it may call. `None`: its snapshot's.
    pub offered_tools: Option<Arc<[tt_domain::tool::AgentToolSpec]>>,
    /// The messages of its last request, kept only when that request's reply asked for a task
    /// in fork mode (`push_reply` of `fork_mode.rs`).
    pub sent_messages: Option<Arc<Vec<tt_domain::model::AgentModelMessage>>>,
    /// The tool specs that request listed, kept with [`sent_messages`](Self::sent_messages).
    pub sent_tools: Option<Arc<[tt_domain::tool::AgentToolSpec]>>,
    /// What its return gate's gradings have used (`return_gate.rs`), with those journaled
    /// before an interruption once `gate_tally_loaded`.
    pub gate_tally: GateTally,
    pub gate_tally_loaded: bool,
}

impl InvocationRuntime {
    /// An agent of `profile` starting with what `prepared` made for it, stopped by `cancel`,
    /// going on from `replay` when its run is resumed, on the run `scheduler` serves.
    pub(crate) fn start(
        invocation: AgentInvocation,
        profile: ResolvedProfile,
        prepared: &crate::engine::invocation_setup::PreparedInvocation,
        cancel: CancellationToken,
        replay: Option<crate::replay::Replay>,
        scheduler: Arc<RunScheduler>,
    ) -> Self {
        Self {
            invocation,
            policy: profile.access_policy(),
            profile,
            snapshot: Arc::clone(&prepared.snapshot),
            session: ToolSession::default(),
            cancel,
            model: prepared.model.clone(),
            skills: Arc::clone(&prepared.skills),
            delivered: HashSet::new(),
            replay,
            window: Default::default(),
            scheduler,
            held_writes: Vec::new(),
            chain: tt_ports::CommitChain::default(),
            in_flight: None,
            delegations: None,
            targets: Default::default(),
            offered_tools: prepared.offered_tools.clone(),
            sent_messages: None,
            sent_tools: None,
            gate_tally: Default::default(),
            gate_tally_loaded: false,
        }
    }

    /// The tool specs its model requests list: its delegating agent's for an agent started in
    /// fork mode, else its own snapshot's.
    pub(crate) fn request_tools(&self) -> Arc<[tt_domain::tool::AgentToolSpec]> {
        self.offered_tools
            .clone()
            .unwrap_or_else(|| Arc::clone(&self.snapshot.tools))
    }

    /// What a resumed agent's journal recorded for its call `call_id` of `round`, as `read` takes
    /// it from the replay by the call's file key; `None` for an agent that is not resumed.
    pub(crate) fn replayed_call<T>(
        &self,
        round: u32,
        call_id: &str,
        read: impl FnOnce(&crate::replay::Replay, &str) -> Option<T>,
    ) -> Option<T> {
        let replay = self.replay.as_ref()?;
        let file_key = crate::engine::records::call_file_key(&self.invocation.id, round, call_id);
        read(replay, &file_key)
    }

    /// Whether this invocation drives the run status (root and handoff owners do).
    pub(crate) fn owns_run(&self) -> bool {
        self.invocation.exit_policy == tt_domain::invocation::ExitPolicy::RunFinishAllowed
    }
}
