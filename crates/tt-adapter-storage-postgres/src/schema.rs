//! Versioned schema migrations the store applies itself when it opens: each is applied once,
//! in order, in its own transaction, recorded in `schema_migrations`, and serialized across
//! hosts by an advisory lock so two runtimes opening one database at once do not race.

use tokio_postgres::Client;

use crate::error::{PgResult, PgStoreError};

/// The advisory-lock key that serializes migrations ("tt-schema" in ASCII, as an i64).
const MIGRATION_LOCK_KEY: i64 = 0x7474_2d73_6368_656d;

/// The migrations, in order; a released version is never edited, only followed by a new one.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "runs, documents, invocations, tasks, journal, profiles",
        r#"
CREATE TABLE runs (
    run_id      text PRIMARY KEY,
    created_ms  bigint NOT NULL,
    body        text NOT NULL,
    manifest    text NOT NULL,
    last_seq    bigint NOT NULL DEFAULT 0
);
CREATE INDEX runs_newest_first ON runs (created_ms DESC, run_id);
CREATE TABLE run_documents (
    run_id  text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    path    text NOT NULL,
    body    text NOT NULL,
    PRIMARY KEY (run_id, path)
);
CREATE TABLE invocations (
    run_id         text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    invocation_id  text NOT NULL,
    body           text NOT NULL,
    PRIMARY KEY (run_id, invocation_id)
);
CREATE TABLE tasks (
    run_id         text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    task_id        text NOT NULL,
    parent_id      text NOT NULL,
    child_id       text NOT NULL,
    workspace_key  text NOT NULL,
    delegation     boolean NOT NULL,
    body           text NOT NULL,
    PRIMARY KEY (run_id, task_id)
);
CREATE INDEX tasks_by_parent ON tasks (run_id, parent_id);
CREATE INDEX tasks_by_child ON tasks (run_id, child_id);
CREATE TABLE events (
    run_id  text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq     bigint NOT NULL,
    body    text NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE profiles (
    profile_id  text PRIMARY KEY,
    body        text NOT NULL
);
"#,
    ),
    (
        2,
        "workspace files, checkpoints, persistent states",
        r#"
ALTER TABLE runs
    ADD COLUMN workspace_id text NOT NULL DEFAULT '',
    ADD COLUMN checkpoint_seq bigint NOT NULL DEFAULT 0;
CREATE TABLE tt_files (
    run_id   text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    path     text NOT NULL,
    content  text NOT NULL,
    sha256   text NOT NULL,
    PRIMARY KEY (run_id, path)
);
CREATE TABLE tt_checkpoints (
    run_id  text NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq     bigint NOT NULL,
    record  text NOT NULL,
    files   text NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE tt_persistent_states (
    workspace_id  text NOT NULL,
    state_id      text NOT NULL,
    manifest      text NOT NULL,
    PRIMARY KEY (workspace_id, state_id)
);
CREATE TABLE tt_state_files (
    workspace_id  text NOT NULL,
    state_id      text NOT NULL,
    path          text NOT NULL,
    content       text NOT NULL,
    PRIMARY KEY (workspace_id, state_id, path)
);
"#,
    ),
    (
        3,
        "run leases",
        r#"
CREATE TABLE run_leases (
    run_id      text PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
    owner_id    text NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX run_leases_by_expiry ON run_leases (expires_at);
"#,
    ),
    (
        4,
        "unfinished runs indexed for recovery",
        r#"
ALTER TABLE runs ADD COLUMN unfinished boolean NOT NULL DEFAULT true;
UPDATE runs SET unfinished = (body::json ->> 'status')
    NOT IN ('completed', 'partial_success', 'failed', 'cancelled', 'interrupted');
CREATE INDEX runs_unfinished ON runs (created_ms, run_id) WHERE unfinished;
"#,
    ),
    (
        5,
        "skills",
        r#"
CREATE TABLE tt_skill_files (
    scope     text NOT NULL,
    skill_id  text NOT NULL,
    path      text NOT NULL,
    content   bytea NOT NULL,
    PRIMARY KEY (scope, skill_id, path)
);
"#,
    ),
    (
        6,
        "owner locks",
        r#"
ALTER TABLE run_leases ADD COLUMN locked boolean NOT NULL DEFAULT false;
"#,
    ),
    (
        7,
        "journal and run documents without a per-row foreign key check",
        // The group commit's statement writes events and documents only for a run whose row
        // it updates (events) or whose lease row it locks (both), so the reference holds by
        // construction; the check per row cost a lock on the run row each (docs/storage.md).
        r#"
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_run_id_fkey;
ALTER TABLE run_documents DROP CONSTRAINT IF EXISTS run_documents_run_id_fkey;
"#,
    ),
    (
        8,
        "transcripts",
        r#"
CREATE TABLE tt_transcript_entries (
    entry_id      bigserial PRIMARY KEY,
    workspace_id  text NOT NULL,
    body          text NOT NULL
);
CREATE INDEX tt_transcript_entries_by_workspace ON tt_transcript_entries (workspace_id, entry_id);
"#,
    ),
    (
        9,
        "workspace writes and checkpoints in one statement each",
        // A file write was five round trips (begin, fence, probe, upsert, commit) and a
        // checkpoint seven; each is now one call of a function that does the same steps in
        // the same order under the same locks (docs/storage.md). The functions fence every
        // write on the run's lease, so the per-row foreign key checks (a lock of the run row
        // each) go, as migration 7 did for the journal.
        r#"
ALTER TABLE tt_files DROP CONSTRAINT IF EXISTS tt_files_run_id_fkey;
ALTER TABLE tt_checkpoints DROP CONSTRAINT IF EXISTS tt_checkpoints_run_id_fkey;
-- Paths in byte order, so "a file below this path" is an index range, not a scan of the
-- run's files (`starts_with` cannot use the primary key).
CREATE INDEX tt_files_by_path_bytes ON tt_files (run_id, (path COLLATE "C"));

-- The lease fence of every write: 'no_run', 'lost', or NULL when this owner holds the run.
CREATE FUNCTION tt_fence(p_run text, p_owner text) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM runs WHERE run_id = p_run) THEN
        RETURN 'no_run';
    END IF;
    PERFORM 1 FROM run_leases WHERE run_id = p_run AND owner_id = p_owner FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN 'lost';
    END IF;
    RETURN NULL;
END
$fn$;

-- Writes (or appends to) one file under its path's lock: the fence, the directory checks,
-- the guard ('none', 'must_not_exist', 'must_match' with p_expected), then the upsert.
-- outcome: 'written', 'refused' (the guard; previous_sha256 is what was there), 'no_run',
-- 'lost', 'is_directory', 'not_a_directory' (detail: the file above).
CREATE FUNCTION tt_put_file(
    p_run text, p_owner text, p_path text, p_above text[], p_content text, p_sha256 text,
    p_append boolean, p_guard text, p_expected text)
RETURNS TABLE (outcome text, detail text, previous_sha256 text, new_sha256 text,
               new_bytes bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    fenced text;
    file_above text;
    old_content text;
    old_sha text;
    new_content text;
BEGIN
    fenced := tt_fence(p_run, p_owner);
    IF fenced IS NOT NULL THEN
        RETURN QUERY SELECT fenced, NULL::text, NULL::text, NULL::text, NULL::bigint;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_run || '/' || p_path, 0));
    -- Below `p_path/` in byte order: from `p_path/` up to `p_path0` ('0' follows '/').
    IF EXISTS (SELECT 1 FROM tt_files f
               WHERE f.run_id = p_run
                 AND f.path COLLATE "C" >= p_path || '/'
                 AND f.path COLLATE "C" < p_path || '0') THEN
        RETURN QUERY SELECT 'is_directory'::text, NULL::text, NULL::text, NULL::text,
                            NULL::bigint;
        RETURN;
    END IF;
    SELECT f.path INTO file_above FROM tt_files f
    WHERE f.run_id = p_run AND f.path = ANY (p_above) LIMIT 1;
    IF file_above IS NOT NULL THEN
        RETURN QUERY SELECT 'not_a_directory'::text, file_above, NULL::text, NULL::text,
                            NULL::bigint;
        RETURN;
    END IF;
    SELECT f.content, f.sha256 INTO old_content, old_sha FROM tt_files f
    WHERE f.run_id = p_run AND f.path = p_path;
    IF (p_guard = 'must_not_exist' AND old_sha IS NOT NULL)
       OR (p_guard = 'must_match' AND old_sha IS DISTINCT FROM p_expected) THEN
        RETURN QUERY SELECT 'refused'::text, NULL::text, old_sha, NULL::text, NULL::bigint;
        RETURN;
    END IF;
    IF p_append AND old_content IS NOT NULL THEN
        new_content := old_content || p_content;
        p_sha256 := encode(sha256(convert_to(new_content, 'UTF8')), 'hex');
    ELSE
        new_content := p_content;
    END IF;
    INSERT INTO tt_files AS f (run_id, path, content, sha256)
    VALUES (p_run, p_path, new_content, p_sha256)
    ON CONFLICT (run_id, path) DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256;
    RETURN QUERY SELECT 'written'::text, NULL::text, old_sha, p_sha256,
                        octet_length(convert_to(new_content, 'UTF8'))::bigint;
END
$fn$;

-- A checkpoint of the named files (those that exist, in the order named): the next number
-- of the run's checkpoints under their lock, the files' fingerprints and text, the record
-- (p_head's fields with id, seq and files added). outcome: 'created', 'no_run' or 'lost'.
CREATE FUNCTION tt_create_checkpoint(p_run text, p_owner text, p_paths text[], p_head text)
RETURNS TABLE (outcome text, checkpoint_seq bigint, fingerprints text)
LANGUAGE plpgsql AS $fn$
DECLARE
    fenced text;
    next_seq bigint;
    prints json;
    texts json;
BEGIN
    fenced := tt_fence(p_run, p_owner);
    IF fenced IS NOT NULL THEN
        RETURN QUERY SELECT fenced, NULL::bigint, NULL::text;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_run || '#checkpoints', 0));
    SELECT coalesce(max(c.seq), 0) + 1 INTO next_seq FROM tt_checkpoints c
    WHERE c.run_id = p_run;
    SELECT coalesce(json_agg(json_build_object(
               'path', f.path, 'sha256', f.sha256,
               'bytes', octet_length(convert_to(f.content, 'UTF8'))) ORDER BY p.ord), '[]'),
           coalesce(json_agg(f.content ORDER BY p.ord), '[]')
    INTO prints, texts
    FROM unnest(p_paths) WITH ORDINALITY AS p (path, ord)
    JOIN tt_files f ON f.run_id = p_run AND f.path = p.path;
    INSERT INTO tt_checkpoints (run_id, seq, record, files)
    VALUES (p_run, next_seq,
            (p_head::jsonb || jsonb_build_object(
                'id', 'cp_' || CASE WHEN next_seq < 1000000 THEN lpad(next_seq::text, 6, '0')
                                    ELSE next_seq::text END,
                'seq', next_seq,
                'files', prints))::text,
            texts::text);
    RETURN QUERY SELECT 'created'::text, next_seq, prints::text;
END
$fn$;
"#,
    ),
    (
        10,
        "checkpoints are written by the group commit, which numbers them",
        // The committer's batch statement writes checkpoints now (`commit.rs`): one
        // transaction for many, no lock held across a commit's flush.
        "DROP FUNCTION tt_create_checkpoint(text, text, text[], text);",
    ),
    (
        11,
        "a file write and a delegation's workspace key read only the rows they name",
        // Both lookups grew with the run (and `tt_put_file` fences lease first, one query
        // instead of two). `tt_put_file` asked for "a file at any of these
        // paths" with `= ANY`, and its cached generic plan (made while the table was small and
        // had no statistics) scanned all the run's files for it; each path is now a lookup of
        // the primary key. The workspace keys of an agent id were found by filtering every task
        // of the run by a prefix; the index below makes the prefix a range (runs.rs).
        r#"
CREATE INDEX tasks_by_workspace_key ON tasks (run_id, (workspace_key COLLATE "C"));

CREATE OR REPLACE FUNCTION tt_put_file(
    p_run text, p_owner text, p_path text, p_above text[], p_content text, p_sha256 text,
    p_append boolean, p_guard text, p_expected text)
RETURNS TABLE (outcome text, detail text, previous_sha256 text, new_sha256 text,
               new_bytes bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    above text;
    old_content text;
    old_sha text;
    new_content text;
BEGIN
    -- The fence (`tt_fence`), lease first: a lease row implies its run, so the run is looked
    -- up only when this store holds no lease of it.
    PERFORM 1 FROM run_leases WHERE run_id = p_run AND owner_id = p_owner FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT CASE WHEN EXISTS (SELECT 1 FROM runs WHERE run_id = p_run)
                                 THEN 'lost' ELSE 'no_run' END,
                            NULL::text, NULL::text, NULL::text, NULL::bigint;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_run || '/' || p_path, 0));
    -- Below `p_path/` in byte order: from `p_path/` up to `p_path0` ('0' follows '/').
    IF EXISTS (SELECT 1 FROM tt_files f
               WHERE f.run_id = p_run
                 AND f.path COLLATE "C" >= p_path || '/'
                 AND f.path COLLATE "C" < p_path || '0') THEN
        RETURN QUERY SELECT 'is_directory'::text, NULL::text, NULL::text, NULL::text,
                            NULL::bigint;
        RETURN;
    END IF;
    -- A file at any ancestor (at most one can exist): a primary-key lookup each.
    FOREACH above IN ARRAY p_above LOOP
        IF EXISTS (SELECT 1 FROM tt_files f WHERE f.run_id = p_run AND f.path = above) THEN
            RETURN QUERY SELECT 'not_a_directory'::text, above, NULL::text, NULL::text,
                                NULL::bigint;
            RETURN;
        END IF;
    END LOOP;
    SELECT f.content, f.sha256 INTO old_content, old_sha FROM tt_files f
    WHERE f.run_id = p_run AND f.path = p_path;
    IF (p_guard = 'must_not_exist' AND old_sha IS NOT NULL)
       OR (p_guard = 'must_match' AND old_sha IS DISTINCT FROM p_expected) THEN
        RETURN QUERY SELECT 'refused'::text, NULL::text, old_sha, NULL::text, NULL::bigint;
        RETURN;
    END IF;
    IF p_append AND old_content IS NOT NULL THEN
        new_content := old_content || p_content;
        p_sha256 := encode(sha256(convert_to(new_content, 'UTF8')), 'hex');
    ELSE
        new_content := p_content;
    END IF;
    INSERT INTO tt_files AS f (run_id, path, content, sha256)
    VALUES (p_run, p_path, new_content, p_sha256)
    ON CONFLICT (run_id, path) DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256;
    RETURN QUERY SELECT 'written'::text, NULL::text, old_sha, p_sha256,
                        octet_length(convert_to(new_content, 'UTF8'))::bigint;
END
$fn$;
"#,
    ),
    (
        12,
        "the head of each conversation's persistent state",
        // The one-writer rule of docs/storage.md: the run whose promoted state a conversation's
        // next runs build on, moved by compare-and-swap under a per-conversation advisory lock.
        r#"
CREATE TABLE tt_chat_heads (
    workspace_id text PRIMARY KEY,
    run_id       text NOT NULL
);
"#,
    ),
    (
        13,
        "each group-commit batch records its answers under its token",
        // A batch whose connection was lost before its answer arrived may have committed; its
        // token tells (commit.rs), so it is never written twice. A committer deletes the
        // tokens of the batches whose answers it received with its next batch.
        r#"
CREATE TABLE tt_commit_batches (
    token        text PRIMARY KEY,
    answers      text NOT NULL,
    committed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
"#,
    ),
    (
        14,
        "each run's latest journaled status, written with the event that states it",
        // The group commit sets it in the statement that stores a `status_changed` event, so a
        // reader in another process reads the status the journal says without a journal scan
        // (runs.rs, `observed.rs`). NULL: no `status_changed` journaled (or written before).
        r#"
ALTER TABLE runs ADD COLUMN journal_status text;
"#,
    ),
    (
        15,
        "registered MCP servers and their catalogs",
        // One row per registration (docs/tools.md), so every host of the database offers the
        // same servers; the body is the entry as JSON (registration and catalog snapshot).
        r#"
CREATE TABLE tt_mcp_servers (
    name       text PRIMARY KEY,
    body       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
"#,
    ),
    (
        16,
        "a run created or changed notifies channel tt_runs with its id",
        // The runs list's live feed across hosts (`run_watch.rs`): a new run, a saved record
        // or a new journaled status notifies at commit. A journal append that states no
        // status (only `last_seq` moves) does not; those are heard on `tt_journal`.
        r#"
CREATE FUNCTION tt_notify_run_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_notify('tt_runs', NEW.run_id);
    RETURN NULL;
END
$fn$;
CREATE TRIGGER tt_run_created AFTER INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION tt_notify_run_changed();
CREATE TRIGGER tt_run_changed AFTER UPDATE ON runs
    FOR EACH ROW
    WHEN (OLD.body IS DISTINCT FROM NEW.body OR OLD.journal_status IS DISTINCT FROM NEW.journal_status)
    EXECUTE FUNCTION tt_notify_run_changed();
"#,
    ),
    (
        17,
        "the runs of a conversation by index",
        // `list_chat_runs` (a conversation's latest state, its one-writer rule) reads only the
        // conversation's rows, whatever the database holds. An expression index on the body
        // the row already keeps: nothing to backfill, nothing more to write. A body that is
        // not JSON (damage) indexes as NULL rather than refusing the write.
        r#"
CREATE FUNCTION tt_run_chat(body text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN (body::jsonb) ->> 'stableChatId';
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
CREATE INDEX runs_by_chat ON runs (tt_run_chat(body));
"#,
    ),
    (
        18,
        "named model connections",
        // One row per name (`ConnectionRepository`), so every host of the database offers the
        // same connections with no file under its data dir; the body is the document as
        // written (it names the variable holding a key, never the key).
        r#"
CREATE TABLE tt_connections (
    name       text PRIMARY KEY,
    body       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
"#,
    ),
    (
        19,
        "preset templates",
        // One row per preset (`PresetTemplateRepository`): the template prompt broker of every
        // host of the database assembles `preset.mode = "ref"` prompts from the same
        // templates, with no file under its data dir; the body is the template as written.
        r#"
CREATE TABLE tt_preset_templates (
    api_id     text NOT NULL,
    name       text NOT NULL,
    body       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (api_id, name)
);
"#,
    ),
    (
        20,
        "a unit's events in one row",
        // The events a unit of the group commit journals together (a tool call's request and
        // start, a stored model answer's three events, ...) are one row: `seq` is the last
        // seq of the row, `span` how many events it holds (`seq - span + 1 ..= seq`), and a
        // row of more than one holds a JSON array of the events. Rows written before hold one
        // event each, as `span`'s default says: nothing to rewrite.
        r#"
ALTER TABLE events ADD COLUMN span integer NOT NULL DEFAULT 1;
"#,
    ),
];

/// Applies every migration the database has not seen; returns the schema version.
pub async fn migrate(client: &mut Client) -> PgResult<i32> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version     integer PRIMARY KEY,
                 description text NOT NULL,
                 applied_at  timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(|err| PgStoreError::pg("creating schema_migrations", err))?;
    let mut version = 0;
    for (number, description, sql) in MIGRATIONS {
        let tx = client
            .transaction()
            .await
            .map_err(|err| PgStoreError::pg("starting a migration", err))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
            .await
            .map_err(|err| PgStoreError::pg("locking the schema", err))?;
        let applied = tx
            .query_opt(
                "SELECT 1 FROM schema_migrations WHERE version = $1",
                &[number],
            )
            .await
            .map_err(|err| PgStoreError::pg("reading schema_migrations", err))?
            .is_some();
        if !applied {
            tx.batch_execute(sql)
                .await
                .map_err(|err| PgStoreError::pg(format!("migration {number}"), err))?;
            tx.execute(
                "INSERT INTO schema_migrations (version, description) VALUES ($1, $2)",
                &[number, description],
            )
            .await
            .map_err(|err| PgStoreError::pg(format!("recording migration {number}"), err))?;
        }
        tx.commit()
            .await
            .map_err(|err| PgStoreError::pg(format!("committing migration {number}"), err))?;
        version = *number;
    }
    refuse_newer_schema(client, version).await?;
    Ok(version)
}

/// Refuses a database a newer build migrated past `known`, the last migration this build has:
/// what such a migration changed may read as damage here (migration 20 stores several events
/// in one row, which a build without it cannot split). Every host on one database needs a
/// build that knows all of its migrations.
async fn refuse_newer_schema(client: &mut Client, known: i32) -> PgResult<()> {
    let row = client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map_err(|err| PgStoreError::pg("reading schema_migrations", err))?;
    let at: i32 = row.get(0);
    if at > known {
        return Err(PgStoreError::Config(format!(
            "the database's schema is at version {at}, newer than this build's {known}: \
             every host on one database needs a build that knows all of its migrations"
        )));
    }
    Ok(())
}
