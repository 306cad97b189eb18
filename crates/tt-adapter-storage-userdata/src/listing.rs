//! `list_runs` from the run log (`run_index`): the log is read backwards from its end until
//! the page is settled, so a page costs what it shows (and its offset), not the data dir's
//! history. Order: `createdAt` descending, then id ascending, as every store lists.

use std::cmp::Reverse;
use std::collections::HashSet;
use std::fs;

use tt_domain::ids::{RunId, is_valid_storage_segment};
use tt_domain::run::{AgentRun, ConversationKind, derive_workspace_id};
use tt_ports::{RunListPage, StorageError, StorageResult};

use crate::fsutil;
use crate::run_index::{self, LOG_SLACK_MS, LogEntry, LogTail};
use crate::runs::{load_run_file, observed_run};
use crate::{Inner, RunLocation};

impl Inner {
    /// The page from the run log; `None` when there is no complete log (the caller scans).
    pub(crate) fn list_from_log(&self, page: RunListPage) -> StorageResult<Option<Vec<AgentRun>>> {
        let Some(mut tail) = LogTail::open(&self.layout)? else {
            return Ok(None);
        };
        let need = page.offset.saturating_add(page.limit);
        let mut pending: Vec<LogEntry> = Vec::new();
        let mut seen = HashSet::new();
        let mut listed: Vec<AgentRun> = Vec::new();
        // The oldest creation time of a line read so far: every line not read yet was created
        // at most `LOG_SLACK_MS` after it.
        let mut frontier = i64::MAX;
        while listed.len() < need {
            let chunk = tail.next_chunk()?;
            let done = chunk.is_none();
            for entry in chunk.into_iter().flatten() {
                frontier = frontier.min(entry.created_ms);
                pending.push(entry);
            }
            // Newest first; ties by id ascending. Taken from the end of the vector.
            pending.sort_by(|a, b| {
                (Reverse(b.created_ms), &b.run_id).cmp(&(Reverse(a.created_ms), &a.run_id))
            });
            while listed.len() < need {
                let Some(entry) = pending.last() else { break };
                if !done && entry.created_ms <= frontier.saturating_add(LOG_SLACK_MS) {
                    break;
                }
                let Some(entry) = pending.pop() else { break };
                if seen.insert(entry.run_id.clone())
                    && let Some(run) = self.listed_run(&entry)?
                {
                    listed.push(run);
                }
            }
            if done {
                break;
            }
        }
        Ok(Some(
            listed
                .into_iter()
                .skip(page.offset)
                .take(page.limit)
                .collect(),
        ))
    }

    /// The run a log line names, as a listing shows it; `None` when it is gone, was never
    /// finished being created, or its record cannot be read (`unreadable_runs` names those).
    fn listed_run(&self, entry: &LogEntry) -> StorageResult<Option<AgentRun>> {
        let dir = match run_index::run_dir_of(&self.layout, &entry.workspace_id, &entry.run_id) {
            Some(dir) => dir,
            None => return Ok(None),
        };
        match load_run_file(&self.layout, &dir, &entry.run_id) {
            Ok(run) if run.id == entry.run_id => {
                self.remember_run_location(
                    &entry.run_id,
                    RunLocation {
                        canonical: fs::canonicalize(&dir).ok(),
                        dir: dir.clone(),
                    },
                );
                Ok(Some(observed_run(self, &dir, run)))
            }
            // Like a scan, a run whose record cannot be read is left out, never allowed to
            // hide the others.
            Ok(_) | Err(_) => Ok(None),
        }
    }

    /// The runs of one conversation: the run directories of its workspaces (one per
    /// conversation kind), never the other conversations'.
    pub(crate) fn chat_runs(&self, stable_chat_id: &str) -> StorageResult<Vec<AgentRun>> {
        let mut runs = Vec::new();
        for kind in [ConversationKind::Character, ConversationKind::Group] {
            let workspace = derive_workspace_id(kind, stable_chat_id);
            let dir = self.layout.chat_dir(workspace.as_str())?.join("runs");
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(err) if fsutil::is_missing(&err) => continue,
                Err(err) => return Err(StorageError::io(dir.display().to_string(), err)),
            };
            for entry in entries.flatten() {
                let Some(name) = entry
                    .file_name()
                    .to_str()
                    .filter(|name| is_valid_storage_segment(name))
                    .map(str::to_owned)
                else {
                    continue;
                };
                let line = LogEntry {
                    created_ms: 0,
                    run_id: RunId::from_raw(name),
                    workspace_id: workspace.to_string(),
                };
                if let Some(run) = self.listed_run(&line)?
                    && run.stable_chat_id == stable_chat_id
                {
                    runs.push(run);
                }
            }
        }
        Ok(runs)
    }
}
