//! The target profiles one reply's delegations resolved (`InvocationRuntime::targets`), so a
//! reply that gives many tasks to one agent reads its profile once and shares it.

use std::collections::HashMap;
use std::sync::Arc;

use tt_domain::ids::ProfileId;
use tt_domain::profile::ResolvedProfile;

/// The target profiles one reply's delegations resolved, by the agent id asked for: a reply
/// that gives many tasks to one agent reads its profile once. A new reply starts afresh, so
/// a profile changed since the last reply is read again.
#[derive(Debug, Default)]
pub(crate) struct ReplyTargets {
    round: u32,
    resolved: HashMap<String, (ProfileId, Arc<ResolvedProfile>)>,
}

impl ReplyTargets {
    /// The target `agent_id` resolved to earlier in the reply of `round`.
    pub(crate) fn get(
        &self,
        round: u32,
        agent_id: &str,
    ) -> Option<(ProfileId, Arc<ResolvedProfile>)> {
        self.resolved
            .get(agent_id)
            .filter(|_| self.round == round)
            .cloned()
    }

    /// Remembers what `agent_id` resolved to in the reply of `round`.
    pub(crate) fn remember(
        &mut self,
        round: u32,
        agent_id: &str,
        target: (ProfileId, Arc<ResolvedProfile>),
    ) {
        if self.round != round {
            self.resolved.clear();
            self.round = round;
        }
        self.resolved.insert(agent_id.to_owned(), target);
    }
}
