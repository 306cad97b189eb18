//! Answering tool calls that wait for approval from the terminal (docs/host-api.md, "Approving
//! tool calls"): while one waits, a typed line answers it instead of going to the agent as
//! guidance: `y` approves, `n [message]` denies (the agent reads the message), `e` opens
//! `$EDITOR` (else `$VISUAL`, else `vi`) on its arguments and approves what is saved. A run
//! parked at its spend limit (docs/host-api.md, "Run spend approval") is answered the same way,
//! once no call waits: a number of US dollars raises the limit, `n` refuses and the run stops.

use serde_json::Value;
use std::collections::VecDeque;
use tt_runtime::{
    AgentRun, AgentRuntime, AnswerSpendLimitRequest, ApprovalDecision, HostResult,
    PendingSpendLimit, PendingToolApproval, ResolveToolApprovalRequest, RunEventPayload,
    SpendLimitDecision,
};

/// Who decided, as the journal records it.
const DECIDED_BY: &str = "terminal";

/// Most characters of the arguments shown in a prompt.
const SHOWN_ARGUMENT_CHARS: usize = 400;

/// The calls of the followed run waiting for an answer from this terminal, oldest first, and
/// its spend limit when the run is parked at it.
#[derive(Default)]
pub(crate) struct TerminalApprovals {
    waiting: VecDeque<PendingToolApproval>,
    spend: Option<PendingSpendLimit>,
}

impl TerminalApprovals {
    pub(crate) fn is_waiting(&self) -> bool {
        !self.waiting.is_empty() || self.spend.is_some()
    }

    /// Takes in what an event of the followed run says of the calls and the spend limit that
    /// wait for a person.
    pub(crate) async fn follow(
        &mut self,
        runtime: &AgentRuntime,
        run: &AgentRun,
        event: RunEventPayload,
    ) {
        match event {
            RunEventPayload::ToolApprovalRequested(asked) => {
                self.asked(runtime, run, &asked.approval_id).await;
            }
            RunEventPayload::ToolApprovalResolved(answered) => self.settled(&answered.approval_id),
            RunEventPayload::ToolApprovalCancelled(withdrawn) => {
                self.settled(&withdrawn.approval_id);
            }
            RunEventPayload::SpendLimitReached(_) => self.spend_reached(runtime, run).await,
            RunEventPayload::SpendLimitAnswered(_) => self.spend_answered(),
            _ => {}
        }
    }

    /// The run parked at its spend limit: ask, once no call waits.
    pub(crate) async fn spend_reached(&mut self, runtime: &AgentRuntime, run: &AgentRun) {
        match runtime.pending_spend_limit(run.id.as_str()).await {
            Ok(Some(pending)) => {
                let first = self.spend.is_none();
                self.spend = Some(pending);
                if first && self.waiting.is_empty() {
                    self.prompt();
                }
            }
            Ok(None) => {}
            Err(error) => println!(
                "(could not read the spend limit [{}]: {})",
                error.code, error.message
            ),
        }
    }

    /// The spend limit was answered (here or elsewhere).
    pub(crate) fn spend_answered(&mut self) {
        self.spend = None;
    }

    /// A call asked for approval: queue it (with its arguments), and prompt if it is first.
    pub(crate) async fn asked(
        &mut self,
        runtime: &AgentRuntime,
        run: &AgentRun,
        approval_id: &str,
    ) {
        let pending = match runtime.pending_approvals(run.id.as_str()).await {
            Ok(pending) => pending,
            Err(error) => {
                println!(
                    "(could not read the waiting call [{}]: {})",
                    error.code, error.message
                );
                return;
            }
        };
        let Some(call) = pending.into_iter().find(|p| p.approval_id == approval_id) else {
            return;
        };
        if self.waiting.iter().any(|p| p.approval_id == approval_id) {
            return;
        }
        self.waiting.push_back(call);
        if self.waiting.len() == 1 {
            self.prompt();
        }
    }

    /// Asks the runtime which calls of the run wait now, and queues (and prompts for) those this
    /// terminal has not seen yet: a call may wait before its event reaches the terminal.
    /// `Ok(true)` when any call waits.
    pub(crate) async fn catch_up(
        &mut self,
        runtime: &AgentRuntime,
        run: &AgentRun,
    ) -> Result<bool, String> {
        let pending = runtime
            .pending_approvals(run.id.as_str())
            .await
            .map_err(|error| format!("[{}] {}", error.code, error.message))?;
        for call in pending {
            if self
                .waiting
                .iter()
                .any(|p| p.approval_id == call.approval_id)
            {
                continue;
            }
            self.waiting.push_back(call);
            if self.waiting.len() == 1 {
                self.prompt();
            }
        }
        if self.spend.is_none() {
            let parked = runtime
                .pending_spend_limit(run.id.as_str())
                .await
                .map_err(|error| format!("[{}] {}", error.code, error.message))?;
            if parked.is_some() {
                self.spend = parked;
                if self.waiting.is_empty() {
                    self.prompt();
                }
            }
        }
        Ok(self.is_waiting())
    }

    /// A call was answered or withdrawn (here or elsewhere): forget it, prompt for the next.
    pub(crate) fn settled(&mut self, approval_id: &str) {
        let was_first = self
            .waiting
            .front()
            .is_some_and(|p| p.approval_id == approval_id);
        self.waiting.retain(|p| p.approval_id != approval_id);
        if was_first && self.is_waiting() {
            self.prompt();
        }
    }

    fn prompt(&self) {
        let Some(call) = self.waiting.front() else {
            if let Some(spend) = &self.spend {
                println!(
                    "⏸ the run has spent ${:.4}, reaching its spend limit of ${:.4}: go on up to how many US dollars? [a number = raise the limit to it, n = stop the run]",
                    spend.spent_usd, spend.limit_usd
                );
            }
            return;
        };
        let mut arguments = call.arguments.to_string();
        if arguments.chars().count() > SHOWN_ARGUMENT_CHARS {
            arguments = arguments
                .chars()
                .take(SHOWN_ARGUMENT_CHARS)
                .collect::<String>()
                + "…";
        }
        println!(
            "⏸ approve {} {arguments}? ({}) [y = approve, n [message] = deny, e = edit the arguments]",
            call.tool, call.reason
        );
    }

    /// Answers the first waiting call with a typed line, else the spend limit.
    pub(crate) async fn answer(&mut self, runtime: &AgentRuntime, run: &AgentRun, line: &str) {
        let Some(call) = self.waiting.front().cloned() else {
            self.answer_spend(runtime, run, line).await;
            return;
        };
        let decision = match parse_answer(line) {
            Some(Answer::Approve) => ApprovalDecision::Approve,
            Some(Answer::Deny(message)) => ApprovalDecision::Deny { message },
            Some(Answer::Edit) => match edit(&call.arguments).await {
                Ok(arguments) => ApprovalDecision::ApproveWithArguments { arguments },
                Err(problem) => {
                    println!("(the edit was not used: {problem})");
                    self.prompt();
                    return;
                }
            },
            None => {
                println!("(answer y, n [message] or e)");
                return;
            }
        };
        let request = ResolveToolApprovalRequest::new(decision).decided_by(DECIDED_BY);
        let answer = runtime
            .resolve_tool_approval(run.id.as_str(), &call.approval_id, request)
            .await;
        // The `tool_approval_resolved` event takes it off the queue.
        self.say_how_taken(answer, |_| format!("the waiting {} call", call.tool));
    }

    /// Says how the runtime took the person's answer: what it answered (`answered`) once
    /// accepted, else the refusal's code and message, and asks again.
    fn say_how_taken<T>(&self, answer: HostResult<T>, answered: impl FnOnce(T) -> String) {
        match answer {
            Ok(receipt) => println!(
                "(taken as your answer to {}, not as guidance)",
                answered(receipt)
            ),
            Err(error) => {
                println!("(not accepted [{}]: {})", error.code, error.message);
                self.prompt();
            }
        }
    }
}

impl TerminalApprovals {
    /// Raises the spend limit to the typed number of US dollars, or refuses on `n`.
    async fn answer_spend(&mut self, runtime: &AgentRuntime, run: &AgentRun, line: &str) {
        if self.spend.is_none() {
            return;
        }
        let Some(decision) = parse_spend_answer(line) else {
            println!("(answer with a number of US dollars, or n)");
            return;
        };
        let request = AnswerSpendLimitRequest {
            decision,
            decided_by: Some(DECIDED_BY.to_owned()),
        };
        let answer = runtime.answer_spend_limit(run.id.as_str(), request).await;
        // The `spend_limit_answered` event clears it.
        self.say_how_taken(answer, |receipt| {
            format!("the spend limit ({})", receipt.decision)
        });
    }
}

/// `n` refuses; a number of US dollars (`2.5`, `$2.5`) raises the limit to it.
fn parse_spend_answer(line: &str) -> Option<SpendLimitDecision> {
    let line = line.trim();
    match line.to_lowercase().as_str() {
        "n" | "no" => Some(SpendLimitDecision::Refuse),
        _ => {
            let limit_usd: f64 = line.trim_start_matches('$').parse().ok()?;
            limit_usd
                .is_finite()
                .then_some(SpendLimitDecision::Raise { limit_usd })
        }
    }
}

/// A typed answer.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Approve,
    Deny(Option<String>),
    Edit,
}

fn parse_answer(line: &str) -> Option<Answer> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    match word.to_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Some(Answer::Approve),
        "n" | "no" => Some(Answer::Deny((!rest.is_empty()).then(|| rest.to_owned()))),
        "e" | "edit" if rest.is_empty() => Some(Answer::Edit),
        _ => None,
    }
}

/// Opens the editor on the arguments, pretty-printed, and reads back what was saved.
async fn edit(arguments: &Value) -> Result<Value, String> {
    let editor = std::env::var("EDITOR")
        .or_else(|_| std::env::var("VISUAL"))
        .unwrap_or_else(|_| "vi".to_owned());
    let text = serde_json::to_string_pretty(arguments).map_err(|err| err.to_string())?;
    let edited = tokio::task::spawn_blocking(move || -> Result<String, String> {
        let file = tempfile::Builder::new()
            .prefix("tt-agent-arguments-")
            .suffix(".json")
            .tempfile()
            .map_err(|err| format!("no temporary file: {err}"))?;
        std::fs::write(file.path(), text).map_err(|err| err.to_string())?;
        // `$EDITOR` may carry options ("code --wait"): run it through the shell.
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(file.path())
            .status()
            .map_err(|err| format!("{editor} did not start: {err}"))?;
        if !status.success() {
            return Err(format!("{editor} exited with {status}"));
        }
        std::fs::read_to_string(file.path()).map_err(|err| err.to_string())
    })
    .await
    .map_err(|err| err.to_string())??;
    serde_json::from_str(&edited).map_err(|err| format!("not JSON: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_answers_are_read_loosely_and_anything_else_is_not_an_answer() {
        assert_eq!(parse_answer(" y "), Some(Answer::Approve));
        assert_eq!(parse_answer("YES"), Some(Answer::Approve));
        assert_eq!(parse_answer("n"), Some(Answer::Deny(None)));
        assert_eq!(
            parse_answer("n  Keep it short."),
            Some(Answer::Deny(Some("Keep it short.".into())))
        );
        assert_eq!(parse_answer("e"), Some(Answer::Edit));
        assert_eq!(parse_answer("y please"), None);
        assert_eq!(parse_answer("maybe"), None);
        assert_eq!(parse_answer(""), None);
    }

    #[test]
    fn a_spend_answer_is_a_number_of_dollars_or_n() {
        assert_eq!(
            parse_spend_answer(" 2.5 "),
            Some(SpendLimitDecision::Raise { limit_usd: 2.5 })
        );
        assert_eq!(
            parse_spend_answer("$10"),
            Some(SpendLimitDecision::Raise { limit_usd: 10.0 })
        );
        assert_eq!(parse_spend_answer("No"), Some(SpendLimitDecision::Refuse));
        assert_eq!(parse_spend_answer("more"), None);
        assert_eq!(parse_spend_answer("inf"), None);
        assert_eq!(parse_spend_answer(""), None);
    }
}
