//! `PresetTemplateRepository` as files: `presets/<apiId>/<name>.json` under the data root, one
//! template per file, written by hand, by `tt-agent`, or through the port (replaced
//! atomically), read as the text it holds.

use async_trait::async_trait;
use std::path::{Path, PathBuf};
use tt_ports::{PresetKey, PresetTemplateRepository, StorageError, StorageResult};

use crate::fsutil;

/// The preset templates kept in one directory, a folder per api id.
#[derive(Debug, Clone)]
pub struct PresetTemplateFiles {
    dir: PathBuf,
}

impl PresetTemplateFiles {
    /// Templates kept in `dir` (`<data dir>/presets`), created on the first write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The templates of the data dir at `root`.
    pub fn in_data_dir(root: &Path) -> Self {
        Self::new(root.join("presets"))
    }
}

#[async_trait]
impl PresetTemplateRepository for PresetTemplateFiles {
    async fn read_preset_template(&self, key: PresetKey<'_>) -> StorageResult<Option<String>> {
        if !key.is_storable() {
            return Ok(None);
        }
        let path = self.dir.join(key.api_id).join(format!("{}.json", key.name));
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(err) if fsutil::is_missing(&err) => Ok(None),
            Err(err) => Err(StorageError::io(path.display().to_string(), err)),
        }
    }

    async fn put_preset_template(&self, key: PresetKey<'_>, template: &str) -> StorageResult<()> {
        tt_ports::store_inputs::check_preset_template_key(key)?;
        let dir = self.dir.join(key.api_id);
        fsutil::create_dir_all(&dir)?;
        fsutil::write_atomic(&dir.join(format!("{}.json", key.name)), template.as_bytes())
    }
}
