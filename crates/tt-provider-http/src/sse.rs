//! A server-sent events decoder over raw byte chunks: chunk boundaries may fall anywhere,
//! inside a line, a `\r\n` pair or a multi-byte UTF-8 character.

/// One dispatched event: its `event:` name (if any) and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Incremental decoder: feed byte chunks, collect complete events.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a leading `\n` in the next chunk belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    /// Decodes `chunk`, returning every event it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match byte {
                b'\n' if after_cr => {}
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut events);
                }
                other => self.line.push(other),
            }
        }
        events
    }

    /// The stream ended: an event still being collected is dispatched (servers that omit the
    /// final blank line lose nothing).
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut events);
        }
        self.end_line(&mut events);
        events.pop()
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let line = String::from_utf8_lossy(&raw);
        if line.is_empty() {
            if !self.data.is_empty() {
                events.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            self.event = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            // `id` and `retry` do not matter for a single model response.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "event: a\ndata: {\"x\":\"é\"}\n\n: comment\r\ndata: one\r\ndata: two\r\n\r\ndata:tight\rid: 7\r\rdata: [DONE]\n\n";

    fn decode_in_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            events.extend(decoder.feed(&bytes[start..cut]));
            start = cut;
        }
        events.extend(decoder.feed(&bytes[start..]));
        events.extend(decoder.finish());
        events
    }

    fn expected() -> Vec<SseEvent> {
        vec![
            SseEvent {
                event: Some("a".into()),
                data: "{\"x\":\"é\"}".into(),
            },
            SseEvent {
                event: None,
                data: "one\ntwo".into(),
            },
            SseEvent {
                event: None,
                data: "tight".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ]
    }

    #[test]
    fn decodes_whole_stream() {
        assert_eq!(decode_in_pieces(STREAM.as_bytes(), &[]), expected());
    }

    #[test]
    fn every_single_split_point_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        for cut in 0..=bytes.len() {
            assert_eq!(decode_in_pieces(bytes, &[cut]), expected(), "cut at {cut}");
        }
    }

    #[test]
    fn byte_by_byte_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        let cuts: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(decode_in_pieces(bytes, &cuts), expected());
    }

    #[test]
    fn unterminated_last_event_is_dispatched_at_the_end() {
        let mut decoder = SseDecoder::default();
        assert!(decoder.feed(b"data: tail").is_empty());
        assert_eq!(
            decoder.finish(),
            Some(SseEvent {
                event: None,
                data: "tail".into()
            })
        );
        assert_eq!(decoder.finish(), None);
    }
}
