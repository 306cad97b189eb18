//! A run record that is missing or unreadable (`run.json` deleted by hand, or damaged by a disk)
//! never makes a run disappear: it is rebuilt from the run index's copy of it, or, failing that,
//! from the journal (`run_created`, `generation_intent_recorded` and the run's later status and
//! end events). A reader only rebuilds it in memory; the writer that opens the data dir writes it
//! back (`recovery`). A run directory that holds nothing but what creating a run leaves before
//! its record (no journal, no records, no blobs, no workspace file) is the one kind a writer
//! removes.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;

use tt_domain::error_codes;
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::event_payload::{GenerationIntentRecorded, RunCreated};
use tt_domain::ids::{ProfileId, RunId, WorkspaceId};
use tt_domain::run::{
    AgentRun, AgentRunStatus, ConversationKind, Presentation, REBUILT_FROM_INDEX,
    REBUILT_FROM_JOURNAL, RebuiltRecord,
};
use tt_domain::{DomainError, time::Timestamp};
use tt_ports::{StorageError, StorageResult};

use crate::fsutil::{self, read_json};
use crate::layout::{
    BLOBS_FILE, EVENTS_FILE, LOCK_FILE, Layout, MANIFEST_FILE, RECORDS_FILE, RUN_FILE,
};

/// How many lines from the journal's start are read for `run_created` and
/// `generation_intent_recorded` (both come within the run's first few events).
const HEAD_LINES: usize = 64;

/// How much of the journal's tail is read for the run's last status and end.
const TAIL_BYTES: u64 = 256 * 1024;

/// The run record of `run_id` in `dir`: `run.json`, or, when it is missing or unreadable, the
/// record rebuilt from the index copy or the journal (with [`AgentRun::rebuilt`] saying so).
/// `NotFound` when there is nothing to rebuild from and nothing but creation leftovers;
/// `agent.run_record_missing` when the run holds a journal or records but no record can be
/// rebuilt; a `run.json` that does not parse and cannot be rebuilt keeps its own error.
pub(crate) fn read_run_record(
    layout: &Layout,
    dir: &Path,
    run_id: &RunId,
) -> StorageResult<AgentRun> {
    let because = match read_json::<AgentRun>(&dir.join(RUN_FILE)) {
        Ok(Some(run)) => return Ok(run),
        Ok(None) => None,
        Err(error @ StorageError::Corrupt { .. }) => Some(error),
        Err(other) => return Err(other),
    };
    let why = match &because {
        None => "run.json is missing".to_owned(),
        Some(error) => format!("run.json cannot be read ({}: {error})", error.code()),
    };
    if let Some(run) = rebuild(layout, dir, run_id, &why) {
        return Ok(run);
    }
    match because {
        Some(error) => Err(error),
        None if is_creation_leftover(dir) => Err(StorageError::not_found(format!("run {run_id}"))),
        None => Err(StorageError::Domain(DomainError::new(
            error_codes::AGENT_RUN_RECORD_MISSING,
            format!(
                "run {run_id} has no run.json, and neither the run index nor the journal's start \
                 can rebuild it; its journal and records are kept"
            ),
        ))),
    }
}

/// The record rebuilt from the index copy, else from the journal; `None` when neither can.
fn rebuild(layout: &Layout, dir: &Path, run_id: &RunId, why: &str) -> Option<AgentRun> {
    if let Ok(Some(mut run)) = read_json::<AgentRun>(&layout.index_file(run_id.as_str()))
        && run.id == *run_id
        && layout
            .run_dir(run.workspace_id.as_str(), run_id.as_str())
            .is_ok_and(|expected| expected == dir)
    {
        run.rebuilt = Some(RebuiltRecord {
            from: REBUILT_FROM_INDEX.to_owned(),
            because: format!("{why}; rebuilt from its copy in the run index"),
        });
        return Some(run);
    }
    from_journal(dir, run_id, why)
}

/// The record the journal's start and tail describe.
fn from_journal(dir: &Path, run_id: &RunId, why: &str) -> Option<AgentRun> {
    let file = fs::File::open(dir.join(EVENTS_FILE)).ok()?;
    let mut created: Option<(RunCreated, Timestamp)> = None;
    let mut intent: Option<GenerationIntentRecorded> = None;
    for line in BufReader::new(file).lines().take(HEAD_LINES) {
        let Ok(event) = serde_json::from_str::<AgentRunEvent>(&line.ok()?) else {
            break;
        };
        if event.run_id != *run_id {
            return None;
        }
        match event.event_type {
            RunEventType::RunCreated => {
                created = Some((serde_json::from_value(event.payload).ok()?, event.timestamp));
            }
            RunEventType::GenerationIntentRecorded => {
                intent = serde_json::from_value(event.payload).ok();
            }
            _ => {}
        }
        if created.is_some() && intent.is_some() {
            break;
        }
    }
    let (created, created_at) = created?;
    let workspace_id = WorkspaceId::from_raw(created.workspace_id);
    // The run directory is `chats/<workspaceId>/runs/<runId>`: the journal must name its chat.
    let chat = dir
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name);
    if chat.is_none_or(|chat| chat != workspace_id.as_str()) {
        return None;
    }
    let presentation: Presentation =
        serde_json::from_value(serde_json::Value::String(created.presentation)).ok()?;
    let (status, abandoned_at, updated_at) =
        tail_state(dir).unwrap_or((AgentRunStatus::Created, None, created_at));
    Some(AgentRun {
        id: run_id.clone(),
        workspace_id,
        stable_chat_id: created.stable_chat_id,
        conversation_kind: intent
            .as_ref()
            .map_or(ConversationKind::default(), |intent| {
                intent.conversation_kind
            }),
        chat_ref: created.chat_ref,
        generation_type: created.generation_type,
        profile_id: intent
            .as_ref()
            .and_then(|intent| ProfileId::parse(&intent.profile_id).ok()),
        persist_base_state_id: created.persist_base_state_id,
        skill_scope_refs: Default::default(),
        connection_ref: None,
        generation: Default::default(),
        presentation,
        status,
        input_message_count: intent.as_ref().map_or(0, |intent| {
            usize::try_from(intent.input_message_count).unwrap_or(0)
        }),
        forked_from: created.forked_from,
        profile_models: Default::default(),
        abandoned_at,
        unrecorded_end: None,
        rebuilt: Some(RebuiltRecord {
            from: REBUILT_FROM_JOURNAL.to_owned(),
            because: format!(
                "{why} and the run index holds no copy of it; rebuilt from the journal, which \
                 does not keep the run's model connection, generation settings, skill scopes or \
                 model changes (they are left at their defaults)"
            ),
        }),
        created_at,
        updated_at,
    })
}

/// The run's last status, when it was abandoned, and the time of its last event, from the
/// journal's tail: the last `status_changed` or end event decides the status.
fn tail_state(dir: &Path) -> Option<(AgentRunStatus, Option<Timestamp>, Timestamp)> {
    let bytes = fsutil::read_tail(&dir.join(EVENTS_FILE), TAIL_BYTES)?;
    let mut status = None;
    let mut abandoned_at = None;
    let mut last_time = None;
    for line in bytes.split(|byte| *byte == b'\n') {
        let Ok(event) = serde_json::from_slice::<AgentRunEvent>(line) else {
            continue;
        };
        last_time = Some(event.timestamp);
        let next = match event.event_type {
            RunEventType::StatusChanged => event
                .payload
                .get("status")
                .and_then(|status| serde_json::from_value(status.clone()).ok()),
            RunEventType::RunCompleted => Some(AgentRunStatus::Completed),
            RunEventType::RunPartialSuccess => Some(AgentRunStatus::PartialSuccess),
            RunEventType::RunFailed => Some(AgentRunStatus::Failed),
            RunEventType::RunCancelled => Some(AgentRunStatus::Cancelled),
            RunEventType::RunInterrupted => Some(AgentRunStatus::Interrupted),
            RunEventType::RunAbandoned => {
                abandoned_at = Some(event.timestamp);
                None
            }
            RunEventType::RunResumed => {
                abandoned_at = None;
                Some(AgentRunStatus::AssemblingContext)
            }
            _ => None,
        };
        if let Some(next) = next {
            status = Some(next);
        }
    }
    Some((status?, abandoned_at, last_time?))
}

/// Whether `dir` holds nothing but what creating a run leaves before its record is written:
/// the lock file, the manifest, temp files, empty segment files and empty directories. Such a
/// directory is nobody's run; anything else (a journal line, a record, a blob, a workspace
/// file) is kept.
pub(crate) fn is_creation_leftover(dir: &Path) -> bool {
    fn only_leftovers(dir: &Path, top: bool) -> bool {
        let Ok(entries) = fs::read_dir(dir) else {
            return false;
        };
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if fsutil::is_temp_name(&name) {
                continue;
            }
            if kind.is_dir() {
                if !only_leftovers(&entry.path(), false) {
                    return false;
                }
                continue;
            }
            let allowed = top
                && match name.as_ref() {
                    LOCK_FILE | MANIFEST_FILE => true,
                    EVENTS_FILE | RECORDS_FILE | BLOBS_FILE => {
                        entry.metadata().is_ok_and(|meta| meta.len() == 0)
                    }
                    _ => false,
                };
            if !allowed {
                return false;
            }
        }
        true
    }
    !dir.join(RUN_FILE).exists() && only_leftovers(dir, true)
}

/// Whether `dir/run.json` exists and parses (a rebuilt record still has to be written back
/// when it does not).
pub(crate) fn record_file_readable(dir: &Path) -> bool {
    matches!(read_json::<AgentRun>(&dir.join(RUN_FILE)), Ok(Some(_)))
}
