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

/// The high bit of a byte of `word` is set in the answer if some byte of `word` must be
/// escaped in a JSON string: a control character (below 0x20), `"` or `\\`. The answer is
/// zero exactly when none must be; which bits are set beyond that is not exact (a borrow can
/// mark the byte above one that must be escaped). Bytes of multi-byte characters (0x80 and
/// above) never need it, as `serde_json` writes them.
const fn escape_bits(word: u64) -> u64 {
    // A byte below `n` borrows into its high bit when `n` is subtracted; `!word` drops bytes
    // that had their high bit already. XOR turns `"` and `\\` into zero bytes (below 1), and
    // leaves the high bits as they were, so one `!word` serves all three tests.
    let below_space = word.wrapping_sub(splat(0x20));
    let quote = (word ^ splat(b'"')).wrapping_sub(LOW_BITS);
    let backslash = (word ^ splat(b'\\')).wrapping_sub(LOW_BITS);
    (below_space | quote | backslash) & !word & HIGH_BITS
}

/// Whether one of the eight bytes of `word` must be escaped.
const fn needs_escape(word: u64) -> bool {
    escape_bits(word) != 0
}

/// The eight bytes of `bytes` from `at`, as a word, if there are eight.
fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let eight: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_ne_bytes(eight))
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
    // plain run are char boundaries. Sixteen bytes are tested per step, then eight.
    let mut pending = 0;
    let mut at = 0;
    while let (Some(first), Some(second)) = (word_at(bytes, at), word_at(bytes, at + 8)) {
        if escape_bits(first) | escape_bits(second) != 0 {
            pending = put_escaped_bytes(sink, text, pending, at, at + 16);
        }
        at += 16;
    }
    if let Some(word) = word_at(bytes, at) {
        if needs_escape(word) {
            pending = put_escaped_bytes(sink, text, pending, at, at + 8);
        }
        at += 8;
    }
    // The last partial word: if the eight bytes ending the text (read again where they
    // overlap the last whole word) are plain, so is the rest.
    let plain_ending = at == bytes.len()
        || bytes
            .len()
            .checked_sub(8)
            .and_then(|start| word_at(bytes, start))
            .is_some_and(|word| !needs_escape(word));
    if !plain_ending {
        pending = put_escaped_bytes(sink, text, pending, at, bytes.len());
    }
    sink.put(text.get(pending..).unwrap_or_default());
    sink.put_ascii(b'"');
}

/// Appends `key` as an object key and its colon (`"key":`). Struct keys are field names,
/// short and plain: those of at most 16 bytes are checked with two overlapping words (or byte
/// by byte under eight) and written in one piece; any other goes through [`put_quoted`].
#[inline]
pub(crate) fn put_key(sink: &mut (impl JsonSink + ?Sized), key: &str) {
    let bytes = key.as_bytes();
    let plain = match bytes.len() {
        0..8 => bytes.iter().all(|&byte| ESCAPES[usize::from(byte)] == 0),
        8..=16 => {
            let last = bytes.len() - 8;
            matches!((word_at(bytes, 0), word_at(bytes, last)),
                (Some(first), Some(second)) if escape_bits(first) | escape_bits(second) == 0)
        }
        _ => false,
    };
    if plain {
        sink.put_ascii(b'"');
        sink.put(key);
        sink.put("\":");
    } else {
        put_quoted(sink, key);
        sink.put_ascii(b':');
    }
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
            // At each position of a two-word step, of a one-word step and of the tail.
            for before in 0..40 {
                for after in [0, 1, 7, 9, 17] {
                    let text = format!("{}{one}é{}", "a".repeat(before), "b".repeat(after));
                    assert_eq!(
                        quoted(&text),
                        serde_json::to_string(&text).unwrap_or_default()
                    );
                }
            }
        }
    }

    #[test]
    fn plain_and_multibyte_text_is_copied_as_it_is() {
        let long = "0123456789abcdef".repeat(5);
        for text in [
            "",
            "a",
            "abcdefgh",
            "abcdefghi",
            "日本語のテキスト",
            "\u{7F}\u{80}\u{FFFF}",
            &long,
        ] {
            assert_eq!(
                quoted(text),
                serde_json::to_string(text).unwrap_or_default()
            );
        }
    }

    #[test]
    fn keys_are_written_as_quoted_strings_with_a_colon() {
        for byte in 0u8..=0x7F {
            for len in 1..=20 {
                for at in 0..len {
                    let mut key = "k".repeat(len);
                    key.replace_range(at..=at, &char::from(byte).to_string());
                    let mut out = String::new();
                    put_key(&mut out, &key);
                    assert_eq!(out, format!("{}:", quoted(&key)));
                }
            }
        }
        let mut out = String::new();
        put_key(&mut out, "");
        assert_eq!(out, "\"\":");
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
