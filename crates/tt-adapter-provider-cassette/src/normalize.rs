//! The normalised form of a request: what must be equal for a recorded answer to fit.

use serde_json::Value;
use std::collections::HashMap;
use tt_domain::model::AgentModelRequest;

/// Prefixes of the ids the runtime draws from its id generator; each is followed by 32 hex
/// digits. Longest first, so `prompt_assembly_` is not read as something shorter.
const ID_PREFIXES: &[&str] = &[
    "prompt_assembly_",
    "handoff_",
    "commit_",
    "task_",
    "run_",
    "inv_",
    "evt_",
];
const ID_DIGITS: usize = 32;

/// A request with its runtime ids replaced by placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct NormalizedRequest {
    pub profile: String,
    pub round: u32,
    /// The request as JSON, without its provider session, ids replaced.
    pub request: Value,
    /// SHA-256 (hex) of `request`'s compact JSON text.
    pub sha256: String,
    /// The ids replaced, in order of first appearance.
    pub ids: Vec<String>,
}

/// Normalises `request` (see the crate docs).
pub fn normalize_request(request: &AgentModelRequest) -> NormalizedRequest {
    let mut value = serde_json::to_value(request).unwrap_or(Value::Null);
    if let Some(object) = value.as_object_mut() {
        object.remove("session");
    }
    let text = value.to_string();
    let mut ids = Vec::new();
    let replaced = replace_ids(&text, |id| {
        let prefix = ID_PREFIXES
            .iter()
            .find(|prefix| id.starts_with(**prefix))
            .copied()
            .unwrap_or_default();
        if !ids.iter().any(|seen| seen == id) {
            ids.push(id.to_owned());
        }
        let number = ids
            .iter()
            .filter(|seen| seen.starts_with(prefix))
            .position(|seen| seen == id)
            .unwrap_or_default()
            + 1;
        format!("<{}#{number}>", prefix.trim_end_matches('_'))
    });
    let request = serde_json::from_str(&replaced).unwrap_or(Value::Null);
    let sha256 = tt_domain::text::sha256_hex(replaced.as_bytes());
    NormalizedRequest {
        profile: request_profile(&value),
        round: value["round"]
            .as_u64()
            .and_then(|r| u32::try_from(r).ok())
            .unwrap_or(0),
        request,
        sha256,
        ids,
    }
}

fn request_profile(value: &Value) -> String {
    value["agentProfileId"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Rewrites every id in `text` that `map` knows (recorded id → id of this run).
pub(crate) fn rewrite_ids(text: &str, map: &HashMap<String, String>) -> String {
    if map.is_empty() {
        return text.to_owned();
    }
    replace_ids(text, |id| {
        map.get(id).cloned().unwrap_or_else(|| id.to_owned())
    })
}

/// Calls `replace` for each runtime id in `text` (a prefix, then exactly 32 lowercase hex
/// digits, not inside a longer word) and splices in what it returns.
fn replace_ids(text: &str, mut replace: impl FnMut(&str) -> String) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = at == 0 || !is_word_byte(bytes[at - 1]);
        let matched = starts_word
            .then(|| {
                ID_PREFIXES.iter().find_map(|prefix| {
                    let end = at + prefix.len() + ID_DIGITS;
                    let digits = bytes.get(at + prefix.len()..end)?;
                    (bytes[at..].starts_with(prefix.as_bytes())
                        && digits
                            .iter()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
                        && bytes.get(end).is_none_or(|b| !is_word_byte(*b)))
                    .then_some(end)
                })
            })
            .flatten();
        match matched {
            Some(end) => {
                out.push_str(&text[copied..at]);
                out.push_str(&replace(&text[at..end]));
                copied = end;
                at = end;
            }
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASK_A: &str = "task_0123456789abcdef0123456789abcdef";
    const TASK_B: &str = "task_00000000000000000000000000000016";
    const RUN: &str = "run_5927e7b45cdb433a8139f4f31d8bf7ea";

    #[test]
    fn ids_become_placeholders_numbered_per_kind() {
        let text = format!("{TASK_A} then {RUN} then {TASK_B} and {TASK_A} again");
        let mut seen = Vec::new();
        let out = replace_ids(&text, |id| {
            seen.push(id.to_owned());
            "X".to_owned()
        });
        assert_eq!(out, "X then X then X and X again");
        assert_eq!(seen, [TASK_A, RUN, TASK_B, TASK_A]);
    }

    #[test]
    fn near_misses_are_left_alone() {
        for text in [
            "task_0123",                               // too short
            "task_0123456789abcdef0123456789abcdef0",  // too long
            "mytask_0123456789abcdef0123456789abcdef", // inside a word
            "task_0123456789ABCDEF0123456789ABCDEF",   // upper case
            "inv_root",                                // the root's fixed id is stable
            "call_cf3acdfe3ce56733",                   // provider call ids are not ours
        ] {
            assert_eq!(replace_ids(text, |_| "X".to_owned()), text);
        }
    }

    #[test]
    fn rewriting_maps_known_ids_only() {
        let map = HashMap::from([(TASK_A.to_owned(), TASK_B.to_owned())]);
        assert_eq!(
            rewrite_ids(&format!("[\"{TASK_A}\",\"{RUN}\"]"), &map),
            format!("[\"{TASK_B}\",\"{RUN}\"]")
        );
    }
}
