//! Damage of a stored run: what a reader finds wrong in what was stored. A journal with a seq
//! gap, an empty journal, a journal that stops short of the end the run record shows, records
//! that contradict that end, an end the journal refused. Pure checks over what the reads
//! returned; the reads themselves are the application's (`AgentRunService::check_run`).

use serde::{Deserialize, Serialize};

use crate::error_codes;
use crate::event::{AgentRunEvent, RunEventType};
use crate::ids::RunId;
use crate::run::{AgentRun, AgentRunStatus, RebuiltRecord, UnrecordedEnd};

/// One thing found wrong with a stored run: a code from the error-code list and one line
/// saying what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DamageFinding {
    pub code: String,
    pub message: String,
}

impl DamageFinding {
    pub fn new(code: error_codes::Code, message: impl Into<String>) -> Self {
        Self {
            code: code.as_str().to_owned(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for DamageFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// A run the store holds but cannot read (its run record does not parse): listing skips it, so
/// readers name it apart. `run_id` is as the store knows it (a file name, a row key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableRun {
    pub run_id: String,
    pub code: String,
    pub message: String,
}

/// What an integrity check of a stored run found (`check_run`); `findings` is empty for a
/// whole run.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDamage {
    pub run_id: RunId,
    /// The status the run record shows.
    pub status: AgentRunStatus,
    /// How many events the journal holds (up to the first line it cannot read).
    pub event_count: u64,
    /// The seq of the journal's last event (0 when it holds none).
    pub last_seq: u64,
    pub findings: Vec<DamageFinding>,
    /// The end the journal refused, from the run record (or, when the record refused it too,
    /// from the memory of the process that ran it).
    pub unrecorded_end: Option<UnrecordedEnd>,
}

impl RunDamage {
    pub fn is_damaged(&self) -> bool {
        !self.findings.is_empty()
    }
}

/// The event types that end a run, and what each says about the run's status.
pub const RUN_END_EVENTS: [&str; 6] = [
    "run_completed",
    "run_partial_success",
    "run_failed",
    "run_cancelled",
    "run_interrupted",
    "run_abandoned",
];

/// How many missing seqs a finding names (the count names them all).
const MAX_NAMED_SEQS: usize = 10;

/// A journal read page by page, in seq order: counts events and gaps, keeps the last event's
/// seq and type. Memory stays small however long the journal is.
#[derive(Debug, Clone, Default)]
pub struct JournalScan {
    count: u64,
    last_seq: u64,
    last_type: Option<RunEventType>,
    missing: Vec<u64>,
    missing_count: u64,
    unreadable: Option<DamageFinding>,
}

impl JournalScan {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event (seqs ascending, pages in order).
    pub fn push(&mut self, event: &AgentRunEvent) {
        let expected = self.last_seq + 1;
        if event.seq > expected {
            let gap = event.seq - expected;
            self.missing_count += gap;
            let room = MAX_NAMED_SEQS.saturating_sub(self.missing.len()) as u64;
            self.missing.extend(expected..expected + gap.min(room));
        }
        self.count += 1;
        self.last_seq = self.last_seq.max(event.seq);
        self.last_type = Some(event.event_type.clone());
    }

    /// The journal could not be read on from here (a line it cannot parse): `finding` says
    /// why, and the end is not judged.
    pub fn stop_unreadable(&mut self, finding: DamageFinding) {
        self.unreadable = Some(finding);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Whether the journal read to its end (no line it could not read).
    pub fn read_whole(&self) -> bool {
        self.unreadable.is_none()
    }

    /// What is wrong with the journal of `run`. An end the journal refused
    /// (`run.unrecorded_end`, or `unrecorded` known otherwise) explains a missing end.
    pub fn findings(
        &self,
        run: &AgentRun,
        unrecorded: Option<&UnrecordedEnd>,
    ) -> Vec<DamageFinding> {
        let mut findings = Vec::new();
        if let Some(unreadable) = &self.unreadable {
            findings.push(unreadable.clone());
        }
        if self.count == 0 && self.unreadable.is_none() && run.status != AgentRunStatus::Created {
            findings.push(DamageFinding::new(
                error_codes::AGENT_JOURNAL_EMPTY,
                format!(
                    "the journal holds no event, though the run record says {}",
                    run.status.as_str()
                ),
            ));
        }
        if self.missing_count > 0 {
            let named: Vec<String> = self.missing.iter().map(u64::to_string).collect();
            let more = if self.missing_count > named.len() as u64 {
                format!(" and {} more", self.missing_count - named.len() as u64)
            } else {
                String::new()
            };
            findings.push(DamageFinding::new(
                error_codes::AGENT_JOURNAL_DAMAGED,
                format!(
                    "the journal is missing seq {}{more} ({} of {} events lost)",
                    named.join(", "),
                    self.missing_count,
                    self.last_seq
                ),
            ));
        }
        let unrecorded = run.unrecorded_end.as_ref().or(unrecorded);
        if let Some(end) = unrecorded {
            findings.push(unrecorded_end_finding(end));
        } else if self.unreadable.is_none()
            && self.count > 0
            && let Some(expected) = expected_ends(run.status)
        {
            let last = self
                .last_type
                .as_ref()
                .map(RunEventType::as_str)
                .unwrap_or_default();
            if !self
                .last_type
                .as_ref()
                .is_some_and(|last| expected.contains(last))
            {
                findings.push(DamageFinding::new(
                    error_codes::AGENT_JOURNAL_END_MISSING,
                    format!(
                        "the run record says {} but the journal's last event (seq {}) is `{last}`, \
                         not {}: the journal stops short of the run's end",
                        run.status.as_str(),
                        self.last_seq,
                        expected
                            .iter()
                            .map(|end| format!("`{end}`"))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ),
                ));
            }
        }
        findings
    }
}

/// The events a journal may end with for a run whose record shows `status`; `None` when any
/// event may be last (a run still working, or an interrupted one whose end a read-write
/// runtime has not journaled yet).
fn expected_ends(status: AgentRunStatus) -> Option<&'static [RunEventType]> {
    if !status.is_terminal() {
        return None;
    }
    match status {
        AgentRunStatus::Completed => Some(&[RunEventType::RunCompleted]),
        AgentRunStatus::PartialSuccess => Some(&[RunEventType::RunPartialSuccess]),
        // A failed or cancelled run may have been given up after its end.
        AgentRunStatus::Failed => Some(&[RunEventType::RunFailed, RunEventType::RunAbandoned]),
        AgentRunStatus::Cancelled => {
            Some(&[RunEventType::RunCancelled, RunEventType::RunAbandoned])
        }
        // Interrupted (the working statuses returned above).
        _ => None,
    }
}

/// The finding for an end the journal refused.
pub fn unrecorded_end_finding(end: &UnrecordedEnd) -> DamageFinding {
    let code = end
        .payload
        .get("code")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("?");
    let message = end
        .payload
        .get("message")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    DamageFinding::new(
        error_codes::AGENT_RUN_END_UNRECORDED,
        format!(
            "the journal refused the run's `{}` ({}: {}) because {}; the run record keeps it",
            end.event_type, code, message, end.unrecorded_because
        ),
    )
}

/// The finding for a run record that was missing or unreadable and was rebuilt (the rebuilt
/// record is what readers see; what it could not restore is in `because`).
pub fn rebuilt_record_finding(rebuilt: &RebuiltRecord) -> DamageFinding {
    DamageFinding::new(
        error_codes::AGENT_RUN_RECORD_REBUILT,
        format!("the run record was rebuilt: {}", rebuilt.because),
    )
}

/// The finding for a run whose record shows a final end while its records still show work
/// going on: `unfinished` names each record that has not ended (`agent inv_root (running)`),
/// `has_root` whether the root agent's record exists. `None` when they agree. Checked for
/// `completed` and `partial_success` runs, whose end settles every agent and task.
pub fn records_finding(
    run: &AgentRun,
    has_root: bool,
    unfinished: &[String],
) -> Option<DamageFinding> {
    if !matches!(
        run.status,
        AgentRunStatus::Completed | AgentRunStatus::PartialSuccess
    ) || (has_root && unfinished.is_empty())
    {
        return None;
    }
    let mut what: Vec<String> = Vec::new();
    if !has_root {
        what.push("the root agent has no record".to_owned());
    }
    if !unfinished.is_empty() {
        let named: Vec<&str> = unfinished.iter().take(5).map(String::as_str).collect();
        let more = unfinished.len().saturating_sub(named.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        what.push(format!("{}{more} never ended", named.join(", ")));
    }
    Some(DamageFinding::new(
        error_codes::AGENT_RECORDS_INCONSISTENT,
        format!(
            "the run record says {} but {}: the records stop short of the run's end",
            run.status.as_str(),
            what.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::EventId;
    use crate::time::Timestamp;

    fn event(seq: u64, event_type: &str) -> AgentRunEvent {
        AgentRunEvent {
            seq,
            id: EventId::from_raw(format!("evt_{seq}")),
            run_id: RunId::from_raw("run_x"),
            timestamp: Timestamp::from_unix_millis(0),
            level: crate::event::EventLevel::Info,
            event_type: RunEventType::from_name(event_type),
            payload: serde_json::Value::Null,
        }
    }

    fn run(status: AgentRunStatus) -> AgentRun {
        let mut run: AgentRun = serde_json::from_value(serde_json::json!({
            "id": "run_x", "workspaceId": "ws", "stableChatId": "c",
            "conversationKind": "character", "profileId": null, "persistBaseStateId": null,
            "presentation": "foreground", "status": "completed",
            "createdAt": Timestamp::from_unix_millis(0), "updatedAt": Timestamp::from_unix_millis(0)
        }))
        .unwrap();
        run.status = status;
        run
    }

    fn codes(findings: &[DamageFinding]) -> Vec<&str> {
        findings.iter().map(|f| f.code.as_str()).collect()
    }

    #[test]
    fn a_whole_journal_of_a_completed_run_has_no_findings() {
        let mut scan = JournalScan::new();
        for (seq, kind) in [
            (1, "run_created"),
            (2, "status_changed"),
            (3, "run_completed"),
        ] {
            scan.push(&event(seq, kind));
        }
        assert!(
            scan.findings(&run(AgentRunStatus::Completed), None)
                .is_empty()
        );
    }

    #[test]
    fn gaps_across_pages_an_empty_journal_and_a_missing_end_are_named() {
        let mut scan = JournalScan::new();
        scan.push(&event(1, "run_created"));
        // The next "page" starts after a gap.
        scan.push(&event(4, "tool_call_completed"));
        let findings = scan.findings(&run(AgentRunStatus::Completed), None);
        assert_eq!(
            codes(&findings),
            ["agent.journal_damaged", "agent.journal_end_missing"]
        );
        assert!(
            findings[0].message.contains("missing seq 2, 3 "),
            "{}",
            findings[0]
        );
        let empty = JournalScan::new().findings(&run(AgentRunStatus::Completed), None);
        assert_eq!(codes(&empty), ["agent.journal_empty"]);
        // A failed run resumed and failed again ends with `run_failed`; abandoned after it too.
        let mut resumed = JournalScan::new();
        for (seq, kind) in [
            (1, "run_failed"),
            (2, "run_interrupted"),
            (3, "run_resumed"),
            (4, "run_failed"),
            (5, "run_abandoned"),
        ] {
            resumed.push(&event(seq, kind));
        }
        assert!(
            resumed
                .findings(&run(AgentRunStatus::Failed), None)
                .is_empty()
        );
        // A working run may end anywhere.
        assert!(
            scan.findings(&run(AgentRunStatus::CallingModel), None)
                .len()
                == 1
        );
    }

    #[test]
    fn records_that_never_ended_contradict_a_completed_run() {
        let completed = run(AgentRunStatus::Completed);
        assert!(records_finding(&completed, true, &[]).is_none());
        let finding =
            records_finding(&completed, true, &["agent inv_root (running)".to_owned()]).unwrap();
        assert_eq!(finding.code, "agent.records_inconsistent");
        assert!(finding.message.contains("inv_root (running) never ended"));
        assert!(records_finding(&run(AgentRunStatus::Failed), false, &[]).is_none());
    }
}
