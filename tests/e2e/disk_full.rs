//! A disk that fills up during a fan-out (every write from a chosen one on refused with ENOSPC,
//! through `FaultyStore` over the file store) never strands the run: whatever write the disk
//! refused first, the next runtime that opens the data dir finds the run in a terminal status
//! it can resume (or completed), `check` says what happened, and the resume completes.

use std::sync::Arc;
use tt_runtime::{
    AgentRunStatus, AgentRuntime, AgentRuntimeBuilder, CommitBridgeChoice, StoragePorts,
    StoreChoice, UserDataStore,
};
use tt_testkit::fakes::{DiskFault, FaultPlan, FaultyStore};

use crate::delegation::{WRITERS_ROOM, helper_profile};
use crate::resume_after_end::fan_out;
use crate::support::start_request;

/// A runtime over `dir` whose run, invocation, journal and workspace writes go through a
/// `FaultyStore` following `plan`; returns it with the number of writes it made so far.
async fn faulty_runtime(
    dir: &std::path::Path,
    plan: Option<FaultPlan>,
    only: Option<fn(&str) -> bool>,
) -> (AgentRuntime, Arc<FaultyStore<UserDataStore>>) {
    let inner = UserDataStore::open(dir).unwrap();
    let faulty = FaultyStore::wrap(Arc::clone(&inner));
    let ports = StoragePorts {
        runs: faulty.clone(),
        invocations: faulty.clone(),
        journal: faulty.clone(),
        workspace: faulty.clone(),
        profiles: inner,
        skills: None,
        transcripts: None,
        mcp_servers: None,
        connections: None,
        preset_templates: None,
        description: dir.display().to_string(),
    };
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(fan_out())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .store(StoreChoice::Ports(ports))
        .build()
        .unwrap();
    let mut lead: tt_runtime::AgentProfileDefinition =
        serde_json::from_str(WRITERS_ROOM[0]).unwrap();
    lead.id = tt_domain::ids::ProfileId::parse("lead").unwrap();
    runtime.save_profile(lead).await.unwrap();
    runtime.save_profile(helper_profile()).await.unwrap();
    faulty.set_plan(plan);
    faulty.fail_only(only);
    (runtime, faulty)
}

/// The fan-out on a disk that is full from the plan's write on, in a process of its own: a
/// tokio runtime that is dropped once the run has ended, as the process would exit (nothing of
/// it is left to write or hold the run's lock). `None` when the start itself was refused.
fn full_disk_run(
    dir: &std::path::Path,
    plan: Option<FaultPlan>,
    only: Option<fn(&str) -> bool>,
) -> (Option<String>, u64) {
    let process = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome = process.block_on(async {
        let (runtime, faulty) = faulty_runtime(dir, plan, only).await;
        let mut request = start_request();
        request.profile_id = Some("lead".into());
        let run_id = match runtime.start_run(request).await {
            Ok(run) => run.id.to_string(),
            Err(_) => return (None, faulty.writes()),
        };
        let ended = runtime.wait_for_run(&run_id).await.unwrap();
        assert!(ended.status.is_terminal(), "{ended:?}");
        (Some(run_id), faulty.writes())
    });
    drop(process);
    outcome
}

/// A disk full for new files and the journal's appends, while appends to the records still
/// fit: the run record (a new file replaced over it) and the run's end cannot be written, the
/// agents' records can.
fn new_files_and_the_journal(what: &str) -> bool {
    what.ends_with("/run.json") || what.ends_with("/events.jsonl")
}

#[test]
fn a_fan_out_on_a_disk_that_fills_up_is_resumable_by_the_next_runtime() {
    let later = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let clean = tempfile::tempdir().unwrap();
    let (run, writes) = full_disk_run(clean.path(), None, None);
    assert!(run.is_some() && writes > 40, "{writes}");
    let mut failures = Vec::new();
    let mut unwritten = 0;
    // Every third write, so the test stays short; each is a different moment of the fan-out.
    for at_write in (1..=writes).step_by(3) {
        let dir = tempfile::tempdir().unwrap();
        let plan = FaultPlan {
            at_write,
            sticky: true,
            fault: DiskFault::NoSpace,
        };
        let (run_id, _) = full_disk_run(dir.path(), Some(plan), Some(new_files_and_the_journal));
        let Some(run_id) = run_id else { continue };
        match later.block_on(resume_after(dir.path(), &run_id)) {
            Ok(named) => unwritten += u64::from(named),
            Err(failure) => failures.push(format!("{at_write}: {failure}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {writes}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Most of these runs lost their end, and `check` named it.
    assert!(unwritten * 6 > writes, "{unwritten} of {writes}");
}

/// A later runtime over `dir`, with room on the disk again: the run must be completed, or in a
/// terminal status it resumes from to completed, whole afterwards. `Ok(true)` when `check`
/// named its lost end first; what went wrong otherwise.
async fn resume_after(dir: &std::path::Path, run_id: &str) -> Result<bool, String> {
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(dir)
        .provider(fan_out())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .build()
        .unwrap();
    let stored = runtime.get_run(run_id).await.unwrap();
    if stored.status == AgentRunStatus::Completed {
        return Ok(false);
    }
    let check = runtime.check_run(run_id).await.unwrap();
    let ended = match runtime.resume_run(run_id).await {
        Ok(_) => runtime.wait_for_run(run_id).await.unwrap().status,
        Err(error) => {
            return Err(format!(
                "{:?} {:?}: {error:?}",
                stored.status, check.findings
            ));
        }
    };
    if ended != AgentRunStatus::Completed {
        return Err(format!("{:?} resumed to {ended:?}", stored.status));
    }
    let after = runtime.check_run(run_id).await.unwrap();
    if !after.findings.is_empty() {
        return Err(format!("resumed, but {:?}", after.findings));
    }
    Ok(check
        .findings
        .iter()
        .any(|finding| finding.code == "agent.run_end_unwritten"))
}
