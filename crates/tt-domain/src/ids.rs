//! Identifiers of runs, invocations, tasks, events and profiles.
//!
//! Ids are opaque strings with a fixed prefix (`run_`, `inv_`, `task_`, `handoff_`, `evt_`).
//! Fresh ids are built from a unique hex token handed out by the `IdGenerator` port, so the domain
//! never touches randomness itself.

use crate::error_codes;
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::{DomainError, DomainResult};

/// `Display` and `AsRef<str>` of an id newtype, from its text.
macro_rules! id_text {
    ($name:ident) => {
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps an id read back from storage or a host request, without re-validating it.
            pub fn from_raw(raw: impl Into<String>) -> Self {
                Self(raw.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        id_text!($name);
    };
}

/// [`string_id!`] for an id copied into many records and events (the run's, an agent's, a
/// task's): its text is shared, so a copy is a reference count, not an allocation.
macro_rules! shared_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(std::sync::Arc<str>);

        impl $name {
            /// Wraps an id read back from storage or a host request, without re-validating it.
            pub fn from_raw(raw: impl Into<String>) -> Self {
                Self(std::sync::Arc::from(raw.into()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        id_text!($name);

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_str(SharedText).map(Self)
            }
        }
    };
}

/// Reads a string into shared text in one allocation (serde's own `Arc<str>` goes through a
/// `Box<str>` first).
struct SharedText;

impl serde::de::Visitor<'_> for SharedText {
    type Value = std::sync::Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an id string")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(std::sync::Arc::from(text))
    }
}

/// The conversions of a string newtype whose `parse` validates it: `TryFrom<String>` (through
/// `parse`, so serde's `try_from = "String"` refuses what `parse` refuses), `From<_> for
/// String` and `Display`.
macro_rules! parsed_string_conversions {
    ($name:ident) => {
        impl TryFrom<String> for $name {
            type Error = $crate::DomainError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::parse(&value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> Self {
                value.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}
pub(crate) use parsed_string_conversions;

shared_id!(
    /// `run_<hex>`.
    RunId
);
shared_id!(
    /// `inv_root` for the root invocation, `inv_<hex>` otherwise.
    InvocationId
);
shared_id!(
    /// `task_<hex>` for delegated tasks, `handoff_<hex>` for handoffs.
    TaskId
);
string_id!(
    /// `evt_<hex>`.
    EventId
);
string_id!(
    /// `chat_<16 hex>`, derived from the stable conversation id.
    WorkspaceId
);
string_id!(
    /// `commit_<hex>`: one host commit handshake.
    CommitId
);
string_id!(
    /// `cp_NNNNNN`.
    CheckpointId
);

/// The root invocation's id is a constant.
pub const ROOT_INVOCATION_ID: &str = "inv_root";

/// The longest prefix of a generated id (`handoff_`): an id generator that leaves this much
/// room in front of its tokens' capacity lets every id be made without a second allocation.
pub const LONGEST_ID_PREFIX: usize = "handoff_".len();

/// `prefix` then `token`, in the token's own string when it has room for the prefix (ids are
/// made for every event).
fn prefixed(prefix: &str, token: impl Into<String>) -> String {
    let mut id = token.into();
    id.insert_str(0, prefix);
    id
}

impl RunId {
    pub fn generate(token: impl Into<String>) -> Self {
        Self(prefixed("run_", token).into())
    }
}

impl InvocationId {
    pub fn root() -> Self {
        static ROOT: std::sync::LazyLock<std::sync::Arc<str>> =
            std::sync::LazyLock::new(|| ROOT_INVOCATION_ID.into());
        Self(std::sync::Arc::clone(&ROOT))
    }

    pub fn generate(token: impl Into<String>) -> Self {
        Self(prefixed("inv_", token).into())
    }

    pub fn is_root(&self) -> bool {
        &*self.0 == ROOT_INVOCATION_ID
    }
}

impl TaskId {
    pub fn generate_delegate(token: impl Into<String>) -> Self {
        Self(prefixed("task_", token).into())
    }

    pub fn generate_handoff(token: impl Into<String>) -> Self {
        Self(prefixed("handoff_", token).into())
    }
}

impl EventId {
    pub fn generate(token: impl Into<String>) -> Self {
        Self(prefixed("evt_", token))
    }
}

impl CommitId {
    pub fn generate(token: impl Into<String>) -> Self {
        Self(prefixed("commit_", token))
    }
}

impl CheckpointId {
    /// `cp_` and `seq` in at least six digits (`cp_000042`).
    pub fn from_seq(seq: u64) -> Self {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(seq);
        let zeros = 6usize.saturating_sub(digits.len());
        let mut id = String::with_capacity(3 + zeros + digits.len());
        id.push_str("cp_");
        id.extend(std::iter::repeat_n('0', zeros));
        id.push_str(digits);
        Self(id)
    }
}

/// Maximum length of a profile id or artifact id.
pub const MAX_PROFILE_ID_LEN: usize = 128;

/// A profile id: lowercase ASCII letters, digits, `-` and `_`, 1 to 128 bytes. Shared text,
/// like the ids of [`shared_id!`]: tasks, events and agents all carry it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProfileId(std::sync::Arc<str>);

impl ProfileId {
    pub fn parse(raw: &str) -> DomainResult<Self> {
        if is_valid_profile_id(raw) {
            return Ok(Self(raw.into()));
        }
        parse_in_profile_id_charset(raw, "profile id", error_codes::AGENT_PROFILE_ID_INVALID)
            .map(|valid| Self(valid.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// For ids that are valid by construction (constants in this crate).
    pub(crate) fn from_trusted(raw: &str) -> Self {
        Self(raw.into())
    }
}

impl TryFrom<String> for ProfileId {
    type Error = DomainError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<ProfileId> for String {
    fn from(value: ProfileId) -> Self {
        value.0.as_ref().to_owned()
    }
}

impl fmt::Display for ProfileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for ProfileId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ProfileId {
    /// Refuses what [`ProfileId::parse`] refuses.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = deserializer.deserialize_str(SharedText)?;
        if is_valid_profile_id(&text) {
            return Ok(Self(text));
        }
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Profile and artifact ids share one charset.
pub fn is_valid_profile_id(raw: &str) -> bool {
    !raw.is_empty()
        && raw.len() <= MAX_PROFILE_ID_LEN
        && raw
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// `raw` when it is in the profile-id charset; else `code`, naming it as `what` (`skill id`).
pub(crate) fn parse_in_profile_id_charset(
    raw: &str,
    what: &str,
    code: error_codes::Code,
) -> DomainResult<String> {
    if is_valid_profile_id(raw) {
        Ok(raw.to_owned())
    } else {
        Err(DomainError::new(
            code,
            format!(
                "{what} `{}` must be 1 to {MAX_PROFILE_ID_LEN} characters of lowercase letters, digits, `-` or `_`",
                truncate_for_message(raw)
            ),
        ))
    }
}

/// Storage segments (run ids, workspace ids, state ids) must match `[A-Za-z0-9_-]{1,128}`.
pub fn is_valid_storage_segment(raw: &str) -> bool {
    // Every store checks every id it is given: a table lookup per byte, without a branch.
    !raw.is_empty()
        && raw.len() <= 128
        && raw
            .bytes()
            .fold(true, |valid, byte| valid & SEGMENT_BYTES[usize::from(byte)])
}

/// Which bytes a storage segment may hold: `[A-Za-z0-9_-]`.
static SEGMENT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        byte += 1;
    }
    table
};

/// At most 80 characters of `raw` for an error message, with `…` when cut.
pub fn truncate_for_message(raw: &str) -> String {
    const LIMIT: usize = 80;
    if raw.chars().count() <= LIMIT {
        raw.to_owned()
    } else {
        let head: String = raw.chars().take(LIMIT).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_prefixes() {
        assert_eq!(RunId::generate("ab").as_str(), "run_ab");
        assert_eq!(InvocationId::generate("ab").as_str(), "inv_ab");
        assert!(InvocationId::root().is_root());
        assert_eq!(TaskId::generate_delegate("x").as_str(), "task_x");
        assert_eq!(TaskId::generate_handoff("x").as_str(), "handoff_x");
        assert_eq!(CheckpointId::from_seq(7).as_str(), "cp_000007");
        assert_eq!(CheckpointId::from_seq(0).as_str(), "cp_000000");
        assert_eq!(CheckpointId::from_seq(1_234_567).as_str(), "cp_1234567");
        assert_eq!(
            CheckpointId::from_seq(u64::MAX).as_str(),
            format!("cp_{}", u64::MAX)
        );
    }

    #[test]
    fn profile_ids_follow_the_charset() {
        assert!(ProfileId::parse("scene-critic_2").is_ok());
        for bad in ["", "Scene", "a b", "a/b", &"a".repeat(129)] {
            let err = ProfileId::parse(bad).unwrap_err();
            assert_eq!(err.code, "agent.profile_id_invalid");
        }
        assert!(ProfileId::parse(&"a".repeat(128)).is_ok());
    }

    #[test]
    fn storage_segments_are_restricted() {
        assert!(is_valid_storage_segment("run_ABC-1"));
        assert!(!is_valid_storage_segment("../x"));
        assert!(!is_valid_storage_segment(""));
        assert!(is_valid_storage_segment(&"a".repeat(128)));
        assert!(!is_valid_storage_segment(&"a".repeat(129)));
        for ch in (0..=0x7F).map(char::from).chain(['é', '日']) {
            let expected = ch.is_ascii_alphanumeric() || ch == '-' || ch == '_';
            assert_eq!(
                is_valid_storage_segment(&format!("a{ch}b")),
                expected,
                "{ch:?}"
            );
        }
    }
}
