//! `check_stored`: every file the store keeps of a run read whole, for `check_run`. The journal,
//! the records and the blobs line by line (a line that does not parse, a record whose value is
//! not what its kind holds, a blob whose text does not match its sha256), the run record, its
//! index copy, the manifest and the input snapshots as JSON. Each damaged file is named (by its
//! name in the run directory, or `index/runs/<runId>.json`) with the first lines found wrong
//! and how many. A last line without its newline is a write in flight or cut short (the owner
//! cuts it when it opens the run), and so is a last whole line that does not parse, as every
//! reader of a segment treats it; neither is reported. Reads only.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use tt_domain::damage::DamageFinding;
use tt_domain::error_codes;
use tt_domain::event::AgentRunEvent;
use tt_domain::ids::RunId;
use tt_domain::invocation::AgentInvocation;
use tt_domain::run::AgentRun;
use tt_domain::task::AgentTaskRecord;
use tt_domain::text::sha256_hex;
use tt_domain::workspace::RunManifest;
use tt_ports::{RunDocument, StorageError, StorageResult};

use crate::fsutil;
use crate::layout::{BLOBS_FILE, EVENTS_FILE, Layout, MANIFEST_FILE, RECORDS_FILE, RUN_FILE};
use crate::owned::RecordKind;

/// How many damaged lines of one file a finding names (the count names them all).
const NAMED_LINES: usize = 5;

#[derive(Deserialize)]
struct RecordLine {
    kind: RecordKind,
    key: String,
    value: Value,
}

#[derive(Deserialize)]
struct BlobLine {
    sha256: String,
    text: String,
}

/// What is damaged in the files of run `run_id` in `dir`.
pub(crate) fn check_run_files(
    layout: &Layout,
    dir: &Path,
    run_id: &RunId,
) -> StorageResult<Vec<DamageFinding>> {
    let mut findings = Vec::new();
    findings.extend(check_segment(dir, EVENTS_FILE, |body| {
        serde_json::from_slice::<AgentRunEvent>(body)
            .map(drop)
            .map_err(|err| err.to_string())
    })?);
    findings.extend(check_segment(dir, RECORDS_FILE, check_record)?);
    findings.extend(check_segment(dir, BLOBS_FILE, |body| {
        let blob: BlobLine = serde_json::from_slice(body).map_err(|err| err.to_string())?;
        let actual = sha256_hex(blob.text.as_bytes());
        if actual == blob.sha256 {
            Ok(())
        } else {
            Err(format!(
                "the text of blob {} has sha256 {actual}",
                blob.sha256
            ))
        }
    })?);
    findings.extend(check_json::<AgentRun>(&dir.join(RUN_FILE), RUN_FILE)?);
    let index = format!("index/runs/{run_id}.json");
    findings.extend(check_json::<AgentRun>(
        &layout.index_file(run_id.as_str()),
        &index,
    )?);
    findings.extend(check_json::<RunManifest>(
        &dir.join(MANIFEST_FILE),
        MANIFEST_FILE,
    )?);
    for snapshot in [
        RunDocument::PromptSnapshot,
        RunDocument::ResolvedProfile,
        RunDocument::PersistSnapshot,
    ] {
        let relative = snapshot.relative_path();
        findings.extend(check_json::<Value>(
            &crate::layout::join_relative(dir, &relative),
            &relative,
        )?);
    }
    Ok(findings)
}

/// A record line: its header, and for task and invocation records a value of their shape.
fn check_record(body: &[u8]) -> Result<(), String> {
    let line: RecordLine = serde_json::from_slice(body).map_err(|err| err.to_string())?;
    let parsed = match line.kind {
        RecordKind::Task => parse::<AgentTaskRecord>(line.value),
        RecordKind::Invocation => parse::<AgentInvocation>(line.value),
        RecordKind::Document | RecordKind::Checkpoint => Ok(()),
    };
    parsed.map_err(|err| format!("record {}: {err}", line.key))
}

fn parse<T: DeserializeOwned>(value: Value) -> Result<(), String> {
    serde_json::from_value::<T>(value)
        .map(drop)
        .map_err(|err| err.to_string())
}

/// The finding for segment `name` of `dir`, if any of its whole lines but the last fails
/// `check`. Read line by line: a run's blobs may be large.
fn check_segment(
    dir: &Path,
    name: &str,
    check: impl Fn(&[u8]) -> Result<(), String>,
) -> StorageResult<Option<DamageFinding>> {
    let path = dir.join(name);
    let Some(file) = crate::segment::open_for_reading(&path)? else {
        return Ok(None);
    };
    let mut reader = BufReader::new(file);
    let mut bad: Vec<(u64, String)> = Vec::new();
    let mut count = 0usize;
    let mut lines = 0u64;
    // The last whole line that does not parse reads as a torn write everywhere: a failure is
    // counted only once another whole line follows it.
    let mut pending: Option<(u64, String)> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| StorageError::io(path.display().to_string(), err))?;
        // What follows the last newline is a write in flight or cut short.
        let Some(body) = line.strip_suffix(b"\n") else {
            break;
        };
        if read == 0 {
            break;
        }
        lines += 1;
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(failure) = pending.take() {
            count += 1;
            if bad.len() < NAMED_LINES {
                bad.push(failure);
            }
        }
        if let Err(message) = check(body) {
            pending = Some((lines, message));
        }
    }
    if bad.is_empty() {
        return Ok(None);
    }
    let named: Vec<String> = bad
        .iter()
        .map(|(line, message)| format!("line {line} ({message})"))
        .collect();
    let more = count - bad.len();
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Ok(Some(DamageFinding::new(
        error_codes::AGENT_STORAGE_CORRUPT,
        format!(
            "{name}: {count} of {lines} lines cannot be read: {}{more}",
            named.join("; ")
        ),
    )))
}

/// The finding for JSON file `path` (named `name`), if it exists and does not parse as `T`.
fn check_json<T: DeserializeOwned>(
    path: &Path,
    name: &str,
) -> StorageResult<Option<DamageFinding>> {
    let Some(bytes) = fsutil::read_bytes(path)? else {
        return Ok(None);
    };
    Ok(serde_json::from_slice::<T>(&bytes).err().map(|err| {
        DamageFinding::new(
            error_codes::AGENT_STORAGE_CORRUPT,
            format!("{name} cannot be read: {err}"),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(text: &str) -> String {
        serde_json::json!({"sha256": sha256_hex(text.as_bytes()), "text": text}).to_string()
    }

    fn finding_for(content: &str) -> Option<DamageFinding> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(BLOBS_FILE), content).unwrap();
        let layout = Layout::new(dir.path().to_path_buf());
        let run = RunId::from_raw("run_x");
        let mut findings = check_run_files(&layout, dir.path(), &run).unwrap();
        assert!(findings.len() <= 1, "{findings:?}");
        findings.pop()
    }

    #[test]
    fn a_bad_blob_line_is_named_unless_it_is_the_torn_end() {
        let (a, b) = (blob("one"), blob("two"));
        assert_eq!(finding_for(&format!("{a}\n{b}\n")), None);
        let found = finding_for(&format!("{a}\nnot json\n{b}\n")).unwrap();
        assert_eq!(found.code, "agent.storage_corrupt");
        assert!(
            found
                .message
                .starts_with("blobs.jsonl: 1 of 3 lines cannot be read: line 2 ("),
            "{found}"
        );
        // A last line cut short or a last whole line that does not parse: a torn write.
        assert_eq!(finding_for(&format!("{a}\n{b}\n{{\"sha")), None);
        assert_eq!(finding_for(&format!("{a}\n{b}\nnot json\n")), None);
        // A blob whose text is not what its sha256 says.
        let wrong = blob("one").replace("\"one\"", "\"uno\"");
        let found = finding_for(&format!("{wrong}\n{b}\n")).unwrap();
        assert!(
            found.message.contains("line 1 (the text of blob"),
            "{found}"
        );
    }
}
