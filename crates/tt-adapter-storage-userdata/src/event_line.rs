//! A journal event as the line the file store appends: serialized once, before the run's lock
//! is taken, into one of the buffers each thread reuses, with room in front for its seq, which
//! is known only under the lock.

use serde::Serialize;
use tt_domain::event::NewRunEvent;
use tt_domain::ids::RunId;
use tt_domain::time::Timestamp;
use tt_ports::{StorageError, StorageResult};

/// An event line without its seq and its payload: `{"id":…,"runId":…,…}`, in the field order
/// of [`AgentRunEvent`], so that `{"seq":N,` in front of it and the payload's text at its end
/// make the stored line.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventLineTail<'a> {
    id: &'a tt_domain::ids::EventId,
    run_id: &'a RunId,
    timestamp: &'a Timestamp,
    level: &'a tt_domain::event::EventLevel,
    #[serde(rename = "type")]
    event_type: &'a str,
}

/// Room kept in front of an event's serialized tail for `{"seq":N,` (at most 28 bytes).
const SEQ_ROOM: usize = 28;

/// Room for an event's envelope without its seq: ids, time, level, type, the field names and
/// the payload's key (about 170 bytes for the longest event type).
const TAIL_ROOM: usize = 192;

/// Buffers larger than this are not kept for the next event.
const KEPT_LINE_CAPACITY: usize = 64 * 1024;

/// How many buffers a thread keeps: enough for the lines of one unit (a tool call's or a
/// model turn's events are three to six).
const KEPT_LINES: usize = 8;

thread_local! {
    /// Each thread's event-line buffers, reused from unit to unit: the events of a unit are
    /// serialized and written without allocating.
    static EVENT_LINES: std::cell::RefCell<Vec<Vec<u8>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// One event line being built: [`SEQ_ROOM`] bytes of room, then the event without its seq
/// (`{"id":…,"runId":…,…}` and the newline, in the field order of [`AgentRunEvent`]).
pub(crate) struct EventLine {
    buf: Vec<u8>,
}

impl EventLine {
    /// Serializes `event` into this thread's buffer.
    pub(crate) fn new(event: &NewRunEvent) -> StorageResult<Self> {
        let mut buf = EVENT_LINES
            .with(|lines| lines.borrow_mut().pop())
            .unwrap_or_default();
        buf.clear();
        // The whole line at once: a fresh buffer grown while serializing would be reallocated
        // four or five times.
        buf.reserve(SEQ_ROOM + TAIL_ROOM + event.payload.get().len());
        buf.resize(SEQ_ROOM, b' ');
        let mut line = Self { buf };
        tt_domain::json_writer::write_json(
            &mut line.buf,
            &EventLineTail {
                id: &event.id,
                run_id: &event.run_id,
                timestamp: &event.timestamp,
                level: &event.level,
                event_type: event.event_type.as_str(),
            },
        )
        .map_err(|err| StorageError::Other(format!("cannot serialize an event: {err}")))?;
        // The payload, serialized when the event was built, copied in as it is in place of
        // the tail's closing `}`.
        line.buf.pop();
        line.buf.extend_from_slice(b",\"payload\":");
        line.buf.extend_from_slice(event.payload.get().as_bytes());
        line.buf.extend_from_slice(b"}\n");
        Ok(line)
    }

    /// At least the length of the line [`with_seq`](Self::with_seq) gives (the room for the
    /// seq included).
    pub(crate) fn max_len(&self) -> usize {
        self.buf.len()
    }

    /// The whole line with `seq`: `{"seq":N,` takes the place of the tail's `{`.
    pub(crate) fn with_seq(&mut self, seq: u64) -> &[u8] {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = seq;
        loop {
            at -= 1;
            if let Some(digit) = digits.get_mut(at) {
                *digit = b'0' + (rest % 10) as u8;
            }
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let digits = digits.get(at..).unwrap_or_default();
        let prefix_len = b"{\"seq\":".len() + digits.len() + 1;
        let start = SEQ_ROOM + 1 - prefix_len;
        let mut room = self.buf.get_mut(start..=SEQ_ROOM).into_iter().flatten();
        for (slot, byte) in (&mut room).zip(b"{\"seq\":".iter().chain(digits).chain(b",")) {
            *slot = *byte;
        }
        self.buf.get(start..).unwrap_or_default()
    }
}

impl Drop for EventLine {
    fn drop(&mut self) {
        if self.buf.capacity() <= KEPT_LINE_CAPACITY {
            let buf = std::mem::take(&mut self.buf);
            EVENT_LINES.with(|lines| {
                let mut lines = lines.borrow_mut();
                if lines.len() < KEPT_LINES {
                    lines.push(buf);
                }
            });
        }
    }
}
