//! What an agent reads of the failure of an agent it delegated to: a short sentence from the
//! failure's class (`tt_domain::error_codes::ErrorClass`), with the failure's own message only
//! when the runtime wrote it for the delegating agent (a budget that ran out) or it is a
//! reviewer's reason (a result the return gate turned down). The raw
//! `<code>: <message>` of a task record stays for hosts: a provider's or a store's message
//! may name physical paths, servers or ids, which an agent must never read.

use tt_domain::error::split_error_code;
use tt_domain::error_codes::{self, ErrorClass, class_of};

/// The longest message quoted after the sentence, in characters.
const MAX_MESSAGE_CHARS: usize = 240;

/// What a reader is told of a failed task whose record says `error`.
pub(crate) fn failure_for_reader(error: &str) -> String {
    let Some((class, message)) = split_error_code(error.trim())
        .and_then(|(code, message)| class_of(code).map(|class| (class, message)))
    else {
        // No known code: a store's or the system's own text, never shown.
        return "It failed because of a problem outside its work; its written work is kept."
            .to_owned();
    };
    // A reviewer's reason (the return gate) is model-written text about the result: quoted.
    let code = split_error_code(error.trim()).and_then(|(code, _)| error_codes::Code::parse(code));
    let sentence = match code {
        Some(error_codes::AGENT_RETURN_REJECTED) => "Its result was turned down at review.",
        Some(error_codes::AGENT_RETURN_REVISIONS_SPENT) => {
            "Its result was still not accepted at review after its revisions."
        }
        _ => sentence(class),
    };
    let quotes = quotes_message(class)
        || matches!(
            code,
            Some(error_codes::AGENT_RETURN_REJECTED | error_codes::AGENT_RETURN_REVISIONS_SPENT)
        );
    let message = message.trim();
    if !quotes || message.is_empty() {
        return sentence.to_owned();
    }
    let mut quoted: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    if quoted.len() < message.len() {
        quoted.push('…');
    }
    let quoted = quoted.trim_end_matches('.');
    format!("{}: {quoted}.", sentence.trim_end_matches('.'))
}

/// The sentence for a failure of `class`, from the reader's side.
fn sentence(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::ModelSlip => "It made too many malformed tool calls in a row.",
        ErrorClass::ToolRefusal => "A tool refused one of its calls.",
        ErrorClass::UserRetryable => {
            "It stopped before finishing: it did not follow the tool protocol or ran out of time. Trying again may work."
        }
        ErrorClass::RoleViolation => "It ended in a way its task does not allow.",
        ErrorClass::ProviderTransient => {
            "Its model service kept failing for a while. Trying again later may work."
        }
        ErrorClass::Provider => "Its model service refused to answer it.",
        ErrorClass::Budget => "It ran out of its budget.",
        ErrorClass::HostContract | ErrorClass::HostBridge => {
            "The application it works in refused or failed a step it needed."
        }
        ErrorClass::Configuration => "Its setup is invalid, so it could not work.",
        ErrorClass::Storage => {
            "Its work could not be saved or read back (a storage failure); what was saved is kept."
        }
        ErrorClass::Cancelled => "It was stopped.",
        ErrorClass::Internal => "An internal error stopped it.",
    }
}

/// Whether the messages of `class` are written by the runtime for the delegating agent (no
/// paths, ids, runtime words or upstream text), so the reader may see them.
fn quotes_message(class: ErrorClass) -> bool {
    match class {
        ErrorClass::Budget => true,
        ErrorClass::ModelSlip
        | ErrorClass::ToolRefusal
        | ErrorClass::UserRetryable
        | ErrorClass::RoleViolation
        | ErrorClass::ProviderTransient
        | ErrorClass::Provider
        | ErrorClass::HostContract
        | ErrorClass::HostBridge
        | ErrorClass::Configuration
        | ErrorClass::Storage
        | ErrorClass::Cancelled
        | ErrorClass::Internal => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_their_class_without_paths_or_upstream_text() {
        let cases = [
            "agent.task_budget_exhausted: it used 200 model tokens, over its budget of 150",
            "agent.child_invocation_missing_return: the delegated agent ended without task.return",
            "model.request_rejected: HTTP 401: key sk-123 refused at http://10.0.0.7/v1",
            "model.transient: HTTP transport failed: connection refused",
            "agent.storage_read_only: cannot write /home/alice/.tt-agent/runs/run_1/run.json: the store is open for reading only",
            "i/o error on /home/alice/.tt-agent/runs/run_1/journal/0001.jsonl: No space left on device (os error 28)",
            "agent.cancelled: the model call was cancelled",
            "agent.return_rejected: the findings invent a character the draft never names",
        ];
        let shown: Vec<String> = cases
            .iter()
            .map(|error| format!("{error}\n=> {}", failure_for_reader(error)))
            .collect();
        let shown = shown.join("\n\n");
        for case in cases {
            tt_testkit::leaks::assert_no_leaks(
                "what an agent reads of a failure",
                &failure_for_reader(case),
            );
        }
        insta::assert_snapshot!("failures_as_the_reader_reads_them", shown);
    }

    #[test]
    fn a_watchdog_stop_and_a_spent_fallback_chain_read_as_their_class() {
        let cases = [
            "agent.inactivity_timeout: the agent showed no activity for 30 s, and for 20 s more after a warning (limits.watchdog)",
            "model.fallbacks_exhausted: the agent's model and all 2 fallback models of its profile failed; the last: model.transient: HTTP 502 from http://10.0.0.7/v1",
        ];
        let shown: Vec<String> = cases
            .iter()
            .map(|error| {
                let read = failure_for_reader(error);
                tt_testkit::leaks::assert_no_leaks("what an agent reads of a failure", &read);
                format!("{error}\n=> {read}")
            })
            .collect();
        insta::assert_snapshot!(
            "watchdog_and_fallback_failures_as_the_reader_reads_them",
            shown.join("\n\n")
        );
    }

    #[test]
    fn a_long_quoted_message_is_cut() {
        let long = format!(
            "agent.task_budget_exhausted: {}",
            "it used many tokens ".repeat(40)
        );
        let shown = failure_for_reader(&long);
        assert!(shown.ends_with("….") || shown.ends_with("…"), "{shown}");
        assert!(shown.chars().count() < 400, "{shown}");
    }
}
