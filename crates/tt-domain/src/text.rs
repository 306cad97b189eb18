//! Text metrics and hashing shared by tools, events and storage: char and word counts, sha256,
//! and compact JSON text written without growing a buffer per value.

use ring::digest::{Context, SHA256, digest};

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    lower_hex(digest(&SHA256, bytes).as_ref())
}

/// Lowercase hex of the first `len` bytes of the sha256 of `parts` one after the other: the
/// first `2 * len` characters of [`sha256_hex`] of their concatenation, without building it
/// or the whole hex.
pub fn sha256_hex_prefix(parts: &[&[u8]], len: usize) -> String {
    let mut hasher = Context::new(&SHA256);
    for part in parts {
        hasher.update(part);
    }
    let digest = hasher.finish();
    let digest = digest.as_ref();
    lower_hex(digest.get(..len).unwrap_or(digest))
}

/// `bytes` in lowercase hex, two digits a byte, written straight into a string of its size
/// (collecting an iterator of chars cost about 2,000 instructions for a sha256, more than a
/// third of hashing a short text).
fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        // Both indexes are below 16.
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

/// Scratch buffers larger than this are not kept for the next value.
const KEPT_SCRATCH_CAPACITY: usize = 64 * 1024;

thread_local! {
    /// Each thread's scratch buffer for a value being serialized by [`json_text`].
    static SCRATCH: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// `value` as compact JSON text, as `serde_json::to_string` writes it
/// ([`write_json`](crate::json_writer::write_json)): written into a buffer this thread reuses
/// and copied out at its size, so the text costs one allocation however it grows while being
/// written.
pub fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    json_text_written(|text| crate::json_writer::write_json(text, value))
}

/// The text `write` writes, written into this thread's reusable buffer (which it finds empty)
/// and copied out at its size, as [`json_text`] does.
pub fn json_text_written(
    write: impl FnOnce(&mut String) -> Result<(), serde_json::Error>,
) -> Result<String, serde_json::Error> {
    let mut scratch = SCRATCH.with(std::cell::Cell::take);
    scratch.clear();
    let text = write(&mut scratch).map(|()| scratch.as_str().to_owned());
    if scratch.capacity() <= KEPT_SCRATCH_CAPACITY {
        SCRATCH.with(|cell| cell.set(scratch));
    }
    text
}

/// Number of Unicode scalar values, the contract's "chars".
pub fn char_count(text: &str) -> usize {
    text.chars().count()
}

/// Number of whitespace-separated words; each CJK ideograph counts as one word so that counts
/// stay meaningful for Chinese and Japanese prose.
pub fn word_count(text: &str) -> usize {
    let mut in_word = false;
    // All ASCII (the common case, checked a word at a time): one pass without char decoding.
    if text.is_ascii() {
        return ascii_words(text.as_bytes(), &mut in_word);
    }
    let mut words = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().take_while(u8::is_ascii).count();
        let (head, tail) = rest.split_at(ascii);
        words += ascii_words(head.as_bytes(), &mut in_word);
        let mut chars = tail.chars();
        let Some(ch) = chars.next() else {
            break;
        };
        words += words_begun_by(ch, &mut in_word);
        rest = chars.as_str();
    }
    words
}

/// Words begun in ASCII `bytes`, after text that ended inside a word if `in_word` (left as
/// the bytes end). No ASCII char is CJK, and its whitespace is what `char::is_whitespace`
/// says: tab, line feed, vertical tab, form feed, carriage return, space. Eight bytes are
/// counted at a time.
fn ascii_words(bytes: &[u8], in_word: &mut bool) -> usize {
    const HIGH_BITS: u64 = u64::from_le_bytes([0x80; 8]);
    let mut words = 0;
    let mut inside = *in_word;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        // Byte `i` of the word is byte `i` of the text; its high bit says "whitespace".
        let space = ascii_space_bits(u64::from_le_bytes(eight));
        let solid = !space & HIGH_BITS;
        // A word begins at a solid byte after whitespace (or after the previous chunk's
        // whitespace, for the first byte).
        let space_before = (space << 8) | if inside { 0 } else { 0x80 };
        words += (solid & space_before).count_ones() as usize;
        inside = solid >> 63 != 0;
    }
    for &byte in chunks.remainder() {
        let space = matches!(byte, b'\t'..=b'\r' | b' ');
        words += usize::from(!space & !inside);
        inside = !space;
    }
    *in_word = inside;
    words
}

/// The high bit of each byte of `word` (eight ASCII bytes) set exactly when that byte is
/// whitespace: a space, or 9 to 13.
const fn ascii_space_bits(word: u64) -> u64 {
    const fn splat(byte: u8) -> u64 {
        u64::from_le_bytes([byte; 8])
    }
    const LOW_SEVEN: u64 = splat(0x7F);
    const HIGH_BITS: u64 = splat(0x80);
    // No carry crosses a byte: every byte is below 0x80, and so is its low part after XOR.
    let spaces = word ^ splat(b' ');
    let nonzero = ((spaces & LOW_SEVEN) + LOW_SEVEN) | spaces;
    let is_space = !nonzero & HIGH_BITS;
    let from_tab = word.wrapping_add(splat(0x80 - b'\t'));
    let past_return = word.wrapping_add(splat(0x80 - (b'\r' + 1)));
    let is_control_space = from_tab & !past_return & HIGH_BITS;
    is_space | is_control_space
}

/// Whether `ch` begins a word (1) or not (0), given whether the text before it ended inside
/// one (`in_word`, updated): a CJK char is a word of its own, whitespace ends a word.
fn words_begun_by(ch: char, in_word: &mut bool) -> usize {
    if is_cjk(ch) {
        *in_word = false;
        1
    } else if ch.is_whitespace() {
        *in_word = false;
        0
    } else if !*in_word {
        *in_word = true;
        1
    } else {
        0
    }
}

fn is_cjk(ch: char) -> bool {
    matches!(ch as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF)
}

/// Returns at most `max_chars` chars of `text`, and whether it was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => (&text[..byte_index], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hex_prefix_is_the_start_of_the_whole_hex_of_the_parts_joined() {
        let parts: [&[u8]; 3] = [b"inv_root", b"/12/", "call_é".as_bytes()];
        let whole = sha256_hex(&parts.concat());
        for len in [0, 8, 32] {
            assert_eq!(sha256_hex_prefix(&parts, len), whole[..2 * len]);
        }
        assert_eq!(sha256_hex_prefix(&parts, 99), whole);
    }

    #[test]
    fn json_text_writes_what_to_string_writes_and_fails_as_it_fails() {
        let big = "é\"\n".repeat(40_000);
        let values = [
            serde_json::json!({"b": 1, "a": "x\n\"y\"", "z": [1.5, null, true]}),
            serde_json::json!(big),
            serde_json::json!("after a buffer that was not kept"),
            serde_json::Value::Null,
        ];
        for value in &values {
            assert_eq!(
                json_text(value).unwrap(),
                serde_json::to_string(value).unwrap()
            );
        }
        let bad = std::collections::BTreeMap::from([((1, 2), "a map key that is not a string")]);
        assert!(json_text(&bad).is_err());
        assert_eq!(json_text("next").unwrap(), r#""next""#);
    }

    /// `word_count` as it was before its ASCII fast path: the reference it must agree with.
    fn word_count_by_chars(text: &str) -> usize {
        let mut words = 0;
        let mut in_word = false;
        for ch in text.chars() {
            words += words_begun_by(ch, &mut in_word);
        }
        words
    }

    #[test]
    fn ascii_words_are_counted_as_char_by_char_at_every_offset() {
        const ALPHABET: &[u8] = b"ab \t\n\x0b\x0c\r\x1c~";
        let mut state = 47u64;
        for _ in 0..4_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let len = (state >> 58) as usize;
            let text: String = (0..len)
                .map(|i| {
                    let pick = (state >> (i % 50)) as usize % ALPHABET.len();
                    char::from(ALPHABET[pick])
                })
                .collect();
            assert_eq!(word_count(&text), word_count_by_chars(&text), "{text:?}");
        }
    }

    #[test]
    fn word_count_agrees_with_the_char_by_char_count() {
        let ascii: String = (0u8..128).map(char::from).collect();
        for text in [
            "",
            " ",
            "one",
            ascii.as_str(),
            "a\u{0B}b\u{0C}c\u{1C}d\u{1F}e\u{85}f\u{A0}g",
            "mixed 日本語 text,\u{3000}wide\u{2003}space édition",
            "漢字かなカナ한국어 end",
            "tail é",
            "é",
        ] {
            assert_eq!(word_count(text), word_count_by_chars(text), "{text:?}");
        }
    }

    #[test]
    fn counts_words_and_chars() {
        assert_eq!(word_count("Hello  brave\nnew world"), 4);
        assert_eq!(word_count("你好 world"), 3);
        assert_eq!(char_count("héllo"), 5);
        assert_eq!(word_count(""), 0);
    }

    #[test]
    fn hex_has_two_lowercase_digits_a_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(lower_hex(&all), expected);
        assert_eq!(
            sha256_hex_prefix(&[b"a", b"bc"], 4),
            sha256_hex(b"abc")[..8]
        );
    }

    #[test]
    fn hashes_like_sha256sum() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("hi", 5), ("hi", false));
    }
}
