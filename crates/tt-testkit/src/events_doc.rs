//! Keeps docs/events.md and the typed payloads of `tt_domain::event_payload` true to what the
//! runtime journals: every event type has a section on the page, every payload field a test run
//! journals is in its type's table, and every journaled payload decodes into its typed struct
//! and serializes back unchanged. Scenario harnesses call [`assert_documented`] and
//! [`assert_typed`] on the journals they read, so a new event or field fails the suite until the
//! page and the struct have it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::event_payload::RunEventPayload;

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
            let Some(fields) = self.types.get(event.event_type.as_str()) else {
                missing.insert(event.event_type.to_string());
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

/// Journaled payloads that do not decode into their typed struct, or do not serialize back to
/// the same JSON (`eventScope` aside): `type: what differs`.
pub fn untyped(events: &[AgentRunEvent]) -> Vec<String> {
    let mut problems = BTreeSet::new();
    for event in events {
        let event_type = &event.event_type;
        if !event_type.is_known() {
            problems.insert(format!("{event_type}: not an event type"));
            continue;
        }
        let mut payload = event.payload.clone();
        if let Some(object) = payload.as_object_mut() {
            object.remove("eventScope");
        }
        match RunEventPayload::decode(event_type, &payload).and_then(|typed| typed.to_value()) {
            Err(error) => {
                problems.insert(format!("{}: does not decode: {error}", event.event_type));
            }
            Ok(back) if back != payload => {
                problems.insert(format!(
                    "{}: decodes to something else: journaled {payload}, typed {back}",
                    event.event_type
                ));
            }
            Ok(_) => {}
        }
    }
    problems.into_iter().collect()
}

/// Fails the test when a journaled payload does not round-trip through its typed struct.
#[track_caller]
pub fn assert_typed(events: &[AgentRunEvent]) {
    let problems = untyped(events);
    assert!(
        problems.is_empty(),
        "tt_domain::event_payload does not match what was journaled: {problems:#?}"
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
    use serde_json::{Value, json};

    fn event(event_type: &str, payload: serde_json::Value) -> AgentRunEvent {
        crate::contract::journaled_event(RunEventType::from_name(event_type), payload)
    }

    /// One payload of every event type, every optional field present.
    const SAMPLES: &str = include_str!("event_samples.json");

    #[test]
    fn one_instance_of_each_type_round_trips_and_matches_its_documented_fields() {
        let samples: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(SAMPLES).unwrap();
        let mut typed = Vec::new();
        for event_type in RunEventType::ALL {
            let name = event_type.as_str();
            let sample = samples
                .get(name)
                .unwrap_or_else(|| panic!("event_samples.json has no `{name}`"));
            let payload = RunEventPayload::decode(event_type, sample)
                .unwrap_or_else(|error| panic!("`{name}` does not decode: {error}"));
            assert_eq!(payload.event_type(), *event_type);
            assert_eq!(&payload.to_value().unwrap(), sample, "`{name}` round trip");
            // On the host API's wire: tagged by its type, and decoded back by it.
            let wire = serde_json::to_value(&payload).unwrap();
            assert_eq!(
                wire,
                json!({"type": name, "payload": sample}),
                "`{name}` wire"
            );
            let back: RunEventPayload = serde_json::from_value(wire).unwrap();
            assert_eq!(back, payload, "`{name}` serde round trip");
            let fields: BTreeSet<String> = sample
                .as_object()
                .map(|object| object.keys().cloned().collect())
                .unwrap_or_default();
            assert_eq!(
                fields,
                events_doc().types[name],
                "the fields of `{name}` and its table in docs/events.md"
            );
            typed.push(payload);
        }
        assert_eq!(
            samples.len(),
            RunEventType::ALL.len(),
            "no sample of an unknown type"
        );
        insta::assert_debug_snapshot!("typed_event_payloads", typed);
    }

    #[test]
    fn a_payload_of_an_unknown_type_or_the_wrong_shape_does_not_deserialize() {
        let unknown = json!({"type": "no_such_event", "payload": {}});
        let error = serde_json::from_value::<RunEventPayload>(unknown).unwrap_err();
        assert!(error.to_string().contains("no_such_event"), "{error}");
        let wrong = json!({"type": "run_created", "payload": "not an object"});
        assert!(serde_json::from_value::<RunEventPayload>(wrong).is_err());
    }

    /// How `eventScope` was found before each payload type stated its own (#23): by the event
    /// type, then the first of five invocation fields present, then the root for run-level
    /// events; every other invocation field present is related. Kept here to show that the
    /// scopes the types state are the same.
    fn scope_by_key_names(event_type: &RunEventType, payload: &Value) -> Option<Value> {
        use RunEventType as T;
        const FIELDS: [&str; 5] = [
            "invocationId",
            "parentInvocationId",
            "sourceInvocationId",
            "childInvocationId",
            "newInvocationId",
        ];
        let field = |name: &str| payload.get(name).and_then(Value::as_str);
        let by_type = match event_type {
            T::AgentDelegateStarted
            | T::AgentTaskRegistered
            | T::AgentTaskQueued
            | T::AgentTaskStarted
            | T::AgentTaskCompleted
            | T::AgentTaskFailed
            | T::AgentTaskCancelled
            | T::AgentTaskInterrupted
            | T::AgentTaskResumed => field("parentInvocationId"),
            T::AgentHandoffRequested | T::AgentHandoffAccepted => field("sourceInvocationId"),
            T::TaskReturnCompleted => field("childInvocationId"),
            _ => None,
        };
        let name = event_type.as_str();
        let run_level = name.starts_with("run_")
            || name.starts_with("persistent_")
            || matches!(
                event_type,
                T::StatusChanged | T::ProfileResolved | T::WorkspaceInitialized
            );
        let primary = by_type
            .or_else(|| FIELDS.iter().find_map(|name| field(name)))
            .or(run_level.then_some("inv_root"))?;
        let mut related: Vec<&str> = Vec::new();
        for id in FIELDS.iter().filter_map(|name| field(name)) {
            if id != primary && !related.contains(&id) {
                related.push(id);
            }
        }
        Some(if related.is_empty() {
            json!({"invocationId": primary})
        } else {
            json!({"invocationId": primary, "relatedInvocationIds": related})
        })
    }

    #[test]
    fn each_payload_type_states_the_scope_its_key_names_gave() {
        let samples: serde_json::Map<String, Value> = serde_json::from_str(SAMPLES).unwrap();
        for event_type in RunEventType::ALL {
            let sample = &samples[event_type.as_str()];
            let mut variants = vec![sample.clone()];
            // The root has no parent: that case too.
            if sample.get("parentInvocationId").is_some() {
                let mut orphan = sample.clone();
                orphan["parentInvocationId"] = Value::Null;
                variants.push(orphan);
            }
            for payload in variants {
                let Ok(typed) = RunEventPayload::decode(event_type, &payload) else {
                    continue;
                };
                let mut stated = payload.clone();
                if let Some(scope) = typed.scope() {
                    scope.add_to(&mut stated);
                }
                assert_eq!(
                    stated.get("eventScope").cloned(),
                    scope_by_key_names(event_type, &payload),
                    "`{event_type}`: {payload}"
                );
            }
        }
    }

    #[test]
    fn the_run_statuses_listed_are_exactly_the_runs_statuses() {
        let start = EVENTS_DOC
            .find("- `status` of a run:")
            .unwrap_or_else(|| panic!("docs/events.md lists no run statuses"));
        let rest = &EVENTS_DOC[start..];
        let end = rest.find("\n- ").unwrap_or(rest.len());
        let listed: std::collections::BTreeSet<&str> = rest[..end]
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| word.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .filter(|word| !["status", "agent_await"].contains(word))
            .collect();
        let all: std::collections::BTreeSet<&str> = tt_domain::run::AgentRunStatus::ALL
            .iter()
            .map(|status| status.as_str())
            .collect();
        assert_eq!(listed, all);
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
