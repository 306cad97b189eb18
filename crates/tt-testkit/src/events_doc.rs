//! Keeps docs/events.md complete: every event type the runtime knows has a section there, and
//! every payload field a test run journals is in its type's table. Scenario harnesses call
//! [`assert_documented`] on the journals they read, so a new event or field fails the suite
//! until the page lists it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use tt_domain::event::{AgentRunEvent, RunEventType};

/// The page, as built into the test binaries.
const EVENTS_DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.md"));

/// `eventScope` is documented once for all types, not in each table.
const COMMON_FIELDS: &[&str] = &["eventScope"];

/// The documented event types and, for each, its payload fields.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventsDoc {
    pub types: BTreeMap<String, BTreeSet<String>>,
}

impl EventsDoc {
    /// Parses the page: a section per type (a `### \`type\`` heading) whose table rows start
    /// with a field name in backticks (`| \`field\` | …`). A `##` heading ends a section.
    pub fn parse(markdown: &str) -> Self {
        let mut doc = Self::default();
        let mut current: Option<String> = None;
        for line in markdown.lines() {
            if let Some(heading) = line.strip_prefix("### ") {
                current = backticked(heading).map(str::to_owned);
                if let Some(name) = &current {
                    doc.types.entry(name.clone()).or_default();
                }
            } else if line.starts_with("## ") {
                current = None;
            } else if let (Some(name), Some(row)) = (&current, line.strip_prefix("| "))
                && let Some(field) = backticked(row.split('|').next().unwrap_or_default())
            {
                doc.types
                    .entry(name.clone())
                    .or_default()
                    .insert(field.to_owned());
            }
        }
        doc
    }

    /// What `events` journal that the page does not list: `type` for an undocumented type,
    /// `type.field` for an undocumented payload field. Sorted, each once.
    pub fn undocumented(&self, events: &[AgentRunEvent]) -> Vec<String> {
        let mut missing = BTreeSet::new();
        for event in events {
            let Some(fields) = self.types.get(&event.event_type) else {
                missing.insert(event.event_type.clone());
                continue;
            };
            if let Some(payload) = event.payload.as_object() {
                for key in payload.keys() {
                    if !fields.contains(key) && !COMMON_FIELDS.contains(&key.as_str()) {
                        missing.insert(format!("{}.{key}", event.event_type));
                    }
                }
            }
        }
        missing.into_iter().collect()
    }
}

/// `text` between its first pair of backticks.
fn backticked(text: &str) -> Option<&str> {
    let start = text.find('`')? + 1;
    let len = text[start..].find('`')?;
    Some(&text[start..start + len]).filter(|inner| !inner.is_empty())
}

/// docs/events.md, parsed once.
pub fn events_doc() -> &'static EventsDoc {
    static DOC: OnceLock<EventsDoc> = OnceLock::new();
    DOC.get_or_init(|| EventsDoc::parse(EVENTS_DOC))
}

/// Fails the test when `events` journal a type or payload field docs/events.md does not list.
#[track_caller]
pub fn assert_documented(events: &[AgentRunEvent]) {
    let missing = events_doc().undocumented(events);
    assert!(
        missing.is_empty(),
        "docs/events.md does not document {missing:?}: add them to their type's table"
    );
}

/// Event types the runtime knows that have no section, and sections of no known type.
pub fn type_mismatches() -> (Vec<&'static str>, Vec<String>) {
    let doc = events_doc();
    let undocumented = RunEventType::ALL
        .iter()
        .map(|event_type| event_type.as_str())
        .filter(|name| !doc.types.contains_key(*name))
        .collect();
    let unknown = doc
        .types
        .keys()
        .filter(|name| RunEventType::parse(name).is_none())
        .cloned()
        .collect();
    (undocumented, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tt_domain::event::EventLevel;
    use tt_domain::ids::{EventId, RunId};
    use tt_domain::time::Timestamp;

    fn event(event_type: &str, payload: serde_json::Value) -> AgentRunEvent {
        AgentRunEvent {
            seq: 1,
            id: EventId::from_raw("evt_1"),
            run_id: RunId::from_raw("run_1"),
            timestamp: Timestamp::parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
            level: EventLevel::Info,
            event_type: event_type.to_owned(),
            payload,
        }
    }

    #[test]
    fn every_event_type_has_a_section_and_every_section_a_type() {
        let (undocumented, unknown) = type_mismatches();
        assert!(undocumented.is_empty(), "no section for {undocumented:?}");
        assert!(unknown.is_empty(), "sections of no event type: {unknown:?}");
    }

    #[test]
    fn the_checker_finds_undocumented_types_and_fields() {
        let doc = EventsDoc::parse(
            "## A\n\n### `tool_call_started`\nInfo.\n\n| Field | Type | Meaning |\n| --- | --- | --- |\n| `callId` | string | The call. |\n\n## B\n| `round` | integer | not in a section |\n",
        );
        let events = [
            event(
                "tool_call_started",
                json!({"callId": "c", "round": 1, "eventScope": {"invocationId": "inv_root"}}),
            ),
            event("run_completed", serde_json::Value::Null),
        ];
        assert_eq!(
            doc.undocumented(&events),
            ["run_completed", "tool_call_started.round"]
        );
        assert!(
            events_doc().undocumented(&events).is_empty(),
            "the real page documents both"
        );
    }
}
