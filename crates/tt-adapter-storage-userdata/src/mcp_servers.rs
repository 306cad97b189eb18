//! `McpServerRepository` as files: `mcp/servers/<name>.json` under the data root, one
//! registration and its catalog snapshot per file, replaced atomically. Entries read are kept
//! with the file's modification time and length, so a tool call checks the file's metadata
//! instead of reading and parsing it again, and still sees an entry another process wrote.

use async_trait::async_trait;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;
use tt_domain::mcp::McpServerEntry;
use tt_ports::{McpServerRepository, StorageError, StorageResult};

use crate::fsutil;

/// What tells a file changed: its modification time and its length.
type FileStamp = (Option<SystemTime>, u64);

/// The MCP servers kept in one directory.
#[derive(Debug, Clone)]
pub struct McpServerFiles {
    dir: PathBuf,
    read: Arc<Mutex<HashMap<String, (FileStamp, McpServerEntry)>>>,
}

impl McpServerFiles {
    /// Servers kept in `dir` (`<data dir>/mcp/servers`), created on the first write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            read: Arc::default(),
        }
    }

    /// The servers of the data dir at `root`.
    pub fn in_data_dir(root: &Path) -> Self {
        Self::new(root.join("mcp").join("servers"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, HashMap<String, (FileStamp, McpServerEntry)>> {
        self.read.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, name: &str) -> StorageResult<Option<McpServerEntry>> {
        let path = self.path(name);
        let stamp = match std::fs::metadata(&path) {
            Ok(meta) => (meta.modified().ok(), meta.len()),
            Err(err) if fsutil::is_missing(&err) => {
                self.cached().remove(name);
                return Ok(None);
            }
            Err(err) => return Err(StorageError::io(path.display().to_string(), err)),
        };
        if let Some((known, entry)) = self.cached().get(name)
            && *known == stamp
        {
            return Ok(Some(entry.clone()));
        }
        let Some(entry) = fsutil::read_json::<McpServerEntry>(&path)? else {
            return Ok(None);
        };
        self.cached()
            .insert(name.to_owned(), (stamp, entry.clone()));
        Ok(Some(entry))
    }
}

#[async_trait]
impl McpServerRepository for McpServerFiles {
    async fn get_mcp_server(&self, name: &str) -> StorageResult<Option<McpServerEntry>> {
        self.get(name)
    }

    async fn list_mcp_servers(&self) -> StorageResult<Vec<McpServerEntry>> {
        let mut servers = Vec::new();
        for name in fsutil::json_file_stems(&self.dir)? {
            // One unreadable entry never hides the others.
            if let Ok(Some(entry)) = self.get(&name) {
                servers.push(entry);
            }
        }
        Ok(servers)
    }

    async fn put_mcp_server(&self, entry: &McpServerEntry) -> StorageResult<()> {
        fsutil::create_dir_all(&self.dir)?;
        fsutil::write_json_atomic(&self.path(&entry.config.name), entry)
    }

    async fn remove_mcp_server(&self, name: &str) -> StorageResult<bool> {
        self.cached().remove(name);
        let path = self.path(name);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(err) if fsutil::is_missing(&err) => Ok(false),
            Err(err) => Err(StorageError::io(path.display().to_string(), err)),
        }
    }
}
