//! Following a run in the terminal: its events live, then the agent tree, the published text
//! and the token usage. Shared by `demo` and `run`. While the run is live, each line typed on
//! standard input is sent to it as user guidance, or, while a tool call waits for approval,
//! answers that call (`crate::approve`).

use tokio::sync::mpsc;
use tt_runtime::{AgentRun, AgentRuntime, RunEventPayload, StopSignals, SubmitGuidanceRequest};

use crate::approve::TerminalApprovals;
use crate::render::{EventPrinter, agent_tree};

/// Prints the run's events as they happen and a report at the end; returns the final run.
/// `how` says how the run came to be followed: `started`, or `resumed`.
pub async fn follow(
    runtime: &AgentRuntime,
    run: &AgentRun,
    signals: &StopSignals,
    how: &str,
) -> anyhow::Result<AgentRun> {
    println!(
        "run {} {how} (Ctrl-C or SIGTERM cancels it; a second one exits at once; a line typed \
         here is sent to the agent as guidance, or answers a call waiting for approval)\n",
        run.id
    );
    let mut lines = StdinLines::start();
    let mut stdin_open = true;
    let mut approvals = TerminalApprovals::default();
    let mut stream = runtime.subscribe(run.id.as_str(), 0, None);
    let mut printer = EventPrinter::default();
    let requested = signals.requested();
    let mut cancel_requested = false;
    let mut otel = crate::otel_export::LiveExport::from_env();
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
            line = lines.next(), if stdin_open => {
                match line {
                    Some(line) if approvals.is_waiting() => {
                        approvals.answer(runtime, run, &line).await;
                    }
                    Some(line) => submit_line(runtime, run, &line).await,
                    None => stdin_open = false,
                }
                lines.want_next();
                continue;
            }
        };
        let Some(event) = event else { break };
        if let Some(line) = printer.line(&event) {
            println!("{line}");
        }
        if let Some(otel) = &mut otel {
            otel.on_event(runtime, run.id.as_str(), &event).await;
        }
        if let Some(Ok(payload)) = event.typed_payload() {
            match payload {
                RunEventPayload::ToolApprovalRequested(asked) => {
                    approvals.asked(runtime, run, &asked.approval_id).await;
                }
                RunEventPayload::ToolApprovalResolved(answered) => {
                    approvals.settled(&answered.approval_id);
                }
                RunEventPayload::ToolApprovalCancelled(withdrawn) => {
                    approvals.settled(&withdrawn.approval_id);
                }
                _ => {}
            }
        }
    }
    let finished = runtime.wait_for_run(run.id.as_str()).await?;
    if let Some(otel) = otel {
        otel.finish(runtime, run.id.as_str()).await;
    }
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
    let transcript = runtime.transcript(finished.workspace_id.as_str()).await?;
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
    let cached = match usage.cached_input_tokens {
        0 => String::new(),
        n => format!(" ({n} from the provider's cache)"),
    };
    println!(
        "model usage: {} completed calls{failed}, {} input tokens{cached}, {} output tokens{}",
        usage.model_calls,
        usage.input_tokens,
        usage.output_tokens,
        crate::render::cost(
            usage.cost_usd,
            usage.unpriced_model_calls,
            usage.model_calls
        )
    );
    println!("run {} ended: {}", finished.id, finished.status.as_str());
    Ok(finished)
}

/// Sends one typed line as guidance and says what became of it (a refusal is shown, not fatal:
/// the run goes on).
async fn submit_line(runtime: &AgentRuntime, run: &AgentRun, line: &str) {
    if line.trim().is_empty() {
        return;
    }
    let request = SubmitGuidanceRequest {
        text: line.to_owned(),
        client_guidance_id: None,
    };
    match runtime.submit_guidance(run.id.as_str(), request).await {
        Ok(receipt) => println!(
            "(guidance queued for the agent's next step; {} waiting)",
            receipt.pending_count
        ),
        Err(error) => println!("(guidance refused [{}]: {})", error.code, error.message),
    }
}

/// Lines of standard input, read on a plain thread (a blocking read never holds up the async
/// runtime) one at a time, each only when asked for: while a line is being handled (an editor
/// opened on a call's arguments) nothing else reads the terminal. The channel closes at end of
/// input.
struct StdinLines {
    want: std::sync::mpsc::Sender<()>,
    lines: mpsc::UnboundedReceiver<String>,
}

impl StdinLines {
    fn start() -> Self {
        let (want, wanted) = std::sync::mpsc::channel::<()>();
        let (sender, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let mut input = std::io::stdin().lines();
            while wanted.recv().is_ok() {
                let Some(Ok(line)) = input.next() else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let _ = want.send(());
        Self { want, lines }
    }

    async fn next(&mut self) -> Option<String> {
        self.lines.recv().await
    }

    /// Lets the reader take the next line.
    fn want_next(&self) {
        let _ = self.want.send(());
    }
}

/// `Ok` for a completed run, else an error that says where to read why and, for a run that
/// can be resumed, how to continue it or give it up.
pub(crate) fn completed_or_why(run: &tt_runtime::AgentRun, what: &str) -> anyhow::Result<()> {
    if run.status == tt_runtime::AgentRunStatus::Completed {
        return Ok(());
    }
    let id = &run.id;
    let next = if run.is_resumable() {
        format!(
            "; `tt-agent resume {id}` (with the model options it ran with) continues it where it \
             stopped, `tt-agent abandon {id}` gives it up"
        )
    } else {
        String::new()
    };
    anyhow::bail!(
        "{what} did not complete (status {}); `tt-agent events {id}` shows why{next}",
        run.status.as_str()
    )
}
