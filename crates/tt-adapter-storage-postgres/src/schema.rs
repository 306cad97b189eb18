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
    Ok(version)
}
