//! `ConnectionRepository` as files: `connections/<name>.json` under the data root, one named
//! model connection per file, written by hand or through the port (replaced atomically), read
//! as the text it holds.

use async_trait::async_trait;
use std::path::{Path, PathBuf};
use tt_domain::ids::is_valid_storage_segment;
use tt_ports::{ConnectionRepository, StorageError, StorageResult};

use crate::fsutil;

/// The named model connections kept in one directory.
#[derive(Debug, Clone)]
pub struct ConnectionFiles {
    dir: PathBuf,
}

impl ConnectionFiles {
    /// Connections kept in `dir` (`<data dir>/connections`), created on the first write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The connections of the data dir at `root`.
    pub fn in_data_dir(root: &Path) -> Self {
        Self::new(root.join("connections"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }
}

#[async_trait]
impl ConnectionRepository for ConnectionFiles {
    async fn list_connection_names(&self) -> StorageResult<Vec<String>> {
        let mut names = fsutil::json_file_stems(&self.dir)?;
        names.retain(|name| is_valid_storage_segment(name));
        Ok(names)
    }

    async fn read_connection(&self, name: &str) -> StorageResult<Option<String>> {
        if !is_valid_storage_segment(name) {
            return Ok(None);
        }
        let path = self.path(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(err) if fsutil::is_missing(&err) => Ok(None),
            Err(err) => Err(StorageError::io(path.display().to_string(), err)),
        }
    }

    async fn put_connection(&self, name: &str, document: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_storage_segment("connection name", name)?;
        fsutil::create_dir_all(&self.dir)?;
        fsutil::write_atomic(&self.path(name), document.as_bytes())
    }

    async fn remove_connection(&self, name: &str) -> StorageResult<bool> {
        if !is_valid_storage_segment(name) {
            return Ok(false);
        }
        let path = self.path(name);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(err) if fsutil::is_missing(&err) => Ok(false),
            Err(err) => Err(StorageError::io(path.display().to_string(), err)),
        }
    }
}
