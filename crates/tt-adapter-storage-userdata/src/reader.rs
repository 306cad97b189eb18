//! Reading the records and blobs of a run this process does not write (another process owns it,
//! or it is finished): each call scans the segment's complete lines, keeps the latest line of
//! each key it asks for, and never writes or repairs anything.

use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use tt_ports::{StorageError, StorageResult};

use crate::layout::{BLOBS_FILE, RECORDS_FILE};
use crate::owned::{BlobHeader, BlobText, RecordHeader, RecordKind, record_value};
use crate::segment;

/// The latest line of every record of `kind` whose key passes `wanted`, by key.
fn latest_lines(
    dir: &Path,
    bytes_read: &AtomicU64,
    kind: RecordKind,
    wanted: impl Fn(&str) -> bool,
) -> StorageResult<HashMap<String, Vec<u8>>> {
    let path = dir.join(RECORDS_FILE);
    let mut latest = HashMap::new();
    let Some(mut file) = segment::open_for_reading(&path)? else {
        return Ok(latest);
    };
    segment::scan(&path, &mut file, 0, bytes_read, |_, body| {
        let header: RecordHeader = serde_json::from_slice(body).map_err(|err| err.to_string())?;
        if header.kind == kind && wanted(&header.key) {
            latest.insert(header.key, body.to_vec());
        }
        Ok(())
    })?;
    Ok(latest)
}

/// The latest value of one record, `None` when there is none.
pub(crate) fn record<T: DeserializeOwned>(
    dir: &Path,
    bytes_read: &AtomicU64,
    kind: RecordKind,
    key: &str,
) -> StorageResult<Option<T>> {
    let mut lines = latest_lines(dir, bytes_read, kind, |candidate| candidate == key)?;
    lines
        .remove(key)
        .map(|body| record_value(&body))
        .transpose()
        .map_err(|err| StorageError::corrupt(format!("record {key}"), err))
}

/// The latest value of every record of `kind`, in no particular order.
pub(crate) fn records<T: DeserializeOwned>(
    dir: &Path,
    bytes_read: &AtomicU64,
    kind: RecordKind,
) -> StorageResult<Vec<T>> {
    latest_lines(dir, bytes_read, kind, |_| true)?
        .into_iter()
        .map(|(key, body)| {
            record_value(&body).map_err(|err| StorageError::corrupt(format!("record {key}"), err))
        })
        .collect()
}

/// The text of the blob with `sha256`, `None` when the run stored none.
pub(crate) fn blob(
    dir: &Path,
    bytes_read: &AtomicU64,
    sha256: &str,
) -> StorageResult<Option<String>> {
    let path = dir.join(BLOBS_FILE);
    let Some(mut file) = segment::open_for_reading(&path)? else {
        return Ok(None);
    };
    let mut found = None;
    segment::scan(&path, &mut file, 0, bytes_read, |_, body| {
        let header: BlobHeader = serde_json::from_slice(body).map_err(|err| err.to_string())?;
        if found.is_none() && header.sha256 == sha256 {
            let blob: BlobText = serde_json::from_slice(body).map_err(|err| err.to_string())?;
            found = Some(blob.text);
        }
        Ok(())
    })?;
    Ok(found)
}
