//! The commands that act on a run without running a model: `guide`, `cancel` and `abandon`.
//! A run another process executes stays locked to it: writing to it is refused with
//! `agent.run_locked` (guidance is the exception: it goes to the run's mailbox in the store).

use crate::storage::Storage;

/// `tt-agent guide`: queues a note for the run's foreground agent.
pub(crate) async fn guide(storage: &Storage, run_id: &str, text: String) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    let receipt = runtime
        .submit_guidance(
            run_id,
            tt_runtime::SubmitGuidanceRequest {
                text,
                client_guidance_id: None,
            },
        )
        .await?;
    println!(
        "guidance {} queued ({} waiting)",
        receipt.guidance_id, receipt.pending_count
    );
    Ok(())
}

/// `tt-agent cancel`: cancels the run, or one delegated task and what it delegated.
pub(crate) async fn cancel(
    storage: &Storage,
    run_id: &str,
    task: Option<String>,
) -> anyhow::Result<()> {
    let runtime = storage.writer_runtime()?;
    match task {
        Some(task_id) => {
            let task = runtime.cancel_task(run_id, &task_id).await?;
            println!(
                "Task {} ({}) cancelled; run {run_id} goes on.",
                task.id, task.target_profile_id
            );
        }
        None => {
            let run = runtime.cancel_run(run_id).await?;
            println!("Run {run_id}: {}.", run.status.as_str());
        }
    }
    Ok(())
}

/// `tt-agent abandon`: gives a run up so that it is never resumed.
pub(crate) async fn abandon(storage: &Storage, run_id: &str) -> anyhow::Result<()> {
    let run = storage.writer_runtime()?.abandon_run(run_id).await?;
    println!(
        "Run {run_id} abandoned: it stays {} and will not be resumed.",
        run.status.as_str()
    );
    Ok(())
}
