//! Following a run in the terminal: its events live, then the agent tree, the published text
//! and the token usage. Shared by `demo` and `run`. While the run is live, each line typed on
//! standard input answers the tool call waiting for approval (`crate::approve`) if one waits,
//! else goes to the agent as user guidance; the terminal says which it took. A call that waits
//! before its prompt was shown still holds the line back: guidance is sent only when the
//! runtime says no call waits.

use tokio::sync::mpsc;
use tt_runtime::{AgentRun, AgentRuntime, StopSignals, SubmitGuidanceRequest};

use crate::approve::TerminalApprovals;
use crate::render::{EventPrinter, agent_tree};

/// Prints the run's events as they happen and a report at the end; returns the final run.
/// `how` says how the run came to be followed: `started`, or `resumed`.
pub(crate) async fn follow(
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
                    Some(line) => {
                        take_line(runtime, run, &mut approvals, &line).await;
                    }
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
        if let Some(Ok(payload)) = event.typed_payload() {
            approvals.follow(runtime, run, payload).await;
        }
    }
    let finished = runtime.wait_for_run(run.id.as_str()).await?;
    crate::otel_export::finish(runtime, run.id.as_str()).await;
    print_outcome(runtime, &finished).await?;
    println!("run {} ended: {}", finished.id, finished.status.as_str());
    Ok(finished)
}

/// What a finished run left: why it failed when the journal could not say, its agents, the
/// message it committed, and what its model calls cost.
async fn print_outcome(runtime: &AgentRuntime, finished: &AgentRun) -> anyhow::Result<()> {
    let run = finished;
    if let Some(failure) = runtime.unrecorded_failure(run.id.as_str()).await? {
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
    if let Some(line) = crate::render::inherited_usage(&usage) {
        println!("{line}");
    }
    Ok(())
}

/// What became of a typed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineTaken {
    /// It answered the call waiting for approval.
    Answer,
    /// It went to the agent as guidance (or was refused as such, which is shown).
    Guidance,
    /// A call waits for approval whose prompt had not been shown when the line was typed, or
    /// whether one waits could not be read: the line went nowhere, and the prompt is shown.
    HeldBack,
    /// An empty line.
    Nothing,
}

/// Takes one typed line: the answer to the call waiting for approval, if one waits (as this
/// terminal knows it, or as the runtime says, since a call may wait before its event arrives
/// here); else guidance. Says which it took.
pub(crate) async fn take_line(
    runtime: &AgentRuntime,
    run: &AgentRun,
    approvals: &mut TerminalApprovals,
    line: &str,
) -> LineTaken {
    if approvals.is_waiting() {
        approvals.answer(runtime, run, line).await;
        return LineTaken::Answer;
    }
    if line.trim().is_empty() {
        return LineTaken::Nothing;
    }
    match approvals.catch_up(runtime, run).await {
        Ok(false) => {
            submit_line(runtime, run, line).await;
            LineTaken::Guidance
        }
        Ok(true) => {
            println!(
                "(your line was not sent: a call or the run's spend limit is waiting for a person, \
                 asked above; answer it first, then type your guidance again)"
            );
            LineTaken::HeldBack
        }
        Err(problem) => {
            println!(
                "(your line was not sent: cannot tell whether a call waits for approval: {problem})"
            );
            LineTaken::HeldBack
        }
    }
}

/// Sends one typed line as guidance and says what became of it (a refusal is shown, not fatal:
/// the run goes on).
async fn submit_line(runtime: &AgentRuntime, run: &AgentRun, line: &str) {
    let request = SubmitGuidanceRequest {
        text: line.to_owned(),
        client_guidance_id: None,
    };
    match runtime.submit_guidance(run.id.as_str(), request).await {
        Ok(receipt) => println!(
            "(guidance queued for the agent's next step; {} waiting; no call waits for approval)",
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tt_runtime::{
        AgentRuntimeBuilder, CommitBridgeChoice, FnProvider, ModelReply, PromptMessage, PromptRole,
        ReadEventsRequest, StartRunRequest,
    };

    /// A runtime whose writer's every write waits for approval, and its run, once that call
    /// waits.
    async fn run_with_a_waiting_write(dir: &std::path::Path) -> (AgentRuntime, AgentRun) {
        let provider = FnProvider::new(|_| {
            Ok(ModelReply::tool_call(
                "workspace_write_file",
                serde_json::json!({"path": "output/main.md", "content": "Done."}),
            ))
        });
        let runtime = AgentRuntimeBuilder::new()
            .data_dir(dir)
            .provider(Arc::new(provider))
            .commit_bridge(CommitBridgeChoice::Transcript)
            .build()
            .unwrap();
        let mut writer: serde_json::Value =
            serde_json::from_str(include_str!("../scenarios/writers-room/writer.json")).unwrap();
        writer["tools"]["approval"] = serde_json::json!({"workspace.write_file": "always"});
        runtime
            .save_profile(serde_json::from_value(writer).unwrap())
            .await
            .unwrap();
        let run = runtime
            .start_run(StartRunRequest {
                stable_chat_id: "chat".to_owned(),
                conversation_kind: tt_runtime::ConversationKind::Character,
                chat_ref: serde_json::json!({"kind": "character", "characterId": "c", "fileName": "f"}),
                generation_type: serde_json::json!("normal"),
                profile_id: Some("writer".to_owned()),
                history: vec![PromptMessage {
                    role: PromptRole::Assistant,
                    content: "Earlier.".to_owned(),
                }],
                user_request: Some("Write a line.".to_owned()),
                persist_base_state_id: None,
                skill_scope_refs: Default::default(),
                connection_ref: None,
                generation: Default::default(),
            })
            .await
            .unwrap();
        let mut events = runtime.subscribe(run.id.as_str(), 0, None);
        while let Some(event) = events.next().await.unwrap() {
            if event.event_type == "tool_approval_requested" {
                return (runtime, run);
            }
        }
        panic!("the run ended without asking");
    }

    async fn event_types(runtime: &AgentRuntime, run: &AgentRun) -> Vec<String> {
        runtime
            .read_events(ReadEventsRequest {
                run_id: run.id.to_string(),
                after_seq: None,
                before_seq: None,
                limit: Some(1000),
                invocation_id: None,
                include_timeline_projection: false,
            })
            .await
            .unwrap()
            .events
            .into_iter()
            .map(|event| event.event_type.to_string())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_line_typed_before_the_prompt_showed_is_never_sent_as_guidance() {
        let dir = tempfile::tempdir().unwrap();
        let (runtime, run) = run_with_a_waiting_write(dir.path()).await;
        // The terminal has not seen the call's event yet: its queue is empty.
        let mut approvals = TerminalApprovals::default();
        let taken = take_line(&runtime, &run, &mut approvals, "Make it darker.").await;
        assert_eq!(taken, LineTaken::HeldBack);
        assert!(approvals.is_waiting(), "the waiting call is now asked");
        let types = event_types(&runtime, &run).await;
        assert!(
            !types.iter().any(|t| t.starts_with("user_guidance")),
            "{types:?}"
        );
        // The next line answers the call.
        let taken = take_line(&runtime, &run, &mut approvals, "n Not yet.").await;
        assert_eq!(taken, LineTaken::Answer);
        let types = event_types(&runtime, &run).await;
        assert!(
            types.iter().any(|t| t == "tool_approval_resolved"),
            "{types:?}"
        );
        assert!(!types.iter().any(|t| t.starts_with("user_guidance")));
        runtime.cancel_run(run.id.as_str()).await.unwrap();
        runtime.wait_for_run(run.id.as_str()).await.unwrap();
    }
}
