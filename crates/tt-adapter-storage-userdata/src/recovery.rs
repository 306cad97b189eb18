//! Runs nobody will finish: when a writer opens a data dir, every run left in a non-terminal
//! status whose owner is gone (its lock is free) is marked `interrupted`. Its unfinished tasks
//! and invocations become `interrupted` too, each with its journal event, then
//! `run_interrupted {reason, lastSeq}`; committed messages, workspace files and `persist/` are
//! left untouched. A run whose record is missing or unreadable gets it back first (`rebuild`):
//! only a directory holding nothing but creation leftovers is removed.

use tt_domain::event::{EventLevel, NewRunEvent, RunEventType};
use tt_domain::event_payload::{
    AgentInvocationInterrupted, AgentTaskInterrupted, EventPayload, RunInterrupted, journal_payload,
};
use tt_domain::ids::{EventId, RunId};
use tt_domain::invocation::InvocationStatus;
use tt_domain::run::AgentRunStatus;
use tt_domain::time::Timestamp;
use tt_ports::{StorageError, StorageResult};

use std::path::{Path, PathBuf};

use crate::UserDataStore;
use crate::fsutil::write_json_atomic;
use crate::layout::RUN_FILE;
use crate::owned::{self, OwnedRun};
use crate::run_index;
use crate::runs::load_run_file;

pub use tt_ports::interruption::OWNER_EXITED;

/// A run this store found unfinished with no live owner and marked `interrupted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedRun {
    pub run_id: RunId,
    /// The status its stored record had.
    pub previous_status: AgentRunStatus,
    /// The last seq its journal held before the interruption events.
    pub last_seq: u64,
}

impl UserDataStore {
    /// Marks every unfinished run whose owner is gone `interrupted` (see the module docs) and
    /// returns them. Runs a live process writes are left alone. Blocking; the runtime calls it
    /// once when it starts.
    pub fn recover_interrupted_runs(
        &self,
        now: Timestamp,
        mut next_event_id: impl FnMut() -> EventId,
    ) -> StorageResult<Vec<InterruptedRun>> {
        let inner = &self.inner;
        if inner.flusher.is_none() {
            return Ok(Vec::new());
        }
        crate::fsutil::remove_stale_temp_entries(&inner.layout.profiles_dir())?;
        // Only the runs the unfinished index names are read (docs/storage.md, "The run
        // indexes"); without a complete index, every run is scanned once to write it.
        let marked = match run_index::marked_runs(&inner.layout)? {
            Some(marked) if run_index::log_is_complete(&inner.layout) => marked,
            _ => self.rebuild_run_indexes()?,
        };
        let mut recovered = Vec::new();
        let mut crashed_chats = Vec::new();
        for marked in marked {
            let Some(dir) = self.marked_run_dir(&marked)? else {
                continue;
            };
            if inner.is_owned(&marked.run_id) || owned::has_live_owner(&dir) {
                continue;
            }
            if let Some(chat) = dir.parent().and_then(Path::parent) {
                crashed_chats.push(chat.to_path_buf());
            }
            if let Some(run) = self.recover_marked(&marked.run_id, &dir, now, &mut next_event_id)? {
                recovered.push(run);
            }
        }
        if !crashed_chats.is_empty() {
            // A process died holding runs: the data-dir-wide temp files it may have left.
            remove_shared_temp_entries(&inner.layout, &crashed_chats)?;
        }
        Ok(recovered)
    }

    /// The directory of a marked run; `None` (and the marker removed) when it is gone.
    fn marked_run_dir(&self, marked: &run_index::Marked) -> StorageResult<Option<PathBuf>> {
        let layout = &self.inner.layout;
        let named = marked
            .workspace_id
            .as_deref()
            .and_then(|workspace| run_index::run_dir_of(layout, workspace, &marked.run_id))
            .filter(|dir| dir.is_dir());
        let dir = match named {
            Some(dir) => Some(dir),
            None => layout.find_run_dir(marked.run_id.as_str())?,
        };
        if dir.is_none() {
            run_index::clear_unfinished(layout, &marked.run_id)?;
        }
        Ok(dir)
    }

    /// One marked run whose owner is gone: creation leftovers removed, a record that ended
    /// unmarked, an unfinished one interrupted. A run that cannot be read keeps its marker.
    fn recover_marked(
        &self,
        run_id: &RunId,
        dir: &Path,
        now: Timestamp,
        next_event_id: &mut impl FnMut() -> EventId,
    ) -> StorageResult<Option<InterruptedRun>> {
        let inner = &self.inner;
        // A process killed between creating a run directory and writing its run.json leaves a
        // directory with nothing in it worth keeping. Any other directory without a readable
        // run.json is kept: its record is rebuilt or it is listed as unreadable.
        if !dir.join(RUN_FILE).exists()
            && let Err(StorageError::NotFound { .. }) =
                crate::rebuild::read_run_record(&inner.layout, dir, run_id)
        {
            std::fs::remove_dir_all(dir)
                .map_err(|err| StorageError::io(dir.display().to_string(), err))?;
            run_index::clear_unfinished(&inner.layout, run_id)?;
            return Ok(None);
        }
        let Ok(stored) = load_run_file(&inner.layout, dir, run_id) else {
            return Ok(None);
        };
        let rebuilt = !crate::rebuild::record_file_readable(dir);
        if stored.status.is_terminal() && !rebuilt {
            // It ended, and died before its marker was removed.
            run_index::clear_unfinished(&inner.layout, run_id)?;
            return Ok(None);
        }
        inner.remember_run_location(
            run_id,
            crate::RunLocation {
                canonical: std::fs::canonicalize(dir).ok(),
                dir: dir.to_path_buf(),
            },
        );
        let owned = match inner.owned_run(run_id) {
            Ok(owned) => owned,
            // A live process writes it: not interrupted.
            Err(StorageError::Locked { .. }) => return Ok(None),
            Err(other) => return Err(other),
        };
        let reached = last_journaled_status(inner, run_id);
        let outcome = interrupt(&owned, &inner.layout, reached, now, next_event_id);
        // Release the lock whatever happened, so a later attempt can retry.
        let closed = self.close_run(run_id);
        let outcome = outcome?;
        closed?;
        // Its record now says it ended (interrupted, or it had ended already).
        run_index::clear_unfinished(&inner.layout, run_id)?;
        Ok(outcome)
    }

    /// Writes both run indexes from a scan of every run (a data dir written before them, or
    /// an index deleted or damaged), after the scan-wide cleanup of temp files and creation
    /// leftovers; returns the marked runs. Repeating it is harmless.
    fn rebuild_run_indexes(&self) -> StorageResult<Vec<run_index::Marked>> {
        let inner = &self.inner;
        let layout = &inner.layout;
        let chats: Vec<PathBuf> = std::fs::read_dir(layout.root().join("chats"))
            .map(|entries| entries.flatten().map(|chat| chat.path()).collect())
            .unwrap_or_default();
        remove_shared_temp_entries(layout, &chats)?;
        for dir in layout.all_run_dirs()? {
            if dir.join(RUN_FILE).exists() || owned::has_live_owner(&dir) {
                continue;
            }
            let Some(run_id) = dir
                .file_name()
                .and_then(|name| name.to_str())
                .map(RunId::from_raw)
            else {
                continue;
            };
            if let Err(StorageError::NotFound { .. }) =
                crate::rebuild::read_run_record(layout, &dir, &run_id)
            {
                std::fs::remove_dir_all(&dir)
                    .map_err(|err| StorageError::io(dir.display().to_string(), err))?;
            }
        }
        let mut entries = Vec::new();
        for (run, dir) in inner.all_runs()? {
            if !run.status.is_terminal() || !crate::rebuild::record_file_readable(&dir) {
                run_index::mark_unfinished(layout, &run.id, run.workspace_id.as_str())?;
            }
            entries.push(run_index::LogEntry {
                created_ms: run.created_at.unix_millis(),
                run_id: run.id.clone(),
                workspace_id: run.workspace_id.to_string(),
            });
        }
        if !run_index::log_is_complete(layout) {
            run_index::rebuild_log(layout, entries)?;
        }
        run_index::mark_complete(layout)?;
        Ok(run_index::marked_runs(layout)?.unwrap_or_default())
    }
}

/// Removes the temp files of data-dir-wide writes (the run index and summaries, and the
/// promoted states and chat heads of `chats`) whose process is gone.
fn remove_shared_temp_entries(
    layout: &crate::layout::Layout,
    chats: &[PathBuf],
) -> StorageResult<()> {
    crate::fsutil::remove_stale_temp_entries(&layout.index_runs_dir())?;
    if let Some(summaries) = layout.summary_file("x").parent() {
        crate::fsutil::remove_stale_temp_entries(summaries)?;
    }
    crate::fsutil::remove_stale_temp_entries(&run_index::unfinished_dir(layout))?;
    crate::fsutil::remove_stale_temp_entries(&layout.root().join("index"))?;
    for chat in chats {
        crate::fsutil::remove_stale_temp_entries(&chat.join("persistent-states"))?;
        crate::fsutil::remove_stale_temp_entries(&chat.join("chat-head"))?;
    }
    Ok(())
}

fn append<P: EventPayload>(
    run: &OwnedRun,
    now: Timestamp,
    next_event_id: &mut impl FnMut() -> EventId,
    level: EventLevel,
    payload: &P,
) -> StorageResult<()> {
    run.append_event(NewRunEvent {
        id: next_event_id(),
        run_id: run.run_id.clone(),
        timestamp: now,
        level,
        event_type: P::TYPE,
        payload: journal_payload(payload)
            .map_err(|err| StorageError::Other(format!("{} payload: {err}", P::TYPE)))?,
    })
    .map(drop)
}

/// The status the run's last `status_changed` event names: how far it got. `run.json` is not
/// rewritten for the statuses a run passes through while it works (`calling_model`,
/// `dispatching_tool`, …), so only the journal knows. `None` when no event says (or it cannot
/// be read).
fn last_journaled_status(inner: &crate::Inner, run_id: &RunId) -> Option<AgentRunStatus> {
    const LOOK_BACK: usize = 256;
    crate::journal::tail(inner, run_id, LOOK_BACK)
        .ok()?
        .iter()
        .rev()
        .filter(|event| event.event_type == RunEventType::StatusChanged)
        .find_map(|event| serde_json::from_value(event.payload.get("status")?.clone()).ok())
}

fn interrupt(
    run: &OwnedRun,
    layout: &crate::layout::Layout,
    reached: Option<AgentRunStatus>,
    now: Timestamp,
    next_event_id: &mut impl FnMut() -> EventId,
) -> StorageResult<Option<InterruptedRun>> {
    // Re-read under the lock: the record may have reached a terminal status just before the
    // owner went away. A record that was missing or unreadable is rebuilt and written back.
    let mut record = load_run_file(layout, &run.dir, &run.run_id)?;
    if !crate::rebuild::record_file_readable(&run.dir) {
        save_record(run, layout, &record)?;
    }
    // The record decides whether the run ended (just before its owner went); the journal says
    // how far an unfinished one got.
    let previous_status = match reached {
        Some(status) if !record.status.is_terminal() && !status.is_terminal() => status,
        _ => record.status,
    };
    let last_seq = run.last_seq();
    if record.status.is_terminal() {
        // It ended (just before its owner went, or it is a terminal run whose record was
        // rebuilt): nothing to interrupt.
        return Ok(None);
    }
    for task in run.tasks() {
        if task.status.is_terminal() {
            continue;
        }
        let transition = tt_ports::interruption::owner_exited_task();
        let outcome = run.transition_task(&task.id, &transition, now)?;
        let task = outcome.task;
        append(
            run,
            now,
            next_event_id,
            EventLevel::Warn,
            &AgentTaskInterrupted::of(&task),
        )?;
    }
    for mut invocation in run.invocations() {
        if invocation.status.is_terminal() {
            continue;
        }
        invocation.transition(InvocationStatus::Interrupted, now)?;
        run.save_invocation(&invocation)?;
        append(
            run,
            now,
            next_event_id,
            EventLevel::Warn,
            &AgentInvocationInterrupted::of(&invocation),
        )?;
    }
    append(
        run,
        now,
        next_event_id,
        EventLevel::Error,
        &RunInterrupted {
            reason: OWNER_EXITED.to_owned(),
            last_seq,
            previous_status,
        },
    )?;
    record.status = AgentRunStatus::Interrupted;
    record.updated_at = now;
    save_record(run, layout, &record)?;
    Ok(Some(InterruptedRun {
        run_id: run.run_id.clone(),
        previous_status,
        last_seq,
    }))
}

/// Writes the run record, its index copy and its summary, and makes them durable.
fn save_record(
    run: &OwnedRun,
    layout: &crate::layout::Layout,
    record: &tt_domain::run::AgentRun,
) -> StorageResult<()> {
    write_json_atomic(&run.dir.join(RUN_FILE), record)?;
    let index = layout.index_file(record.id.as_str());
    if let Some(parent) = index.parent() {
        crate::fsutil::create_dir_all(parent)?;
    }
    write_json_atomic(&index, record)?;
    crate::runs::write_summary(layout, record)?;
    run.sync.flush()
}
