//! Following a run in the terminal: its events live, then the agent tree, the published text
//! and the token usage. Shared by `demo` and `run`.

use tt_runtime::{AgentRun, AgentRuntime, StopSignals};

use crate::render::{EventPrinter, agent_tree};

/// Prints the run's events as they happen and a report at the end; returns the final run.
pub async fn follow(
    runtime: &AgentRuntime,
    run: &AgentRun,
    signals: &StopSignals,
) -> anyhow::Result<AgentRun> {
    println!(
        "run {} started (Ctrl-C or SIGTERM cancels it; a second one exits at once)\n",
        run.id
    );
    let mut stream = runtime.subscribe(run.id.as_str(), 0, None);
    let mut printer = EventPrinter::default();
    let requested = signals.requested();
    let mut cancel_requested = false;
    loop {
        let event = tokio::select! {
            event = stream.next() => event?,
            // SIGINT/SIGTERM (also one that came before the run started) cancels the run; the
            // stream then shows it stopping and ends.
            () = requested.cancelled(), if !cancel_requested => {
                cancel_requested = true;
                runtime.cancel_run(run.id.as_str()).await?;
                continue;
            }
        };
        let Some(event) = event else { break };
        if let Some(line) = printer.line(&event) {
            println!("{line}");
        }
    }
    let finished = runtime.wait_for_run(run.id.as_str()).await?;
    if let Some(failure) = runtime.unrecorded_failure(run.id.as_str()) {
        // The disk kept the reason out of the journal; say it here.
        println!(
            "run {} [{}]: {} (not recorded: {})",
            finished.status.as_str(),
            failure["code"].as_str().unwrap_or("?"),
            failure["technicalMessage"].as_str().unwrap_or("?"),
            failure["unrecordedBecause"].as_str().unwrap_or("?"),
        );
    }
    println!("\nagents:");
    print!(
        "{}",
        agent_tree(&runtime.timeline_projection(run.id.as_str()).await?)
    );
    let transcript = runtime.transcript(finished.workspace_id.as_str())?;
    match transcript
        .iter()
        .rfind(|entry| entry.run_id == finished.id.as_str())
    {
        Some(entry) => {
            println!(
                "\n── committed message {} ({}) ──",
                entry.message_id, entry.path
            );
            println!("{}", entry.content.trim_end());
            println!("──");
        }
        None => println!("\n(no message was committed)"),
    }
    let usage = runtime.usage(finished.id.as_str()).await?;
    let failed = match usage.failed_model_calls {
        0 => String::new(),
        n => format!(" ({n} failed, not counted)"),
    };
    println!(
        "model usage: {} completed calls{failed}, {} input tokens, {} output tokens",
        usage.model_calls, usage.input_tokens, usage.output_tokens
    );
    println!("run {} ended: {}", finished.id, finished.status.as_str());
    Ok(finished)
}
