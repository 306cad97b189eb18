//! Parsed profiles kept while their file is unchanged ([`ProfileCache`]), keyed by a
//! [`FileStamp`]. Its own module because the store holds the cache and the profile port uses it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;
use tt_domain::ids::ProfileId;
use tt_domain::profile::AgentProfileDefinition;

/// What identifies one version of a file without reading it: a replaced file (written to a
/// temp file and renamed, as every writer here does) gets a new inode, an edited one a new
/// modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64),
}

impl FileStamp {
    /// `None` when the file cannot be stat'ed (then it is read the ordinary way).
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            inode: {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino())
            },
        })
    }
}

/// Profiles parsed from their files, reused while the file's stamp is unchanged: every
/// delegation and every delegated invocation loads its profile, and reading and parsing the
/// file on the blocking pool each time was about 3% of a fan-out's CPU. Another process can
/// still change a profile file at any time: the next load sees the new stamp and reads it.
#[derive(Debug, Default)]
pub(crate) struct ProfileCache {
    parsed: Mutex<HashMap<ProfileId, (FileStamp, AgentProfileDefinition)>>,
}

impl ProfileCache {
    pub(crate) fn get(&self, id: &ProfileId, stamp: &FileStamp) -> Option<AgentProfileDefinition> {
        let parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        parsed
            .get(id)
            .filter(|(cached, _)| cached == stamp)
            .map(|(_, definition)| definition.clone())
    }

    pub(crate) fn put(&self, id: ProfileId, stamp: FileStamp, definition: AgentProfileDefinition) {
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        parsed.insert(id, (stamp, definition));
    }
}
