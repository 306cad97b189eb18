//! The briefs one agent writes for another: the `task` of `agent.delegate` and the `handoff`
//! of `agent.handoff`. Their known sections are fields; anything else the writing agent added
//! is kept, in its order, and shown to the reader as additional instructions. A task record
//! stores its brief typed ([`StoredBrief`]), read by the record's continuation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The brief of a delegated task (`agent.delegate`'s `task`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskBrief {
    pub title: Option<String>,
    /// What the task must achieve (required, never blank).
    pub objective: String,
    pub context: Option<Value>,
    pub expected_output: Option<Value>,
    /// Every other field, in the order the writing agent gave them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The brief of a handoff (`agent.handoff`'s `handoff`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffBrief {
    pub title: Option<String>,
    pub reason: Option<String>,
    /// What the agent taking over must achieve (required, never blank).
    pub objective: String,
    pub context_summary: Option<String>,
    pub workspace_refs: Option<Value>,
    pub must_preserve: Option<Value>,
    pub completion_criteria: Option<Value>,
    /// Every other field, in the order the writing agent gave them.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A task record's brief: a [`TaskBrief`] for a delegation, a [`HandoffBrief`] for a handoff,
/// or, for a record this runtime did not write, the stored value as it is. It serializes as
/// the brief itself (no tag), so a record reads and writes the same JSON as before it was
/// typed; which kind it is follows from the record's `continuation`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StoredBrief {
    Task(TaskBrief),
    Handoff(HandoffBrief),
    /// A stored brief that does not read as its kind (a required section missing, a section
    /// of the wrong type, or no brief at all): kept, and shown to the reader as it is.
    Unread(Value),
}

impl StoredBrief {
    /// A short name for the task, for lists of agents: its title, else the first line of its
    /// objective cut at 80 characters; `None` for a brief that does not read as its kind.
    pub fn label(&self) -> Option<String> {
        let (title, objective) = match self {
            StoredBrief::Task(brief) => (brief.title.as_deref(), brief.objective.as_str()),
            StoredBrief::Handoff(brief) => (brief.title.as_deref(), brief.objective.as_str()),
            StoredBrief::Unread(_) => return None,
        };
        let text = title
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| objective.trim().lines().next().unwrap_or_default().trim());
        if text.is_empty() {
            return None;
        }
        let (head, cut) = crate::text::truncate_chars(text, 80);
        let mut label = String::with_capacity(head.len() + '…'.len_utf8());
        label.push_str(head);
        if cut {
            label.push('…');
        }
        Some(label)
    }

    /// Reads a stored delegation brief; one that is not a [`TaskBrief`] is kept as it is.
    pub fn task(raw: Value) -> Self {
        match TaskBrief::deserialize(&raw) {
            Ok(brief) => StoredBrief::Task(brief),
            Err(_) => StoredBrief::Unread(raw),
        }
    }

    /// Reads a stored handoff brief; one that is not a [`HandoffBrief`] is kept as it is.
    pub fn handoff(raw: Value) -> Self {
        match HandoffBrief::deserialize(&raw) {
            Ok(brief) => StoredBrief::Handoff(brief),
            Err(_) => StoredBrief::Unread(raw),
        }
    }
}

impl Default for StoredBrief {
    /// No brief (records written before briefs were stored).
    fn default() -> Self {
        StoredBrief::Unread(Value::Null)
    }
}

/// A brief's known sections, in reading order: (heading, value).
pub type BriefSections = Vec<(&'static str, Option<Value>)>;

impl TaskBrief {
    /// The known sections, in the order a reader sees them.
    pub fn sections(&self) -> BriefSections {
        vec![
            ("Title", self.title.clone().map(Value::String)),
            ("Objective", Some(Value::String(self.objective.clone()))),
            ("Context", self.context.clone()),
            ("Expected Output", self.expected_output.clone()),
        ]
    }
}

impl HandoffBrief {
    /// The known sections, in the order a reader sees them.
    pub fn sections(&self) -> BriefSections {
        vec![
            ("Title", self.title.clone().map(Value::String)),
            ("Reason", self.reason.clone().map(Value::String)),
            ("Objective", Some(Value::String(self.objective.clone()))),
            (
                "Context Summary",
                self.context_summary.clone().map(Value::String),
            ),
            ("Workspace References", self.workspace_refs.clone()),
            ("Must Preserve", self.must_preserve.clone()),
            ("Completion Criteria", self.completion_criteria.clone()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_label_is_the_title_else_the_objective_s_first_line_cut_short() {
        let titled =
            StoredBrief::task(json!({"title": " Lamp check ", "objective": "Find breaks."}));
        assert_eq!(titled.label().as_deref(), Some("Lamp check"));
        let untitled =
            StoredBrief::task(json!({"objective": "Investigate topic #7.\nThen report."}));
        assert_eq!(untitled.label().as_deref(), Some("Investigate topic #7."));
        let long = StoredBrief::task(json!({"objective": "x".repeat(90)}));
        assert_eq!(long.label(), Some(format!("{}…", "x".repeat(80))));
        assert_eq!(StoredBrief::default().label(), None);
    }

    #[test]
    fn a_brief_keeps_the_fields_it_does_not_know_in_their_order() {
        let raw = json!({"title": null, "objective": "Find breaks.", "tone": "dry",
            "context": {"scene": 3}, "audience": ["editor"]});
        let brief: TaskBrief = serde_json::from_value(raw).unwrap();
        assert_eq!(brief.title, None);
        assert_eq!(brief.context, Some(json!({"scene": 3})));
        assert_eq!(brief.extra.keys().collect::<Vec<_>>(), ["tone", "audience"]);
        assert_eq!(
            serde_json::to_value(&brief).unwrap(),
            json!({"objective": "Find breaks.", "context": {"scene": 3}, "tone": "dry",
                "audience": ["editor"]})
        );
    }

    #[test]
    fn a_stored_brief_that_is_not_its_kind_is_kept_as_it_is() {
        let raw = json!({"title": 5, "objective": "Find breaks."});
        assert_eq!(
            StoredBrief::task(raw.clone()),
            StoredBrief::Unread(raw.clone())
        );
        assert_eq!(
            serde_json::to_value(StoredBrief::task(raw.clone())).unwrap(),
            raw
        );
        let typed = StoredBrief::handoff(json!({"objective": "Publish.", "owner": "me"}));
        assert!(matches!(&typed, StoredBrief::Handoff(brief) if brief.objective == "Publish."));
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            json!({"objective": "Publish.", "owner": "me"})
        );
        assert_eq!(
            serde_json::to_value(StoredBrief::default()).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn a_handoff_brief_reads_its_camel_case_sections() {
        let raw = json!({"objective": "Publish.", "contextSummary": "Drafted.",
            "mustPreserve": ["the ending"], "owner": "me"});
        let brief: HandoffBrief = serde_json::from_value(raw).unwrap();
        assert_eq!(brief.context_summary.as_deref(), Some("Drafted."));
        assert_eq!(brief.must_preserve, Some(json!(["the ending"])));
        assert_eq!(brief.extra.get("owner"), Some(&json!("me")));
        let headings: Vec<&str> = brief
            .sections()
            .into_iter()
            .filter(|(_, value)| value.is_some())
            .map(|(heading, _)| heading)
            .collect();
        assert_eq!(headings, ["Objective", "Context Summary", "Must Preserve"]);
    }
}
