//! `RunJournal` over `events.jsonl`: O(1) appends from in-memory state (last seq, length, sparse
//! seq -> byte-offset index), torn-tail repair on first open, and page reads that seek through
//! the sparse index and stream lines instead of loading the file.

use async_trait::async_trait;
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::OwnedMutexGuard;
use tt_domain::event::{AgentRunEvent, NewRunEvent};
use tt_domain::ids::RunId;
use tt_ports::{EventPage, RunJournal, StorageError, StorageResult};

use crate::fsutil::CountingReader;
use crate::layout::EVENTS_FILE;
use crate::{Inner, UserDataStore};

/// One sparse index entry every this many events.
const INDEX_STRIDE: u64 = 64;

/// The per-run journal state, `None` until the journal is first opened in this process (or after
/// a failed append, which forces a fresh scan and repair on next use).
pub(crate) type JournalSlot = Arc<tokio::sync::Mutex<Option<JournalState>>>;

#[derive(Debug, Clone, Copy)]
struct IndexMark {
    seq: u64,
    offset: u64,
}

pub(crate) struct JournalState {
    path: PathBuf,
    file: File,
    last_seq: u64,
    len: u64,
    index: Vec<IndexMark>,
}

impl JournalState {
    /// Opens a run's journal: scans it once to rebuild the last seq and the sparse index, and
    /// truncates a torn last line (no trailing newline, or not valid JSON) left by a crash.
    fn open(inner: &Inner, run_id: &RunId) -> StorageResult<Self> {
        let path = inner.run_dir(run_id)?.join(EVENTS_FILE);
        let what = || path.display().to_string();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|err| StorageError::io(what(), err))?;
        let file_len = file
            .metadata()
            .map_err(|err| StorageError::io(what(), err))?
            .len();

        let mut reader = BufReader::new(CountingReader {
            inner: &mut file,
            counter: &inner.journal_bytes_read,
        });
        let mut last_seq = 0;
        let mut index: Vec<IndexMark> = Vec::new();
        let mut good_len: u64 = 0;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|err| StorageError::io(what(), err))?;
            if n == 0 {
                break;
            }
            let Some(body) = line.strip_suffix(b"\n") else {
                // No newline: the last append was cut short.
                break;
            };
            if body.iter().all(u8::is_ascii_whitespace) {
                good_len += n as u64;
                continue;
            }
            match serde_json::from_slice::<AgentRunEvent>(body) {
                Ok(event) => {
                    if event.seq <= last_seq {
                        return Err(StorageError::corrupt(
                            what(),
                            format!("seq {} follows seq {last_seq}", event.seq),
                        ));
                    }
                    if index
                        .last()
                        .is_none_or(|mark| event.seq >= mark.seq + INDEX_STRIDE)
                    {
                        index.push(IndexMark {
                            seq: event.seq,
                            offset: good_len,
                        });
                    }
                    last_seq = event.seq;
                    good_len += n as u64;
                }
                Err(err) => {
                    let at_end = reader
                        .fill_buf()
                        .map_err(|err| StorageError::io(what(), err))?
                        .is_empty();
                    if at_end {
                        // A complete but unparsable last line is a torn write too.
                        break;
                    }
                    return Err(StorageError::corrupt(
                        what(),
                        format!("line at byte {good_len}: {err}"),
                    ));
                }
            }
        }
        drop(reader);
        if good_len < file_len {
            file.set_len(good_len)
                .and_then(|()| file.sync_all())
                .map_err(|err| StorageError::io(what(), err))?;
        }
        drop(file);
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|err| StorageError::io(what(), err))?;
        Ok(Self {
            path,
            file,
            last_seq,
            len: good_len,
            index,
        })
    }

    /// Appends one event with the next seq, as one write of the whole line.
    fn append(&mut self, event: NewRunEvent) -> StorageResult<AgentRunEvent> {
        let event = event.with_seq(self.last_seq + 1);
        let mut line = serde_json::to_vec(&event)
            .map_err(|err| StorageError::Other(format!("cannot serialize event: {err}")))?;
        line.push(b'\n');
        if let Err(err) = self.file.write_all(&line).and_then(|()| self.file.flush()) {
            // Roll back a partial line; if even that fails the caller drops this state and the
            // next open repairs the tail.
            let _ = self.file.set_len(self.len);
            return Err(StorageError::io(self.path.display().to_string(), err));
        }
        if self
            .index
            .last()
            .is_none_or(|mark| event.seq >= mark.seq + INDEX_STRIDE)
        {
            self.index.push(IndexMark {
                seq: event.seq,
                offset: self.len,
            });
        }
        self.len += line.len() as u64;
        self.last_seq = event.seq;
        Ok(event)
    }
}

/// Byte offset of the last indexed event at or before `seq` (0 when none).
fn offset_at_or_before(index: &[IndexMark], seq: u64) -> u64 {
    let after = index.partition_point(|mark| mark.seq <= seq);
    after
        .checked_sub(1)
        .and_then(|i| index.get(i))
        .map_or(0, |mark| mark.offset)
}

/// Takes the journal lock and opens the journal if this process has not yet done so.
fn ensure_open<'a>(
    inner: &Inner,
    run_id: &RunId,
    guard: &'a mut OwnedMutexGuard<Option<JournalState>>,
) -> StorageResult<&'a mut JournalState> {
    if guard.is_none() {
        **guard = Some(JournalState::open(inner, run_id)?);
    }
    guard
        .as_mut()
        .ok_or_else(|| StorageError::Other("journal state vanished".to_owned()))
}

/// What a page read needs from the locked state; the read itself runs without the lock, bounded
/// by the length the file had when the page was requested.
struct ReadPlan {
    path: PathBuf,
    end: u64,
    start: u64,
}

/// Streams the complete event lines in `[start, end)` of the journal to `visit` until it
/// returns `false`.
fn stream_events(
    inner: &Inner,
    path: &Path,
    start: u64,
    end: u64,
    mut visit: impl FnMut(AgentRunEvent) -> bool,
) -> StorageResult<()> {
    if start >= end {
        return Ok(());
    }
    let what = || path.display().to_string();
    let mut file = File::open(path).map_err(|err| StorageError::io(what(), err))?;
    file.seek(SeekFrom::Start(start))
        .map_err(|err| StorageError::io(what(), err))?;
    let mut reader = BufReader::new(CountingReader {
        inner: file.take(end - start),
        counter: &inner.journal_bytes_read,
    });
    let mut offset = start;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| StorageError::io(what(), err))?;
        if n == 0 {
            return Ok(());
        }
        let Some(body) = line.strip_suffix(b"\n") else {
            return Err(StorageError::corrupt(
                what(),
                format!("line at byte {offset} has no end"),
            ));
        };
        offset += n as u64;
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let event: AgentRunEvent = serde_json::from_slice(body).map_err(|err| {
            StorageError::corrupt(what(), format!("line before byte {offset}: {err}"))
        })?;
        if !visit(event) {
            return Ok(());
        }
    }
}

/// The last `limit` events with seq below `before` that pass the page filter, read from `start`.
fn last_before(
    inner: &Inner,
    plan: &ReadPlan,
    start: u64,
    before: u64,
    page: &EventPage,
) -> StorageResult<VecDeque<AgentRunEvent>> {
    let limit = page.effective_limit();
    let mut ring: VecDeque<AgentRunEvent> = VecDeque::with_capacity(limit);
    stream_events(inner, &plan.path, start, plan.end, |event| {
        if event.seq >= before {
            return false;
        }
        if page.matches(&event) {
            if ring.len() == limit {
                ring.pop_front();
            }
            ring.push_back(event);
        }
        true
    })?;
    Ok(ring)
}

fn read_page(
    inner: &Inner,
    plan: &ReadPlan,
    page: &EventPage,
) -> StorageResult<Vec<AgentRunEvent>> {
    let limit = page.effective_limit();
    if let Some(before) = page.before_seq {
        let mut ring = last_before(inner, plan, plan.start, before, page)?;
        if ring.len() < limit && plan.start > 0 {
            // Seqs are gapless when written by this store, so this only happens with a journal
            // that has gaps: fall back to scanning from the beginning.
            ring = last_before(inner, plan, 0, before, page)?;
        }
        return Ok(ring.into());
    }
    let after = page.after_seq.unwrap_or(0);
    let mut events = Vec::with_capacity(limit.min(64));
    stream_events(inner, &plan.path, plan.start, plan.end, |event| {
        if event.seq > after && page.matches(&event) {
            events.push(event);
        }
        events.len() < limit
    })?;
    Ok(events)
}

#[async_trait]
impl RunJournal for UserDataStore {
    async fn append(&self, event: NewRunEvent) -> StorageResult<AgentRunEvent> {
        let slot = self.inner.journal_slot(&event.run_id);
        let mut guard = slot.lock_owned().await;
        self.blocking(move |inner| {
            let run_id = event.run_id.clone();
            let result = ensure_open(inner, &run_id, &mut guard)?.append(event);
            if result.is_err() {
                *guard = None;
            }
            result
        })
        .await
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        let slot = self.inner.journal_slot(run_id);
        let mut guard = slot.lock_owned().await;
        let run_id = run_id.clone();
        let page = page.clone();
        self.blocking(move |inner| {
            let state = ensure_open(inner, &run_id, &mut guard)?;
            let limit = page.effective_limit() as u64;
            let start = match (page.before_seq, &page.invocation_id) {
                // Filtered before-pages may need matches from anywhere below `before`.
                (Some(_), Some(_)) => 0,
                (Some(before), None) => {
                    offset_at_or_before(&state.index, before.saturating_sub(limit))
                }
                (None, _) => {
                    offset_at_or_before(&state.index, page.after_seq.unwrap_or(0).saturating_add(1))
                }
            };
            let plan = ReadPlan {
                path: state.path.clone(),
                end: state.len,
                start,
            };
            drop(guard);
            read_page(inner, &plan, &page)
        })
        .await
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        let slot = self.inner.journal_slot(run_id);
        let mut guard = slot.lock_owned().await;
        let run_id = run_id.clone();
        self.blocking(move |inner| Ok(ensure_open(inner, &run_id, &mut guard)?.last_seq))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_index_lookup_finds_the_nearest_earlier_mark() {
        let index = [
            IndexMark { seq: 1, offset: 0 },
            IndexMark {
                seq: 65,
                offset: 6_400,
            },
            IndexMark {
                seq: 129,
                offset: 12_800,
            },
        ];
        assert_eq!(offset_at_or_before(&index, 0), 0);
        assert_eq!(offset_at_or_before(&index, 1), 0);
        assert_eq!(offset_at_or_before(&index, 64), 0);
        assert_eq!(offset_at_or_before(&index, 65), 6_400);
        assert_eq!(offset_at_or_before(&index, 128), 6_400);
        assert_eq!(offset_at_or_before(&index, u64::MAX), 12_800);
        assert_eq!(offset_at_or_before(&[], 10), 0);
    }
}
