//! The live agent tree: which agents a run has, who delegated to whom, and where each stands,
//! drawn from the run's timeline projection whenever an event changes it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use tt_runtime::{AgentRunEvent, RunEventType, TimelineProjection};

/// Remembers the last drawing so that only changes are drawn again.
#[derive(Debug, Default)]
pub(crate) struct AgentTree {
    last: Option<String>,
}

impl AgentTree {
    /// Whether an event can change the tree: an agent or task changed, or the run ended.
    pub(crate) fn is_affected_by(&self, event: &AgentRunEvent) -> bool {
        use RunEventType as T;
        matches!(
            event.event_type,
            T::AgentInvocationCreated
                | T::AgentInvocationStarted
                | T::AgentInvocationCompleted
                | T::AgentInvocationFailed
                | T::AgentInvocationCancelled
                | T::AgentInvocationTransferred
                | T::AgentInvocationInterrupted
                | T::AgentInvocationResumed
                | T::AgentTaskRegistered
                | T::AgentTaskQueued
                | T::AgentTaskStarted
                | T::AgentTaskCompleted
                | T::AgentTaskFailed
                | T::AgentTaskCancelled
                | T::AgentTaskInterrupted
                | T::AgentTaskResumed
        )
    }

    /// The tree drawn as text, or `None` when it looks as it did last time.
    pub(crate) fn redraw(&mut self, projection: &TimelineProjection) -> Option<String> {
        let drawing = draw(projection);
        if self.last.as_deref() == Some(drawing.as_str()) {
            return None;
        }
        self.last = Some(drawing.clone());
        Some(drawing)
    }
}

fn label<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

fn draw(projection: &TimelineProjection) -> String {
    let mut children: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
    for (index, invocation) in projection.invocations.iter().enumerate() {
        let parent = invocation
            .parent_invocation_id
            .as_ref()
            .map(ToString::to_string);
        children.entry(parent).or_default().push(index);
    }
    let mut out = String::from("agent tree:");
    let mut stack: Vec<(usize, usize)> = children
        .get(&None)
        .map(|roots| roots.iter().rev().map(|index| (*index, 0)).collect())
        .unwrap_or_default();
    while let Some((index, depth)) = stack.pop() {
        let invocation = &projection.invocations[index];
        let _ = write!(
            out,
            "\n  {}{} [{}]",
            "  ".repeat(depth),
            invocation.profile_id,
            label(&invocation.status)
        );
        if let Some(kids) = children.get(&Some(invocation.invocation_id.to_string())) {
            stack.extend(kids.iter().rev().map(|kid| (*kid, depth + 1)));
        }
    }
    out
}
