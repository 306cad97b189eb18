//! Where JSON text goes, and strings written into it quoted and escaped: escaping is scanned
//! for eight bytes at a time, since almost every string the runtime writes has nothing to
//! escape.

/// A buffer JSON text is appended to. Only whole `str`s and ASCII bytes are appended, so a
/// `String` stays valid UTF-8 without a check.
pub trait JsonSink {
    /// Appends `text`.
    fn put(&mut self, text: &str);

    /// Appends one ASCII character (a quote, a bracket, a comma).
    fn put_ascii(&mut self, ascii: u8);
}

impl JsonSink for String {
    #[inline]
    fn put(&mut self, text: &str) {
        self.push_str(text);
    }

    #[inline]
    fn put_ascii(&mut self, ascii: u8) {
        self.push(char::from(ascii));
    }
}

impl JsonSink for Vec<u8> {
    #[inline]
    fn put(&mut self, text: &str) {
        self.extend_from_slice(text.as_bytes());
    }

    #[inline]
    fn put_ascii(&mut self, ascii: u8) {
        self.push(ascii);
    }
}

/// Eight copies of `byte`.
const fn splat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

const LOW_BITS: u64 = splat(0x01);
const HIGH_BITS: u64 = splat(0x80);

/// Whether one of the eight bytes of `word` is zero (exact: a borrow can only mark a byte above
/// one that is zero).
const fn has_zero_byte(word: u64) -> bool {
    word.wrapping_sub(LOW_BITS) & !word & HIGH_BITS != 0
}

/// Whether one of the eight bytes of `word` must be escaped in a JSON string: a control
/// character (below 0x20), `"` or `\`. Bytes of multi-byte characters (0x80 and above) never
/// are, as `serde_json` writes them.
const fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(splat(0x20)) & !word & HIGH_BITS != 0;
    below_space || has_zero_byte(word ^ splat(b'"')) || has_zero_byte(word ^ splat(b'\\'))
}

/// For each byte, the letter of its escape (`\n` is `n`, `\u00XX` is `u`), or 0 if it is
/// written as it is: the same escapes `serde_json` writes.
static ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Writes the escape of `byte`, whose letter in [`ESCAPES`] is `letter`.
#[cold]
fn put_escape(sink: &mut (impl JsonSink + ?Sized), byte: u8, letter: u8) {
    sink.put_ascii(b'\\');
    sink.put_ascii(letter);
    if letter == b'u' {
        sink.put("00");
        sink.put_ascii(HEX_DIGITS[usize::from(byte >> 4)]);
        sink.put_ascii(HEX_DIGITS[usize::from(byte & 0x0F)]);
    }
}

/// Appends `text` as a JSON string: quoted, with `"`, `\` and control characters escaped
/// exactly as `serde_json` escapes them.
#[inline]
pub(crate) fn put_quoted(sink: &mut (impl JsonSink + ?Sized), text: &str) {
    sink.put_ascii(b'"');
    let bytes = text.as_bytes();
    // Short texts (most keys, levels, kinds) are checked byte by byte in one pass.
    if bytes.len() < 8 && bytes.iter().all(|&byte| ESCAPES[usize::from(byte)] == 0) {
        sink.put(text);
        sink.put_ascii(b'"');
        return;
    }
    // `text[pending..]` is not written yet; every escaped byte is ASCII, so both ends of each
    // plain run are char boundaries.
    let mut pending = 0;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        if needs_escape(u64::from_ne_bytes(eight)) {
            pending = put_escaped_bytes(sink, text, pending, at, at + 8);
        }
        at += 8;
    }
    // The last partial word: if the eight bytes ending the text (read again where they
    // overlap the last whole word) are plain, so is the rest.
    let ending = bytes
        .len()
        .checked_sub(8)
        .and_then(|start| bytes.get(start..));
    let plain_ending = at == bytes.len()
        || ending.is_some_and(|word| {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(word);
            !needs_escape(u64::from_ne_bytes(eight))
        });
    if !plain_ending {
        pending = put_escaped_bytes(sink, text, pending, at, bytes.len());
    }
    sink.put(text.get(pending..).unwrap_or_default());
    sink.put_ascii(b'"');
}

/// Writes the plain text before each byte of `text[from..to]` that needs escaping, and its
/// escape; answers where the unwritten text now starts.
fn put_escaped_bytes(
    sink: &mut (impl JsonSink + ?Sized),
    text: &str,
    mut pending: usize,
    from: usize,
    to: usize,
) -> usize {
    let bytes = text.as_bytes().get(from..to).unwrap_or_default();
    for (index, &byte) in (from..).zip(bytes) {
        let letter = ESCAPES[usize::from(byte)];
        if letter != 0 {
            sink.put(text.get(pending..index).unwrap_or_default());
            put_escape(sink, byte, letter);
            pending = index + 1;
        }
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(text: &str) -> String {
        let mut out = String::new();
        put_quoted(&mut out, text);
        out
    }

    #[test]
    fn every_byte_value_is_escaped_as_serde_json_escapes_it() {
        for byte in 0u8..=0x7F {
            let one = char::from(byte).to_string();
            // At each position of a word and past the last whole word.
            for before in 0..11 {
                let text = format!("{}{one}é{}", "a".repeat(before), "b".repeat(9));
                assert_eq!(
                    quoted(&text),
                    serde_json::to_string(&text).unwrap_or_default()
                );
            }
        }
    }

    #[test]
    fn plain_and_multibyte_text_is_copied_as_it_is() {
        for text in [
            "",
            "a",
            "abcdefgh",
            "abcdefghi",
            "日本語のテキスト",
            "\u{7F}\u{80}\u{FFFF}",
        ] {
            assert_eq!(
                quoted(text),
                serde_json::to_string(text).unwrap_or_default()
            );
        }
    }

    #[test]
    fn the_word_test_finds_exactly_the_bytes_to_escape() {
        for byte in 0u8..=0xFF {
            for position in 0..8 {
                let mut word = [b'a'; 8];
                word[position] = byte;
                let expected = byte < 0x20 || byte == b'"' || byte == b'\\';
                assert_eq!(
                    needs_escape(u64::from_ne_bytes(word)),
                    expected,
                    "{byte:#x}"
                );
            }
        }
    }
}
