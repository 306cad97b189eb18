//! The scheduler's record of what each agent waits for, which the inactivity watchdogs read
//! (`scheduler::watchdog`, `engine::watchdog`): time spent waiting is not inactivity.
use std::collections::{HashMap, HashSet};
use tt_domain::ids::InvocationId;
use tt_domain::profile::WatchdogLimits;

/// The watchdogs' share of the scheduler's state.
#[derive(Default)]
pub(crate) struct WatchdogState {
    /// The run's default watchdog, for agents whose profile sets none.
    pub(super) run_limits: Option<WatchdogLimits>,
    /// Agents in `agent.await` (waiting for their delegated tasks).
    pub(super) awaiting_tasks: HashSet<InvocationId>,
    /// Agents waiting for a person outside an approval (a host commit).
    pub(super) awaiting_host: HashSet<InvocationId>,
    /// When each agent's last wait (for a person or its tasks) ended.
    pub(super) waits_ended: HashMap<InvocationId, tokio::time::Instant>,
}

impl WatchdogState {
    pub(super) fn wait_ended(&mut self, invocation: &InvocationId) {
        self.waits_ended
            .insert(invocation.clone(), tokio::time::Instant::now());
    }
}

/// What an agent is doing, for its watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaitState {
    /// It waits for a person (an approval, a host commit) or for its delegated tasks.
    pub waiting: bool,
    /// When its last wait ended, if it ever waited.
    pub last_wait_ended: Option<tokio::time::Instant>,
}

/// What an agent waits for, besides an approval (which the approval gate notes itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `agent.await`: the agent's delegated tasks.
    Tasks,
    /// The host's answer to a commit.
    Host,
}
