//! What the inactivity watchdogs (`engine::watchdog`) read of the run: its default limits
//! (`limits.watchdog` of the run's root profile) and whether an agent waits for a person or for
//! its delegated tasks, and when its last such wait ended. Time spent waiting is not
//! inactivity.
use std::collections::{HashMap, HashSet};
use tt_domain::ids::InvocationId;
use tt_domain::profile::WatchdogLimits;

use super::{TaskHost, TaskScheduler};

/// The watchdogs' share of the scheduler's state.
#[derive(Default)]
pub(super) struct WatchdogState {
    /// The run's default watchdog, for agents whose profile sets none.
    run_limits: Option<WatchdogLimits>,
    /// Agents in `agent.await` (waiting for their delegated tasks).
    awaiting_tasks: HashSet<InvocationId>,
    /// Agents waiting for a person outside an approval (a host commit).
    awaiting_host: HashSet<InvocationId>,
    /// When each agent's last wait (for a person or its tasks) ended.
    waits_ended: HashMap<InvocationId, tokio::time::Instant>,
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

impl<H: TaskHost> TaskScheduler<H> {
    /// Sets the run's default watchdog (the root profile's `limits.watchdog`).
    pub(crate) fn set_run_watchdog(&self, limits: WatchdogLimits) {
        self.lock().watchdog.run_limits = Some(limits);
    }

    /// The run's default watchdog, if any.
    pub(crate) fn run_watchdog(&self) -> Option<WatchdogLimits> {
        self.lock().watchdog.run_limits
    }

    /// Notes that `invocation` starts (`waiting`) or ends a wait of kind `wait`.
    pub(crate) fn set_waiting(&self, invocation: &InvocationId, wait: Wait, waiting: bool) {
        let mut state = self.lock();
        let set = match wait {
            Wait::Tasks => &mut state.watchdog.awaiting_tasks,
            Wait::Host => &mut state.watchdog.awaiting_host,
        };
        if waiting {
            set.insert(invocation.clone());
        } else if set.remove(invocation) {
            state.watchdog.wait_ended(invocation);
        }
    }

    /// Whether `invocation` waits now, and when its last wait ended.
    pub(crate) fn wait_state(&self, invocation: &InvocationId) -> WaitState {
        let state = self.lock();
        WaitState {
            waiting: state.awaiting_person.contains(invocation)
                || state.watchdog.awaiting_tasks.contains(invocation)
                || state.watchdog.awaiting_host.contains(invocation),
            last_wait_ended: state.watchdog.waits_ended.get(invocation).copied(),
        }
    }
}
