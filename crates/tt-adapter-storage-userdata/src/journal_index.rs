//! Reading `events.jsonl` without loading it: the sparse seq → byte-offset index
//! ([`JournalIndex`]), a reader's [`JournalView`] that extends it by the lines appended since
//! its last read (up to the last complete line), and page reads that seek through the index
//! and stream lines. Knows files only, not the store, so the store and the owner both use it.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use tt_domain::event::AgentRunEvent;
use tt_ports::{EventPage, StorageError, StorageResult};

use crate::fsutil;
use crate::layout::EVENTS_FILE;
use crate::segment;

/// Bytes read from the journal at a time when streaming events (`BufReader`'s default).
const READ_BUFFER: usize = 8 * 1024;

/// One sparse index entry every this many events.
const INDEX_STRIDE: u64 = 64;

#[derive(Debug, Clone, Copy)]
struct IndexMark {
    seq: u64,
    offset: u64,
}

/// Where the events of a journal are: the last seq, the end of the last complete line, and a
/// sparse seq → byte-offset index.
#[derive(Debug, Clone, Default)]
pub(crate) struct JournalIndex {
    pub(crate) last_seq: u64,
    pub(crate) len: u64,
    marks: Vec<IndexMark>,
}

impl JournalIndex {
    /// Takes note of the event `seq` found at `offset` while scanning; seqs must increase.
    pub(crate) fn observe(&mut self, seq: u64, offset: u64) -> Result<(), String> {
        if seq <= self.last_seq {
            return Err(format!("seq {seq} follows seq {}", self.last_seq));
        }
        self.mark(seq, offset);
        Ok(())
    }

    /// Records `seq` as the last one, indexing it when a stride has passed since the last mark.
    fn mark(&mut self, seq: u64, offset: u64) {
        if self
            .marks
            .last()
            .is_none_or(|mark| seq >= mark.seq + INDEX_STRIDE)
        {
            self.marks.push(IndexMark { seq, offset });
        }
        self.last_seq = seq;
    }

    /// Takes note of an event just appended as `line_len` bytes at `offset`.
    pub(crate) fn observe_append(&mut self, seq: u64, offset: u64, line_len: u64) {
        self.mark(seq, offset);
        self.len = offset + line_len;
    }

    /// Byte offset of the last indexed event at or before `seq` (0 when none).
    fn offset_at_or_before(&self, seq: u64) -> u64 {
        let after = self.marks.partition_point(|mark| mark.seq <= seq);
        after
            .checked_sub(1)
            .and_then(|i| self.marks.get(i))
            .map_or(0, |mark| mark.offset)
    }
}

/// A reader's view of a journal some other process (or nobody) writes.
#[derive(Debug, Default)]
pub(crate) struct JournalView {
    index: JournalIndex,
}

impl JournalView {
    /// Reads the complete lines appended since the last refresh. Never writes: a cut-off last
    /// line is left for its owner (or the next owner) to finish or repair.
    pub(crate) fn refresh(
        &mut self,
        bytes_read: &AtomicU64,
        dir: &Path,
    ) -> StorageResult<&JournalIndex> {
        let path = dir.join(EVENTS_FILE);
        let Some(mut file) = segment::open_for_reading(&path)? else {
            return Ok(&self.index);
        };
        let index = &mut self.index;
        let end = segment::scan(&path, &mut file, index.len, bytes_read, |offset, body| {
            let event: AgentRunEvent =
                serde_json::from_slice(body).map_err(|err| err.to_string())?;
            index.observe(event.seq, offset)
        })?;
        index.len = end.good_len;
        Ok(&self.index)
    }
}

/// What a page read needs; the read itself runs without any lock, bounded by the length the
/// journal had when the page was requested.
pub(crate) struct ReadPlan {
    path: PathBuf,
    end: u64,
    start: u64,
}

impl ReadPlan {
    pub(crate) fn new(path: PathBuf, index: &JournalIndex, page: &EventPage) -> Self {
        let limit = page.effective_limit() as u64;
        let start = match (page.before_seq, &page.invocation_id) {
            // Filtered before-pages may need matches from anywhere below `before`.
            (Some(_), Some(_)) => 0,
            (Some(before), None) => index.offset_at_or_before(before.saturating_sub(limit)),
            (None, _) => index.offset_at_or_before(page.after_seq.unwrap_or(0).saturating_add(1)),
        };
        Self {
            path,
            end: index.len,
            start,
        }
    }
}

/// Streams the complete event lines in `[start, end)` of the journal to `visit` until it
/// returns `false`.
fn stream_events(
    bytes_read: &AtomicU64,
    path: &Path,
    start: u64,
    end: u64,
    mut visit: impl FnMut(AgentRunEvent) -> bool,
) -> StorageResult<()> {
    if start >= end {
        return Ok(());
    }
    let what = || path.display().to_string();
    let file = File::open(path).map_err(|err| StorageError::io(what(), err))?;
    let mut reader =
        fsutil::counted_reader_from(path, file, (start, end - start), READ_BUFFER, bytes_read)?;
    let mut offset = start;
    let mut line = Vec::new();
    loop {
        let n = fsutil::next_line(&mut reader, &mut line, path)?;
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
    bytes_read: &AtomicU64,
    plan: &ReadPlan,
    start: u64,
    before: u64,
    page: &EventPage,
) -> StorageResult<VecDeque<AgentRunEvent>> {
    let limit = page.effective_limit();
    let mut ring: VecDeque<AgentRunEvent> = VecDeque::with_capacity(limit);
    stream_events(bytes_read, &plan.path, start, plan.end, |event| {
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

pub(crate) fn read_page(
    bytes_read: &AtomicU64,
    plan: &ReadPlan,
    page: &EventPage,
) -> StorageResult<Vec<AgentRunEvent>> {
    let limit = page.effective_limit();
    if let Some(before) = page.before_seq {
        let mut ring = last_before(bytes_read, plan, plan.start, before, page)?;
        if ring.len() < limit && plan.start > 0 {
            // Seqs are gapless when written by this store, so this only happens with a journal
            // that has gaps: fall back to scanning from the beginning.
            ring = last_before(bytes_read, plan, 0, before, page)?;
        }
        return Ok(ring.into());
    }
    let after = page.after_seq.unwrap_or(0);
    let mut events = Vec::with_capacity(limit.min(64));
    stream_events(bytes_read, &plan.path, plan.start, plan.end, |event| {
        if event.seq > after && page.matches(&event) {
            events.push(event);
        }
        events.len() < limit
    })?;
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_index_lookup_finds_the_nearest_earlier_mark() {
        let mut index = JournalIndex::default();
        for (seq, offset) in [(1, 0), (65, 6_400), (129, 12_800)] {
            index.observe(seq, offset).unwrap();
        }
        assert_eq!(index.marks.len(), 3);
        assert_eq!(index.offset_at_or_before(0), 0);
        assert_eq!(index.offset_at_or_before(1), 0);
        assert_eq!(index.offset_at_or_before(64), 0);
        assert_eq!(index.offset_at_or_before(65), 6_400);
        assert_eq!(index.offset_at_or_before(128), 6_400);
        assert_eq!(index.offset_at_or_before(u64::MAX), 12_800);
        assert_eq!(JournalIndex::default().offset_at_or_before(10), 0);
        assert!(index.observe(129, 13_000).is_err());
    }
}
