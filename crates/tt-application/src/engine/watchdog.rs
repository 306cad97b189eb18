//! The inactivity watchdog of one agent (`limits.watchdog`, docs/profiles.md "Inactivity
//! watchdog"): activity is any event the agent journals (a model answer or a streamed piece of
//! one, a tool call's result, a retry, …). After `warnAfterSeconds` without any it journals
//! `agent_inactivity_warned`; after `stopAfterSeconds` more it ends the agent with
//! `agent.inactivity_timeout`, the way `limits.maxInvocationSeconds` does. While the agent waits
//! for a person (an approval, a host commit) or for its delegated tasks (`agent.await`), no time
//! counts: its clock starts again when the wait ends. Prompt assembly happens before the loop,
//! so outside the watchdog. It runs on tokio's clock (paused in tests), beside the loop it
//! watches, and ends with it.
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use tt_domain::event::{EventLevel, RunEventType};
use tt_domain::event_payload::AgentInactivityWarned;
use tt_domain::ids::{InvocationId, ProfileId};
use tt_domain::profile::WatchdogLimits;

use crate::engine::context::{RunContext, RunScheduler};
use crate::error::{ApplicationError, ApplicationResult};

/// The watchdog an agent of `profile_limits` runs under: its profile's, else the run's.
pub(crate) fn limits_for(
    profile_limits: Option<WatchdogLimits>,
    scheduler: &RunScheduler,
) -> Option<WatchdogLimits> {
    profile_limits.or_else(|| scheduler.run_watchdog())
}

/// Watches agent `invocation_id`; returns only to stop it (`agent.inactivity_timeout`), or
/// with the error of a warning the journal refused. Never returns when it only warns.
pub(crate) async fn watch(
    ctx: &RunContext,
    scheduler: &RunScheduler,
    invocation_id: &InvocationId,
    profile_id: &ProfileId,
    limits: WatchdogLimits,
) -> ApplicationError {
    match watch_until_stop(ctx, scheduler, invocation_id, profile_id, limits).await {
        Ok(()) => stopped(limits),
        Err(error) => error,
    }
}

async fn watch_until_stop(
    ctx: &RunContext,
    scheduler: &RunScheduler,
    invocation_id: &InvocationId,
    profile_id: &ProfileId,
    limits: WatchdogLimits,
) -> ApplicationResult<()> {
    let warn_after = Duration::from_secs(limits.warn_after_seconds);
    let mut live = ctx.events.live();
    let mut listening = true;
    let mut last = Instant::now();
    let mut warned_at: Option<Instant> = None;
    loop {
        let wait = scheduler.wait_state(invocation_id);
        if wait.waiting {
            last = Instant::now();
            warned_at = None;
        } else if let Some(ended) = wait.last_wait_ended
            && ended > last
        {
            last = ended;
            warned_at = None;
        }
        let wake = match (warned_at, limits.stop_after_seconds) {
            (None, _) => Some(last + warn_after),
            (Some(at), Some(stop)) => Some(at + Duration::from_secs(stop)),
            // Warned and never stopped: only activity matters now.
            (Some(_), None) => None,
        };
        let sleep = async {
            match wake {
                Some(wake) => tokio::time::sleep_until(wake).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            received = live.recv(), if listening => match received {
                Ok(event) => {
                    if event.run_id == ctx.run_id
                        && event.scope_invocation_id() == Some(invocation_id.as_str())
                        && event.event_type != RunEventType::AgentInactivityWarned
                    {
                        last = Instant::now();
                        warned_at = None;
                    }
                }
                // Missed events may have been the agent's: count them as activity.
                Err(RecvError::Lagged(_)) => {
                    last = Instant::now();
                    warned_at = None;
                }
                Err(RecvError::Closed) => listening = false,
            },
            () = sleep => {
                let wait = scheduler.wait_state(invocation_id);
                if wait.waiting || wait.last_wait_ended.is_some_and(|ended| ended > last) {
                    continue;
                }
                if warned_at.is_some() {
                    return Ok(());
                }
                let warned = AgentInactivityWarned {
                    invocation_id: invocation_id.clone(),
                    profile_id: profile_id.clone(),
                    idle_seconds: limits.warn_after_seconds,
                    stop_after_seconds: limits.stop_after_seconds,
                };
                ctx.events.record(&ctx.run_id, EventLevel::Warn, &warned).await?;
                warned_at = Some(Instant::now());
            }
        }
    }
}

/// The failure of an agent its watchdog stopped.
fn stopped(limits: WatchdogLimits) -> ApplicationError {
    ApplicationError::fatal(
        tt_domain::error_codes::AGENT_INACTIVITY_TIMEOUT,
        format!(
            "the agent showed no activity for {} s, and for {} s more after a warning (limits.watchdog)",
            limits.warn_after_seconds,
            limits.stop_after_seconds.unwrap_or_default()
        ),
    )
}
