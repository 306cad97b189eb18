//! Reading a run's journal: forward in pages of the most a store hands out at once (the one
//! loop behind every whole-journal read of the application: usage, conversation, damage check,
//! trace export, fork, resume), and the event fields more than one of those readers takes.

use serde_json::Value;
use std::collections::HashSet;
use tt_domain::event::AgentRunEvent;
use tt_domain::ids::RunId;
use tt_ports::journal::MAX_EVENT_PAGE_LIMIT;
use tt_ports::{EventPage, RunJournal, StorageResult};

/// A cursor over a run's journal, from its first event on, a full page at a time.
pub(crate) struct JournalPages<'a> {
    journal: &'a dyn RunJournal,
    run_id: &'a RunId,
    after: Option<u64>,
    invocation_id: Option<String>,
    done: bool,
}

impl<'a> JournalPages<'a> {
    /// A cursor before the first event of `run_id`'s journal.
    pub(crate) fn new(journal: &'a dyn RunJournal, run_id: &'a RunId) -> Self {
        Self {
            journal,
            run_id,
            after: None,
            invocation_id: None,
            done: false,
        }
    }

    /// Only the events that concern `invocation_id` (the page's invocation filter).
    pub(crate) fn of_invocation(mut self, invocation_id: String) -> Self {
        self.invocation_id = Some(invocation_id);
        self
    }

    /// The seq of the last event read so far (`None` before the first page).
    pub(crate) fn after(&self) -> Option<u64> {
        self.after
    }

    /// The next page, in seq order; `None` once the journal is read to its end (or a store
    /// answers with seqs that do not move on, which would otherwise loop forever).
    pub(crate) async fn next(&mut self) -> StorageResult<Option<Vec<AgentRunEvent>>> {
        if self.done {
            return Ok(None);
        }
        let page = EventPage {
            after_seq: self.after,
            limit: Some(MAX_EVENT_PAGE_LIMIT),
            invocation_id: self.invocation_id.clone(),
            ..EventPage::default()
        };
        let events = self.journal.read(self.run_id, &page).await?;
        match events.last() {
            Some(last) if self.after.is_none_or(|after| last.seq > after) => {
                self.after = Some(last.seq);
                Ok(Some(events))
            }
            _ => {
                self.done = true;
                Ok(None)
            }
        }
    }
}

/// The whole journal of `run_id`, in seq order.
pub(crate) async fn read_all_events(
    journal: &dyn RunJournal,
    run_id: &RunId,
) -> StorageResult<Vec<AgentRunEvent>> {
    let mut pages = JournalPages::new(journal, run_id);
    let mut events = Vec::new();
    while let Some(page) = pages.next().await? {
        events.extend(page);
    }
    Ok(events)
}

/// The `guidanceIds` an applied or discarded guidance event names.
pub(crate) fn guidance_ids(event: &AgentRunEvent) -> HashSet<String> {
    payload_strings(event, "guidanceIds")
        .map(str::to_owned)
        .collect()
}

/// The strings of an event payload's array `key`, in order (none when it is absent).
pub(crate) fn payload_strings<'a>(
    event: &'a AgentRunEvent,
    key: &str,
) -> impl Iterator<Item = &'a str> {
    event
        .payload
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The `round` an event's payload names.
pub(crate) fn round_of(event: &AgentRunEvent) -> Option<u32> {
    event
        .payload
        .get("round")
        .and_then(Value::as_u64)
        .and_then(|round| u32::try_from(round).ok())
}
