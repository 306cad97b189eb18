//! The checks every store makes of its inputs, in one place, so each adapter refuses the same
//! inputs with the same code and message: ids used as storage names (a persistent state's id
//! among them), and the text of a skill file.

use tt_domain::DomainError;
use tt_domain::ids::is_valid_storage_segment;
use tt_domain::skill::MAX_SKILL_FILE_BYTES;

use crate::error::{StorageError, StorageResult};
use crate::presets::PresetKey;

/// Refuses `raw` unless it is a storage segment (1 to 128 letters, digits, `-` or `_`): an id
/// a store may use as a file, row or key name (`agent.storage_segment_invalid`). `what` names
/// it in the message (`workspace id`).
pub fn check_storage_segment(what: &str, raw: &str) -> StorageResult<()> {
    if is_valid_storage_segment(raw) {
        return Ok(());
    }
    Err(StorageError::Domain(DomainError::new(
        tt_domain::error_codes::AGENT_STORAGE_SEGMENT_INVALID,
        format!(
            "{what} `{}` must be 1 to 128 characters of letters, digits, `-` or `_`",
            raw.chars().take(80).collect::<String>()
        ),
    )))
}

/// Refuses a preset template's key unless its API id and its name are both storage segments
/// ([`check_storage_segment`]): what every store checks before it keeps a template.
pub fn check_preset_template_key(key: PresetKey<'_>) -> StorageResult<()> {
    check_storage_segment("preset api id", key.api_id)?;
    check_storage_segment("preset name", key.name)
}

/// Refuses the id of a persistent state a run starts from unless it is a storage segment
/// (`agent.persistent_state_root_invalid`), before a store looks the state up by it.
pub fn check_persistent_state_id(state_id: &str) -> StorageResult<()> {
    if is_valid_storage_segment(state_id) {
        return Ok(());
    }
    Err(StorageError::Domain(DomainError::new(
        tt_domain::error_codes::AGENT_PERSISTENT_STATE_ROOT_INVALID,
        format!("persistent state id `{state_id}` is not a valid storage segment"),
    )))
}

/// Refuses a skill file of `len` bytes when it is over `MAX_SKILL_FILE_BYTES`
/// (`agent.storage_corrupt`, naming the file as `shown`): a store checks it before reading
/// the bytes when it can.
pub fn check_skill_file_size(shown: &str, len: u64) -> StorageResult<()> {
    if len > MAX_SKILL_FILE_BYTES {
        return Err(StorageError::corrupt(
            shown,
            format!("larger than {MAX_SKILL_FILE_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// The text of a stored skill file: refused when over `MAX_SKILL_FILE_BYTES` or not UTF-8
/// (`agent.storage_corrupt`, naming the file as `shown`).
pub fn skill_file_text(shown: String, bytes: Vec<u8>) -> StorageResult<String> {
    check_skill_file_size(&shown, bytes.len() as u64)?;
    String::from_utf8(bytes).map_err(|_| StorageError::corrupt(shown, "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_segments_are_checked_with_one_code_and_message() {
        assert!(check_storage_segment("workspace id", "ws-1_a").is_ok());
        for bad in ["", "../x", "a/b", "é"] {
            let err = check_storage_segment("workspace id", bad).unwrap_err();
            assert_eq!(err.code(), "agent.storage_segment_invalid");
            assert!(err.to_string().contains("workspace id"), "{err}");
        }
        let long = "x".repeat(129);
        let err = check_storage_segment("connection name", &long).unwrap_err();
        assert!(
            !err.to_string().contains(&long),
            "long names are cut: {err}"
        );
    }

    #[test]
    fn persistent_state_ids_are_storage_segments() {
        assert!(check_persistent_state_id("state_1").is_ok());
        let err = check_persistent_state_id("../x").unwrap_err();
        assert_eq!(err.code(), "agent.persistent_state_root_invalid");
        assert!(err.to_string().contains("`../x`"), "{err}");
    }

    #[test]
    fn skill_file_text_refuses_big_and_non_utf8_files() {
        assert_eq!(skill_file_text("s".into(), b"hi".to_vec()).unwrap(), "hi");
        let err = skill_file_text("s".into(), vec![0xff]).unwrap_err();
        assert_eq!(err.code(), "agent.storage_corrupt");
        let big = usize::try_from(MAX_SKILL_FILE_BYTES).unwrap() + 1;
        let err = skill_file_text("s".into(), vec![b'a'; big]).unwrap_err();
        assert_eq!(err.code(), "agent.storage_corrupt");
        assert!(check_skill_file_size("s", MAX_SKILL_FILE_BYTES).is_ok());
    }
}
