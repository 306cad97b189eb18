//! The head of a conversation's persistent state (docs/storage.md, "One writer per
//! conversation"): `chats/<workspaceId>/chat-head/<generation>`, one file per time the head
//! moved, holding the run id that took it. The highest generation is the head. A move from
//! generation `g` creates `g + 1` with a hard link of a finished temp file, which the file
//! system refuses when that name exists: of several processes moving the same head, exactly one
//! succeeds, and no reader ever sees a half-written file. Generations are never removed (a
//! swap that read an old generation must keep failing).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tt_domain::ids::{RunId, WorkspaceId};
use tt_ports::StorageError;

use crate::StorageResult;
use crate::fsutil;
use crate::layout::Layout;

/// Digits of a generation's file name (zero-padded, so names sort like numbers).
const GENERATION_WIDTH: usize = 20;

/// `chats/<workspaceId>/chat-head`.
fn head_dir(layout: &Layout, workspace_id: &WorkspaceId) -> StorageResult<PathBuf> {
    Ok(layout.chat_dir(workspace_id.as_str())?.join("chat-head"))
}

/// The highest generation in `dir` and the run it names; `None` when the head never moved.
fn current(dir: &Path) -> StorageResult<Option<(u64, RunId)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if fsutil::is_missing(&err) => return Ok(None),
        Err(err) => return Err(StorageError::io(dir.display().to_string(), err)),
    };
    let mut newest: Option<u64> = None;
    for entry in entries {
        let entry = entry.map_err(|err| StorageError::io(dir.display().to_string(), err))?;
        let name = entry.file_name();
        let Some(generation) = name
            .to_str()
            .filter(|name| {
                name.len() == GENERATION_WIDTH && name.bytes().all(|b| b.is_ascii_digit())
            })
            .and_then(|name| name.parse::<u64>().ok())
        else {
            continue;
        };
        newest = newest.max(Some(generation));
    }
    let Some(generation) = newest else {
        return Ok(None);
    };
    let path = generation_path(dir, generation);
    let bytes = fsutil::read_bytes(&path)?
        .ok_or_else(|| StorageError::not_found(path.display().to_string()))?;
    let run = std::str::from_utf8(&bytes)
        .ok()
        .map(str::trim)
        .filter(|run| tt_domain::ids::is_valid_storage_segment(run))
        .ok_or_else(|| StorageError::corrupt(path.display().to_string(), "not a run id"))?;
    Ok(Some((generation, RunId::from_raw(run))))
}

fn generation_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:0GENERATION_WIDTH$}"))
}

/// The run holding the head of `workspace_id`'s conversation.
pub(crate) fn chat_head(
    layout: &Layout,
    workspace_id: &WorkspaceId,
) -> StorageResult<Option<RunId>> {
    Ok(current(&head_dir(layout, workspace_id)?)?.map(|(_, run)| run))
}

/// Moves the head from `expected` to `run_id` (see the module header).
pub(crate) fn swap_chat_head(
    layout: &Layout,
    workspace_id: &WorkspaceId,
    expected: Option<&RunId>,
    run_id: &RunId,
) -> StorageResult<bool> {
    let dir = head_dir(layout, workspace_id)?;
    let (generation, head) = match current(&dir)? {
        Some((generation, head)) => (generation, Some(head)),
        None => (0, None),
    };
    if head.as_ref() == Some(run_id) {
        return Ok(true);
    }
    if head.as_ref() != expected {
        return Ok(false);
    }
    fsutil::create_dir_all(&dir)?;
    let staged = fsutil::temp_path_in(&dir);
    fsutil::write_new_synced(&staged, run_id.as_str().as_bytes())?;
    let next = generation_path(&dir, generation + 1);
    let linked = fs::hard_link(&staged, &next);
    // Best effort: a leftover temp file is never read as a generation.
    let _ = fs::remove_file(&staged);
    match linked {
        Ok(()) => {
            crate::owned::sync_dir(&dir)?;
            Ok(true)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(StorageError::io(next.display().to_string(), err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> RunId {
        RunId::from_raw(id)
    }

    #[test]
    fn the_head_moves_only_from_what_the_caller_saw_and_once_per_generation() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path().to_path_buf());
        let chat = WorkspaceId::from_raw("chat_0123456789abcdef");
        assert_eq!(chat_head(&layout, &chat).unwrap(), None);
        assert!(swap_chat_head(&layout, &chat, None, &run("run_a")).unwrap());
        // Taken: a second run swapping from "no head" loses; the holder again is a no-op.
        assert!(!swap_chat_head(&layout, &chat, None, &run("run_b")).unwrap());
        assert!(swap_chat_head(&layout, &chat, None, &run("run_a")).unwrap());
        assert!(swap_chat_head(&layout, &chat, Some(&run("run_a")), &run("run_b")).unwrap());
        assert!(!swap_chat_head(&layout, &chat, Some(&run("run_a")), &run("run_c")).unwrap());
        assert_eq!(chat_head(&layout, &chat).unwrap(), Some(run("run_b")));
    }
}
