//! One group-commit batch as one statement: the statement, and its parameters built from the
//! queued units. Everything that can be decided before the statement runs is decided here, on
//! the client, so the server does only what needs the database: the runs' distinct ids, each
//! run's number of new events and its last stated status, each unit's events joined into the
//! one row the unit becomes, each event's place among its run's new events, the last write of a
//! document or invocation path. The server then locks the leases, moves each run's head by its
//! count, stores the rows at `head + place` and answers one base seq per run (the client adds
//! the places back), instead of numbering, grouping and answering every event itself.

use std::collections::HashMap;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

/// One batch, in one statement (one transaction, one WAL flush).
///
/// - `held`: the lease rows of the batch's runs (`$2`) that this store (`$1`) holds, locked
///   `FOR KEY SHARE` (a takeover waits for the batch, or the batch for it). A run not held is
///   left out entirely; its callers learn why afterwards.
/// - `heads`: each held run with new events moves `last_seq` by its count (`$3`) and sets
///   `journal_status` to its last stated status (`$4`, NULL when none; migration 14).
/// - `stored`: one `events` row per unit (migration 20): `seq` is its last event's,
///   `head + $6` (the place of that event among its run's new events), `span` its number of
///   events, and a row of several holds them as a JSON array (joined by the client).
/// - documents and invocations are upserted (the client kept the last write of each key, as
///   if they had run one after another); new tasks inserted (a taken task id fails the
///   statement: a unique violation).
/// - checkpoints are numbered per run after the run's newest and stored, with the fingerprints
///   and texts of their files as the statement's snapshot holds them. They are numbered without
///   a lock: only the committer of the store holding the run's lease writes its checkpoints and
///   its batches run one after another, so `max(seq)` is never read by two writers at once; a
///   second writer would fail on `tt_checkpoints`' primary key, never reuse a number.
/// - workspace writes go through `tt_put_file` (migration 9: its fence, path lock, checks and
///   outcome), one after another in queue order, each seeing the ones before.
/// - each run's newest seq is notified on `tt_journal`.
///
/// Answers `(0, run's place in $2, base, NULL)` per held run (`base` is the run's `last_seq`
/// before the batch, -1 when the run has new events but no `runs` row),
/// `(4, ord, number, fingerprints)` per stored checkpoint and `(5, ord, 0, outcome)` per
/// workspace write (`tt_put_file`'s row as a JSON array). The same answers are kept as JSON in
/// `tt_commit_batches` under the batch's token (`$25`, migration 13), in the same transaction,
/// so a batch whose connection was lost before its answer arrived is known to have committed
/// (and what it answered) or not, and is never written twice; the tokens of batches whose
/// answers arrived (`$26`) are deleted.
pub(super) const WRITE_BATCH: &str = "
WITH held AS (
    SELECT l.run_id FROM run_leases l
    WHERE l.owner_id = $1 AND l.run_id = ANY ($2::text[])
    FOR KEY SHARE),
runs_in AS (
    SELECT run_id, ord, n, status
    FROM unnest($2::text[], $3::int8[], $4::text[]) WITH ORDINALITY AS r (run_id, n, status, ord)),
heads AS (
    UPDATE runs r SET last_seq = r.last_seq + i.n,
                      journal_status = coalesce(i.status, r.journal_status)
    FROM runs_in i
    WHERE r.run_id = i.run_id AND i.n > 0 AND i.run_id IN (SELECT run_id FROM held)
    RETURNING r.run_id, r.last_seq - i.n AS base, r.last_seq AS last),
stored AS (
    INSERT INTO events (run_id, seq, span, body)
    SELECT u.run_id, h.base + u.place, u.span, u.body
    FROM unnest($5::text[], $6::int8[], $7::int4[], $8::text[]) AS u (run_id, place, span, body)
    JOIN heads h ON h.run_id = u.run_id),
docs_stored AS (
    INSERT INTO run_documents (run_id, path, body)
    SELECT run_id, path, body
    FROM unnest($9::text[], $10::text[], $11::text[]) AS d (run_id, path, body)
    WHERE run_id IN (SELECT run_id FROM held)
    ON CONFLICT (run_id, path) DO UPDATE SET body = EXCLUDED.body),
invs_stored AS (
    INSERT INTO invocations (run_id, invocation_id, body)
    SELECT run_id, invocation_id, body
    FROM unnest($12::text[], $13::text[], $14::text[]) AS i (run_id, invocation_id, body)
    WHERE run_id IN (SELECT run_id FROM held)
    ON CONFLICT (run_id, invocation_id) DO UPDATE SET body = EXCLUDED.body),
tasks_stored AS (
    INSERT INTO tasks (run_id, task_id, parent_id, child_id, workspace_key, delegation, body)
    SELECT run_id, task_id, parent_id, child_id, workspace_key, delegation, body
    FROM unnest($15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::bool[],
                $21::text[])
         AS t (run_id, task_id, parent_id, child_id, workspace_key, delegation, body)
    WHERE run_id IN (SELECT run_id FROM held)),
cps_in AS (
    SELECT run_id, paths, head, ord
    FROM unnest($22::text[], $23::text[], $24::text[]) WITH ORDINALITY AS c (run_id, paths, head, ord)
    WHERE run_id IN (SELECT run_id FROM held)),
cps_numbered AS (
    SELECT c.run_id, c.paths, c.head, c.ord,
           (SELECT coalesce(max(t.seq), 0) FROM tt_checkpoints t WHERE t.run_id = c.run_id)
           + row_number() OVER (PARTITION BY c.run_id ORDER BY c.ord) AS seq
    FROM cps_in c),
cps_printed AS (
    SELECT n.run_id, n.head, n.ord, n.seq,
           coalesce(json_agg(json_build_object(
                        'path', f.path, 'sha256', f.sha256,
                        'bytes', octet_length(convert_to(f.content, 'UTF8'))) ORDER BY p.pord)
                    FILTER (WHERE f.path IS NOT NULL), '[]') AS prints,
           coalesce(json_agg(f.content ORDER BY p.pord) FILTER (WHERE f.path IS NOT NULL),
                    '[]') AS texts
    FROM cps_numbered n
    LEFT JOIN LATERAL json_array_elements_text(n.paths::json) WITH ORDINALITY AS p (path, pord)
         ON true
    LEFT JOIN tt_files f ON f.run_id = n.run_id AND f.path = p.path
    GROUP BY n.run_id, n.head, n.ord, n.seq),
cps_stored AS (
    INSERT INTO tt_checkpoints (run_id, seq, record, files)
    SELECT run_id, seq,
           (head::jsonb || jsonb_build_object(
               'id', 'cp_' || CASE WHEN seq < 1000000 THEN lpad(seq::text, 6, '0')
                                   ELSE seq::text END,
               'seq', seq,
               'files', prints))::text,
           texts::text
    FROM cps_printed),
files_put AS (
    SELECT f.ord, p.outcome, p.detail, p.previous_sha256, p.new_sha256, p.new_bytes
    FROM unnest($27::text[], $28::text[], $29::text[], $30::text[], $31::text[], $32::bool[],
                $33::text[], $34::text[])
         WITH ORDINALITY AS f (run_id, path, above, content, sha256, append, guard, expected, ord)
    CROSS JOIN LATERAL tt_put_file(
        f.run_id, $1, f.path, ARRAY(SELECT json_array_elements_text(f.above::json)),
        f.content, f.sha256, f.append, f.guard, f.expected) AS p
    WHERE f.run_id IN (SELECT run_id FROM held)),
heard AS (
    SELECT count(pg_notify('tt_journal', run_id || ' ' || last)::text) AS notes FROM heads),
answers (kind, ord, seq, detail) AS (
    SELECT 0, i.ord, coalesce(h.base, -1), NULL::text
    FROM runs_in i JOIN held USING (run_id) LEFT JOIN heads h USING (run_id) CROSS JOIN heard
    UNION ALL
    SELECT 4, c.ord, c.seq, c.prints::text FROM cps_printed c
    UNION ALL
    SELECT 5, p.ord, 0,
           json_build_array(p.outcome, p.detail, p.previous_sha256, p.new_sha256,
                            p.new_bytes)::text
    FROM files_put p),
noted AS (
    INSERT INTO tt_commit_batches (token, answers)
    SELECT $25, coalesce(json_agg(json_build_array(kind, ord, seq, detail)), '[]')::text
    FROM answers),
forgotten AS (
    DELETE FROM tt_commit_batches WHERE token = ANY($26::text[]))
SELECT kind, ord, seq, detail FROM answers";

/// What a caller asked to write.
pub(crate) enum Write {
    /// A journal event's JSON, and the status it states when it is a `status_changed`
    /// (stored as the run's `journal_status` in the same statement); answered with its seq.
    Event {
        body: String,
        status: Option<String>,
    },
    /// A run document at `path`; answered with 0.
    Document { path: String, body: String },
    /// An invocation record's JSON; answered with 0.
    Invocation { invocation_id: String, body: String },
    /// A new task record's JSON and its indexed columns; answered with 0.
    Task(NewTaskRow),
    /// A checkpoint of the files at `paths` (a JSON array of relative paths), its record's
    /// fields other than `id`, `seq` and `files` in `head`; answered with its number and the
    /// files' fingerprints (JSON).
    Checkpoint { paths: String, head: String },
    /// A workspace write or append (`tt_put_file`); answered with 0 and its outcome's row as
    /// a JSON array (`outcome, detail, previous_sha256, new_sha256, new_bytes`).
    File(FileWrite),
}

/// A workspace write as `tt_put_file` takes it.
pub(crate) struct FileWrite {
    pub path: String,
    /// The path's strict ancestors below its root, as a JSON array.
    pub above: String,
    pub content: String,
    /// The sha256 of `content` (the server hashes the joined text of an append).
    pub sha256: String,
    pub append: bool,
    /// `none`, `must_not_exist` or `must_match` (then `expected` is the sha256 to match).
    pub guard: &'static str,
    pub expected: Option<String>,
}

/// A new task's row, as `AgentInvocationRepository::create_task` inserts it.
pub(crate) struct NewTaskRow {
    pub task_id: String,
    pub parent_id: String,
    pub child_id: String,
    pub workspace_key: String,
    pub delegation: bool,
    pub body: String,
}

/// The answer kind of a held run (its base seq).
pub(super) const RUN_ANSWER: i32 = 0;
/// The answer kind of a stored checkpoint (its number and fingerprints).
pub(super) const CHECKPOINT_ANSWER: i32 = 4;
/// The answer kind of a workspace write (`tt_put_file`'s row).
pub(super) const FILE_ANSWER: i32 = 5;

/// Where one write's answer comes from.
#[derive(Clone, Copy)]
pub(super) enum Key {
    /// An event, at this place (1-based) among its run's new events in the batch.
    Event(i64),
    /// A document, invocation or task: written when its run is.
    Record,
    /// A checkpoint, at this place (1-based) among the batch's checkpoints.
    Checkpoint(i64),
    /// A workspace write, at this place (1-based) among the batch's writes.
    File(i64),
}

/// One caller's writes: its run's place in the batch's runs (1-based), and each write's key.
pub(super) struct UnitKeys {
    pub run: i64,
    pub has_events: bool,
    pub writes: Vec<Key>,
}

/// The statement's parameters for one batch, and where each caller's answers are among them.
#[derive(Default)]
pub(super) struct BatchParams<'b> {
    runs: Vec<&'b str>,
    run_events: Vec<i64>,
    run_statuses: Vec<Option<&'b str>>,
    unit_runs: Vec<&'b str>,
    unit_places: Vec<i64>,
    unit_spans: Vec<i32>,
    unit_bodies: Vec<std::borrow::Cow<'b, str>>,
    doc_runs: Vec<&'b str>,
    doc_paths: Vec<&'b str>,
    doc_bodies: Vec<&'b str>,
    inv_runs: Vec<&'b str>,
    inv_ids: Vec<&'b str>,
    inv_bodies: Vec<&'b str>,
    task_runs: Vec<&'b str>,
    task_ids: Vec<&'b str>,
    task_parents: Vec<&'b str>,
    task_children: Vec<&'b str>,
    task_keys: Vec<&'b str>,
    task_delegations: Vec<bool>,
    task_bodies: Vec<&'b str>,
    cp_runs: Vec<&'b str>,
    cp_paths: Vec<&'b str>,
    cp_heads: Vec<&'b str>,
    file_runs: Vec<&'b str>,
    file_paths: Vec<&'b str>,
    file_above: Vec<&'b str>,
    file_contents: Vec<&'b str>,
    file_shas: Vec<&'b str>,
    file_appends: Vec<bool>,
    file_guards: Vec<&'b str>,
    file_expected: Vec<Option<&'b str>>,
    /// Each pending caller's keys, in batch order.
    pub keys: Vec<UnitKeys>,
}

impl<'b> BatchParams<'b> {
    /// The parameters of the units `batch` (each a run's id and its writes), in queue order.
    pub(super) fn of(batch: impl ExactSizeIterator<Item = (&'b str, &'b [Write])>) -> Self {
        let mut p = Self {
            keys: Vec::with_capacity(batch.len()),
            ..Self::default()
        };
        let mut run_places: HashMap<&'b str, usize> = HashMap::new();
        // The last write of a key wins, as if the writes had run one after another; the
        // statement's upserts may not touch one row twice.
        let mut doc_places: HashMap<(&'b str, &'b str), usize> = HashMap::new();
        let mut inv_places: HashMap<(&'b str, &'b str), usize> = HashMap::new();
        for (run_id, writes) in batch {
            let run = *run_places.entry(run_id).or_insert_with(|| {
                p.runs.push(run_id);
                p.run_events.push(0);
                p.run_statuses.push(None);
                p.runs.len() - 1
            });
            let mut unit = UnitKeys {
                run: ordinal(run + 1),
                has_events: false,
                writes: Vec::with_capacity(writes.len()),
            };
            let mut events: Vec<&'b str> = Vec::new();
            for write in writes {
                unit.writes.push(match write {
                    Write::Event { body, status } => {
                        p.run_events[run] += 1;
                        if status.is_some() {
                            p.run_statuses[run] = status.as_deref();
                        }
                        events.push(body);
                        Key::Event(p.run_events[run])
                    }
                    Write::Document { path, body } => {
                        upsert(
                            &mut doc_places,
                            (run_id, path),
                            body,
                            [&mut p.doc_runs, &mut p.doc_paths, &mut p.doc_bodies],
                        );
                        Key::Record
                    }
                    Write::Invocation {
                        invocation_id,
                        body,
                    } => {
                        upsert(
                            &mut inv_places,
                            (run_id, invocation_id),
                            body,
                            [&mut p.inv_runs, &mut p.inv_ids, &mut p.inv_bodies],
                        );
                        Key::Record
                    }
                    Write::Task(task) => {
                        p.task_runs.push(run_id);
                        p.task_ids.push(&task.task_id);
                        p.task_parents.push(&task.parent_id);
                        p.task_children.push(&task.child_id);
                        p.task_keys.push(&task.workspace_key);
                        p.task_delegations.push(task.delegation);
                        p.task_bodies.push(&task.body);
                        Key::Record
                    }
                    Write::Checkpoint { paths, head } => {
                        p.cp_runs.push(run_id);
                        p.cp_paths.push(paths);
                        p.cp_heads.push(head);
                        Key::Checkpoint(ordinal(p.cp_runs.len()))
                    }
                    Write::File(file) => {
                        p.file_runs.push(run_id);
                        p.file_paths.push(&file.path);
                        p.file_above.push(&file.above);
                        p.file_contents.push(&file.content);
                        p.file_shas.push(&file.sha256);
                        p.file_appends.push(file.append);
                        p.file_guards.push(file.guard);
                        p.file_expected.push(file.expected.as_deref());
                        Key::File(ordinal(p.file_runs.len()))
                    }
                });
            }
            if !events.is_empty() {
                unit.has_events = true;
                p.unit_runs.push(run_id);
                p.unit_places.push(p.run_events[run]);
                p.unit_spans
                    .push(i32::try_from(events.len()).unwrap_or(i32::MAX));
                p.unit_bodies.push(unit_row(&events));
            }
            p.keys.push(unit);
        }
        p
    }

    pub(super) async fn send(
        &self,
        conn: &Client,
        statement: &Statement,
        owner_id: &String,
        token: &str,
        acknowledged: &[String],
    ) -> Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
        let params: [&(dyn ToSql + Sync); 34] = [
            owner_id,
            &self.runs,
            &self.run_events,
            &self.run_statuses,
            &self.unit_runs,
            &self.unit_places,
            &self.unit_spans,
            &self.unit_bodies,
            &self.doc_runs,
            &self.doc_paths,
            &self.doc_bodies,
            &self.inv_runs,
            &self.inv_ids,
            &self.inv_bodies,
            &self.task_runs,
            &self.task_ids,
            &self.task_parents,
            &self.task_children,
            &self.task_keys,
            &self.task_delegations,
            &self.task_bodies,
            &self.cp_runs,
            &self.cp_paths,
            &self.cp_heads,
            &token,
            &acknowledged,
            &self.file_runs,
            &self.file_paths,
            &self.file_above,
            &self.file_contents,
            &self.file_shas,
            &self.file_appends,
            &self.file_guards,
            &self.file_expected,
        ];
        conn.query(statement, &params).await
    }
}

/// Adds a keyed record (run, key, body) to its three columns, or replaces the body of the same
/// key's earlier write in this batch.
fn upsert<'b>(
    places: &mut HashMap<(&'b str, &'b str), usize>,
    key: (&'b str, &'b str),
    body: &'b str,
    [runs, keys, bodies]: [&mut Vec<&'b str>; 3],
) {
    match places.get(&key) {
        Some(&place) => bodies[place] = body,
        None => {
            places.insert(key, bodies.len());
            runs.push(key.0);
            keys.push(key.1);
            bodies.push(body);
        }
    }
}

/// The `events` row of a unit's events (migration 20): one event's JSON as it is, several as
/// a JSON array of them in order.
fn unit_row<'b>(events: &[&'b str]) -> std::borrow::Cow<'b, str> {
    match events {
        [one] => std::borrow::Cow::Borrowed(one),
        many => {
            let length = many.iter().map(|body| body.len() + 1).sum::<usize>() + 1;
            let mut row = String::with_capacity(length);
            row.push('[');
            for (index, body) in many.iter().enumerate() {
                if index > 0 {
                    row.push(',');
                }
                row.push_str(body);
            }
            row.push(']');
            std::borrow::Cow::Owned(row)
        }
    }
}

pub(super) fn ordinal(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_of_several_events_is_one_json_array_row() {
        assert_eq!(unit_row(&["{\"a\":1}"]), "{\"a\":1}");
        assert_eq!(unit_row(&["{\"a\":1}", "{}", "[]"]), "[{\"a\":1},{},[]]");
    }
}
