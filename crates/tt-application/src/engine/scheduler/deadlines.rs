//! Deadline and idle watches of delegated tasks: a task past its deadline, or without model
//! progress for its idle limit, is cancelled with a reason the delegating model can read.
use std::sync::Arc;
use std::time::Duration;
use tt_domain::ids::{InvocationId, TaskId};
use tt_domain::task::AgentTaskRecord;

use super::{CancelledBy, TaskHost, TaskScheduler};

impl<H: TaskHost> TaskScheduler<H> {
    /// Records that `invocation` started its work (for the idle limit).
    pub(crate) fn mark_started(&self, invocation: &InvocationId) {
        self.lock()
            .progress
            .insert(invocation.clone(), tokio::time::Instant::now());
    }

    /// Records model progress of `invocation`, if it is a started task with an idle limit.
    pub(crate) fn mark_progress(&self, invocation: &InvocationId) {
        if let Some(mark) = self.lock().progress.get_mut(invocation) {
            *mark = tokio::time::Instant::now();
        }
    }

    /// Notes that `invocation` waits for a person (`waiting`) or goes on: a person's time to
    /// decide is not idleness, so the idle limit starts again when the answer comes. The
    /// deadline keeps running.
    pub(crate) fn set_awaiting_person(&self, invocation: &InvocationId, waiting: bool) {
        let mut state = self.lock();
        if waiting {
            state.awaiting_person.insert(invocation.clone());
        } else {
            state.awaiting_person.remove(invocation);
            if let Some(mark) = state.progress.get_mut(invocation) {
                *mark = tokio::time::Instant::now();
            }
            state.watchdog.wait_ended(invocation);
        }
    }

    pub(super) fn stop_watch(&self, task_id: &TaskId) {
        if let Some(watch) = self.lock().watches.remove(task_id) {
            watch.cancel();
        }
    }

    /// Watches a task's deadline (from now) and idle limit, and cancels it when one passes.
    pub(super) fn watch_limits(self: &Arc<Self>, task: &AgentTaskRecord) {
        let budget = task.budget.unwrap_or_default();
        if budget.timeout_seconds.is_none() && budget.idle_timeout_seconds.is_none() {
            return;
        }
        let stop = self.host.cancel().child_token();
        self.lock().watches.insert(task.id.clone(), stop.clone());
        let scheduler = Arc::clone(self);
        let task_id = task.id.clone();
        let invocation = task.child_invocation_id.clone();
        let deadline = budget
            .timeout_seconds
            .map(|seconds| tokio::time::Instant::now() + Duration::from_secs(seconds));
        let idle = budget.idle_timeout_seconds.map(Duration::from_secs);
        tokio::spawn(async move {
            loop {
                let now = tokio::time::Instant::now();
                // Not started yet: look again after one idle period.
                let idle_at = idle.map(|idle| {
                    let state = scheduler.lock();
                    if state.awaiting_person.contains(&invocation) {
                        return now + idle;
                    }
                    state
                        .progress
                        .get(&invocation)
                        .map_or(now + idle, |last| *last + idle)
                });
                let Some(wake) = [deadline, idle_at].into_iter().flatten().min() else {
                    return;
                };
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep_until(wake) => {}
                }
                let now = tokio::time::Instant::now();
                let reason = if deadline.is_some_and(|deadline| now >= deadline) {
                    format!(
                        "{DEADLINE_EXCEEDED}: stopped at its time limit of {}",
                        seconds(budget.timeout_seconds.unwrap_or_default())
                    )
                } else if let (Some(idle), Some(last)) = (idle, scheduler.idle_since(&invocation))
                    && now >= last + idle
                {
                    format!(
                        "{IDLE_TIMEOUT_EXCEEDED}: stopped after {} without progress",
                        seconds(idle.as_secs())
                    )
                } else {
                    continue;
                };
                scheduler.lock().watches.remove(&task_id);
                let _ = scheduler
                    .cancel_task_by(&task_id, &reason, CancelledBy::Deadline)
                    .await;
                return;
            }
        });
    }

    /// When `invocation` last made progress, `None` while it waits for a person.
    fn idle_since(&self, invocation: &InvocationId) -> Option<tokio::time::Instant> {
        let state = self.lock();
        if state.awaiting_person.contains(invocation) {
            return None;
        }
        state.progress.get(invocation).copied()
    }
}

/// Reason prefix of a task cancelled at its deadline.
pub(crate) const DEADLINE_EXCEEDED: &str = "deadline_exceeded";

/// Reason prefix of a task cancelled after its idle limit without model progress.
pub(crate) const IDLE_TIMEOUT_EXCEEDED: &str = "idle_timeout_exceeded";

/// "1 second", "30 seconds": limits are read by the delegating model.
pub(super) fn seconds(count: u64) -> String {
    if count == 1 {
        "1 second".to_owned()
    } else {
        format!("{count} seconds")
    }
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn limits_read_in_whole_seconds() {
        assert_eq!(seconds(1), "1 second");
        assert_eq!(seconds(2), "2 seconds");
        assert_eq!(seconds(0), "0 seconds");
    }
}
