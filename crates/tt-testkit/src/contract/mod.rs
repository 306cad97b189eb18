//! Storage contract suites: the behaviour every implementation of the five storage ports must
//! share, written once and run against each store (`storage_contract_tests!`), so the in-memory
//! fake and the file-system adapter cannot drift apart. `SkillRepository`,
//! `TranscriptRepository`, `McpServerRepository`, `ConnectionRepository` and
//! `PresetTemplateRepository` have their own suites (`skills_contract_tests!`,
//! `transcripts_contract_tests!`, `mcp_servers_contract_tests!`, `connections_contract_tests!`,
//! `preset_templates_contract_tests!`), since they are stored apart from runs.
// These functions are test assertions shipped as a library: failing loudly is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Declares a suite's exported macro: `$name!($factory)` expands to `mod $suite` with one
/// `#[tokio::test]` per case, each running `contract::$module::$case` on a fresh `$factory`
/// (an expression, evaluated per case, that may `.await`).
macro_rules! contract_suite_macro {
    ($(#[$doc:meta])* $name:ident => $suite:ident, $module:ident { $($case:ident),* $(,)? }) => {
        contract_suite_macro! { @with_dollar ($) $(#[$doc])* $name => $suite, $module { $($case),* } }
    };
    (@with_dollar ($d:tt) $(#[$doc:meta])* $name:ident => $suite:ident, $module:ident { $($case:ident),* }) => {
        $(#[$doc])*
        #[macro_export]
        macro_rules! $name {
            ($d factory:expr) => {
                $crate::__contract_suite! { $suite, $module, $d factory; $($case),* }
            };
        }
    };
}

pub mod chained;
pub mod checkpoints;
pub mod connections;
pub mod invocations;
pub mod journal;
pub mod mcp_servers;
pub mod presets;
pub mod profiles;
pub mod runs;
pub mod skills;
pub mod transcripts;
pub mod workspace;

pub use connections::ConnectionsUnderTest;
pub use mcp_servers::McpServersUnderTest;
pub use presets::PresetTemplatesUnderTest;
pub use skills::SkillsUnderTest;
pub use transcripts::TranscriptsUnderTest;

use serde_json::{Value, json};
use std::sync::Arc;
use tt_domain::event::EventLevel;
use tt_domain::event::{AgentRunEvent, EventScope, NewRunEvent, RunEventType};
use tt_domain::event_payload::RunEventPayload;
use tt_domain::ids::{EventId, InvocationId, ProfileId, RunId, TaskId};
use tt_domain::invocation::{AgentInvocation, InvocationKind, InvocationStatus};
use tt_domain::profile::AgentProfileDefinition;
use tt_domain::run::{AgentRun, ConversationKind};
use tt_domain::task::{AgentTaskRecord, TaskContinuation, TaskStatus, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::{RunManifest, WorkspaceAccessPolicy, WorkspacePath};
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, ProfileRepository, RunJournal, StorageError,
    StoragePorts, WorkspaceRepository,
};

/// One store kept apart from runs (connections, MCP servers, preset templates, transcripts)
/// under test: `reopen` gives a handle on the same stored data (a new one where the store can
/// be reopened).
pub struct RepositoryUnderTest<R: ?Sized> {
    pub repo: Arc<R>,
    pub reopen: Arc<dyn Fn() -> Arc<R> + Send + Sync>,
    /// Anything that must outlive the case, e.g. the `TempDir` holding the data root.
    pub _guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl<R: ?Sized + Send + Sync + 'static> RepositoryUnderTest<R> {
    /// A store that lives in memory: "reopening" it is another handle on the same data.
    pub fn shared(repo: Arc<R>) -> Self {
        let same = Arc::clone(&repo);
        Self {
            repo,
            reopen: Arc::new(move || Arc::clone(&same)),
            _guard: None,
        }
    }
}

/// One storage implementation, seen through each port, for one contract case.
pub struct StorageUnderTest {
    pub runs: Arc<dyn AgentRunRepository>,
    pub invocations: Arc<dyn AgentInvocationRepository>,
    pub journal: Arc<dyn RunJournal>,
    pub workspace: Arc<dyn WorkspaceRepository>,
    pub profiles: Arc<dyn ProfileRepository>,
    /// Writes a profile definition so `ProfileRepository` can be tested generically.
    pub seed_profile: Arc<dyn Fn(&AgentProfileDefinition) + Send + Sync>,
    /// Anything that must outlive the case, e.g. the `TempDir` holding the data root.
    pub _guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl StorageUnderTest {
    /// The five storage ports of `ports` (a store wraps itself as them with
    /// `StoragePorts::from_store`); `seed_profile` writes a profile definition.
    pub fn from_ports(
        ports: StoragePorts,
        seed_profile: impl Fn(&AgentProfileDefinition) + Send + Sync + 'static,
        guard: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Self {
        Self {
            runs: ports.runs,
            invocations: ports.invocations,
            journal: ports.journal,
            workspace: ports.workspace,
            profiles: ports.profiles,
            seed_profile: Arc::new(seed_profile),
            _guard: guard,
        }
    }
}

/// Expands to one `#[tokio::test]` per contract case (grouped in modules per port, inside
/// `mod storage_contract`), so each case reports on its own. `$factory` is an expression
/// evaluated afresh for every case that yields a `StorageUnderTest`; names it uses must be in
/// scope where the macro is invoked. The calling crate needs `tokio` as a (dev-)dependency.
///
/// ```ignore
/// fn store() -> StorageUnderTest { /* a fresh store */ }
/// tt_testkit::storage_contract_tests!(store());
/// ```
#[macro_export]
macro_rules! storage_contract_tests {
    ($factory:expr) => {
        $crate::__storage_contract_cases! { $factory;
            runs {
                create_and_load_run,
                create_run_twice_is_already_exists,
                missing_run_is_not_found,
                save_run_replaces_the_record,
                a_released_run_reads_back_and_is_written_again,
                list_runs_newest_first_with_paging,
                documents_round_trip_and_missing_is_none,
                serialized_documents_read_back_as_written,
            }
            invocations {
                invocations_round_trip_in_creation_order,
                tasks_round_trip_in_creation_order,
                records_of_one_millisecond_list_in_registration_order,
                tasks_are_found_by_parent_and_by_child,
                first_terminal_write_wins,
                concurrent_terminal_transitions_change_once,
            }
            journal {
                seqs_start_at_one_and_are_gapless,
                append_to_missing_run_is_not_found,
                append_all_numbers_in_order,
                commit_writes_records_with_their_events,
                pages_over_ten_thousand_events,
                pages_across_units_agree_with_the_whole,
                invocation_filter_includes_related_ids,
                concurrent_appends_are_gapless,
            }
            chained {
                commit_chained_writes_a_prefix_of_the_chain,
            }
            workspace {
                write_guards,
                concurrent_guarded_creates_have_one_winner,
                append_semantics,
                read_and_sha_errors,
                a_write_below_a_file_is_refused,
                list_depth_and_ordering,
                walk_files_bounds,
                persist_projection_and_promotion,
                a_base_state_id_that_is_no_storage_segment_is_refused,
                concurrent_chat_head_swaps_have_one_winner,
            }
            checkpoints {
                checkpoints,
                concurrent_checkpoints_are_numbered_once_each,
                checkpoint_records_read_back,
            }
            profiles {
                load_list_and_missing_profiles,
                deleted_profiles_are_gone,
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __storage_contract_cases {
    ($factory:expr; $($module:ident { $($case:ident),* $(,)? })*) => {
        mod storage_contract {
            #[allow(unused_imports)]
            use super::*;
            $(
                $crate::__contract_suite! { $module, $module, $factory; $($case),* }
            )*
        }
    };
}

/// One suite's cases as tests: `mod $suite` holds a test per case, each running
/// `contract::$module::$case` on a fresh `$factory`.
#[doc(hidden)]
#[macro_export]
macro_rules! __contract_suite {
    ($suite:ident, $module:ident, $factory:expr; $($case:ident),* $(,)?) => {
        mod $suite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    $crate::contract::$module::$case($factory).await;
                }
            )*
        }
    };
}

// ---- fixtures shared by the suites ----

/// A timestamp `millis` after the epoch.
pub fn ts(millis: i64) -> Timestamp {
    Timestamp::from_unix_millis(millis)
}

/// A logical workspace path (panics on a bad literal).
pub fn wp(raw: &str) -> WorkspacePath {
    WorkspacePath::parse(raw).unwrap()
}

/// The stable conversation all contract runs belong to (one workspace, so persist states chain).
pub const CONTRACT_CHAT_ID: &str = "contract-chat";

/// Event 1 (`evt_1`) of run `run_1`, journaled at 2026-01-01T00:00:00Z at info level, as a
/// reader of the journal gets it.
pub fn journaled_event(event_type: RunEventType, payload: Value) -> AgentRunEvent {
    AgentRunEvent {
        seq: 1,
        id: EventId::from_raw("evt_1"),
        run_id: RunId::from_raw("run_1"),
        timestamp: Timestamp::parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
        level: EventLevel::Info,
        event_type,
        payload,
    }
}

/// Run number `n`: id `run_contract_NNNN`, created at `n` seconds.
pub fn sample_run(n: u32) -> AgentRun {
    let id = RunId::from_raw(format!("run_contract_{n:04}"));
    let created = ts(i64::from(n) * 1_000);
    AgentRun {
        chat_ref: json!({"kind": "character", "characterId": "c1"}),
        generation_type: json!("normal"),
        profile_id: Some(ProfileId::parse("default-writer").unwrap()),
        ..AgentRun::new(id, ConversationKind::Character, CONTRACT_CHAT_ID, created)
    }
}

/// A plain run `id` in chat `chat-1`, created at `created` ms, with no profile and no chat
/// reference: the run a unit test of one tool or one record works in.
pub fn plain_run(id: &str, created: i64) -> AgentRun {
    AgentRun {
        generation_type: json!("normal"),
        ..AgentRun::new(
            RunId::from_raw(id),
            ConversationKind::Character,
            "chat-1",
            ts(created),
        )
    }
}

/// An in-memory store holding [`plain_run`]`(id, 0)` with every root visible and writable.
pub async fn store_with_run(id: &str) -> (Arc<crate::fakes::InMemoryStore>, RunId) {
    let store = crate::fakes::InMemoryStore::new();
    let run = plain_run(id, 0);
    store.create_run(&run, &manifest_for(&run)).await.unwrap();
    (store, run.id)
}

/// The manifest of a run with every root visible and writable.
pub fn manifest_for(run: &AgentRun) -> RunManifest {
    RunManifest {
        schema_version: 1,
        run_id: run.id.clone(),
        workspace_id: run.workspace_id.clone(),
        stable_chat_id: run.stable_chat_id.clone(),
        roots: WorkspaceAccessPolicy::full().manifest_roots(),
        created_at: run.created_at,
    }
}

/// Creates `sample_run(n)` with its manifest and returns it.
pub async fn create_sample_run(s: &StorageUnderTest, n: u32) -> AgentRun {
    let run = sample_run(n);
    s.runs.create_run(&run, &manifest_for(&run)).await.unwrap();
    run
}

pub fn invocation(run: &AgentRun, id: &str, created_at: i64) -> AgentInvocation {
    let kind = if id == "inv_root" {
        InvocationKind::Root
    } else {
        InvocationKind::Subagent
    };
    AgentInvocation {
        id: InvocationId::from_raw(id),
        run_id: run.id.clone(),
        parent_invocation_id: (id != "inv_root").then(InvocationId::root),
        profile_id: ProfileId::parse("default-writer").unwrap(),
        kind,
        status: InvocationStatus::Created,
        exit_policy: kind.exit_policy(),
        creation_seq: 0,
        created_at: ts(created_at),
        updated_at: ts(created_at),
    }
}

pub fn task(run: &AgentRun, id: &str, created_at: i64) -> AgentTaskRecord {
    AgentTaskRecord {
        id: TaskId::from_raw(id),
        run_id: run.id.clone(),
        parent_invocation_id: InvocationId::root(),
        child_invocation_id: InvocationId::from_raw(format!("inv_for_{id}")),
        target_profile_id: ProfileId::parse("critic").unwrap(),
        workspace_key: "critic".to_owned(),
        continuation: TaskContinuation::ReturnToParent,
        status: TaskStatus::Queued,
        task: tt_domain::brief::StoredBrief::task(
            json!({"objective": format!("objective of {id}")}),
        )
        .into(),
        budget: None,
        created_by_tool_call_id: Some(format!("call_{id}")),
        result_ref: None,
        error: None,
        creation_seq: 0,
        created_at: ts(created_at),
        updated_at: ts(created_at),
    }
}

/// A task transition to `status` with no result and no error.
pub fn transition_to(status: TaskStatus) -> TaskTransition {
    TaskTransition {
        status,
        result_ref: None,
        error: None,
    }
}

/// Event number `n` of a run: a `tool_call_started` scoped to `invocation_id`.
pub fn tool_event(run_id: &RunId, n: u64, invocation_id: &str) -> NewRunEvent {
    scoped_event(
        run_id,
        n,
        RunEventType::ToolCallStarted,
        json!({"invocationId": invocation_id, "n": n}),
        Some(EventScope::agent(&InvocationId::from_raw(invocation_id))),
    )
}

/// Event number `n` with the `eventScope` its type gives `payload` added, when `payload` is a
/// whole payload of that type (a partial one gets none: use [`scoped_event`]).
pub fn new_event(run_id: &RunId, n: u64, event_type: RunEventType, payload: Value) -> NewRunEvent {
    let scope = RunEventPayload::decode(&event_type, &payload)
        .ok()
        .and_then(|typed| typed.scope());
    scoped_event(run_id, n, event_type, payload, scope)
}

/// Event number `n` with `scope` as the `eventScope` of `payload`.
pub fn scoped_event(
    run_id: &RunId,
    n: u64,
    event_type: RunEventType,
    mut payload: Value,
    scope: Option<EventScope>,
) -> NewRunEvent {
    if let Some(scope) = scope {
        scope.add_to(&mut payload);
    }
    NewRunEvent {
        id: EventId::generate(format!("{n:032x}")),
        run_id: run_id.clone(),
        timestamp: ts(i64::try_from(n).unwrap()),
        level: EventLevel::Info,
        event_type,
        payload: payload.into(),
    }
}

/// Runs `work(i)` for every `i` in `0..count` at once, each on a task of its own (as a
/// fan-out's agents do), and returns their results in the order of `i`.
pub(crate) async fn at_once<T, Fut>(count: u64, work: impl Fn(u64) -> Fut) -> Vec<T>
where
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = (0..count).map(|i| tokio::spawn(work(i))).collect();
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        results.push(handle.await.unwrap());
    }
    results
}

/// Asserts that `result` failed with the given contract code.
#[track_caller]
pub fn assert_code<T: std::fmt::Debug>(
    result: Result<T, StorageError>,
    code: tt_domain::error_codes::Code,
) {
    match result {
        Err(err) => assert_eq!(err.code(), code, "unexpected error {err:?}"),
        Ok(value) => panic!("expected error {code}, got Ok({value:?})"),
    }
}

/// Asserts that `result` is `StorageError::AlreadyExists`.
#[track_caller]
pub fn assert_already_exists<T: std::fmt::Debug>(result: Result<T, StorageError>) {
    match result {
        Err(StorageError::AlreadyExists { .. }) => {}
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
}

/// Asserts that `result` is `StorageError::NotFound`.
#[track_caller]
pub fn assert_not_found<T: std::fmt::Debug>(result: Result<T, StorageError>) {
    match result {
        Err(StorageError::NotFound { .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
}
