//! What the inactivity watchdogs (`engine::watchdog`) read of the run: its default limits
//! (`limits.watchdog` of the run's root profile) and whether an agent waits for a person or for
//! its delegated tasks, and when its last such wait ended. Time spent waiting is not
//! inactivity.
use tt_domain::ids::InvocationId;
use tt_domain::profile::WatchdogLimits;

use super::waits::{Wait, WaitState};
use super::{TaskHost, TaskScheduler};

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
