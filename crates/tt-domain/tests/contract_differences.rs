//! `docs/contract-differences.md` held to the code: each difference the contract audit
//! (`shared/spec/contract-audit.md`, 6 December 2026) found undocumented is named on the page,
//! every event type the page names in backticks exists (except the contract's names it says
//! are not used), and the contract codes it lists as never produced are not in the runtime's
//! code list.

// Test helpers outside #[test] functions may panic: a failure is a test failure.
#![allow(clippy::panic)]

use tt_domain::error_codes;
use tt_domain::event::RunEventType;

const PAGE: &str = include_str!("../../../docs/contract-differences.md");

/// The contract's names the page says this runtime does not use.
const CONTRACT_ONLY_EVENTS: [&str; 4] = [
    "tool_call_awaiting_approval",
    "tool_call_approved",
    "tool_call_denied",
    "agent_invocation_status_changed",
];

/// The contract codes the page lists as never produced.
const NEVER_PRODUCED: [&str; 30] = [
    "agent.tool_denied",
    "agent.runtime_dropped",
    "agent.active_run_missing",
    "agent.list_result_serialize_failed",
    "agent.workspace_read_denied",
    "agent.workspace_write_denied",
    "agent.invalid_workspace_root",
    "model.invalid_tool_response",
    "model.native_metadata_lost",
    "agent.provider_state_invalid",
    "agent.model_request_invalid_source",
    "agent.invalid_model_message",
    "agent.tool_call_serialize_failed",
    "agent.chat_commit_resolve_failed",
    "agent.persistent_state_metadata_update_resolve_failed",
    "agent.persistent_state_metadata_update_resolve_invalid",
    "agent.prompt_assembly_metadata_missing",
    "agent.prompt_assembly_metadata_serialize_failed",
    "agent.prompt_assembly_request_missing",
    "agent.prompt_assembly_request_read_invalid",
    "agent.prompt_assembly_resolve_failed",
    "agent.prompt_assembly_service_unavailable",
    "agent.prompt_assembly_snapshot_serialize_failed",
    "agent.invalid_prompt_snapshot",
    "agent.phase2b_stream_unsupported",
    "agent.external_*_unsupported_phase2b",
    "agent.prompt_marker_unmaterialized",
    "agent.task_return_tool_missing",
    "agent.max_concurrent_invocations_exhausted",
    "agent.event_scope_invalid",
];

/// The rows of the page's table: (area, the contract, here, why).
fn rows() -> Vec<Vec<&'static str>> {
    PAGE.lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| ---"))
        .skip(1)
        .map(|line| {
            line.trim_matches('|')
                .split(" | ")
                .map(str::trim)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The row whose area contains `area`.
fn row(area: &str) -> Vec<&'static str> {
    rows()
        .into_iter()
        .find(|row| row[0].contains(area))
        .unwrap_or_else(|| panic!("docs/contract-differences.md has no row for {area}"))
}

/// Backticked words of `text`.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_difference_the_audit_found_is_a_row() {
    // (area of the row, what it must name): the audit's gap 4 and its P items.
    let found = [
        ("terminal run statuses", "run_reopened"),
        ("terminal run statuses", "resumed_after_failure"),
        ("`interrupted`", "reopens"),
        (
            "the root after a failure that follows a handoff",
            "transferred",
        ),
        ("assembly request metadata", "prompt-assembly-broker"),
        ("event scopes", "agent.event_scope_invalid"),
        ("tool-call approval", "tool_call_awaiting_approval"),
        (
            "invocation status events",
            "agent_invocation_status_changed",
        ),
        ("host API in Rust", "bare"),
        (
            "error codes of the contract never produced",
            "agent.active_run_missing",
        ),
    ];
    for (area, named) in found {
        let row = row(area);
        assert!(
            row.iter().any(|cell| cell.contains(named)),
            "the row `{area}` does not name `{named}`: {row:?}"
        );
    }
    for row in rows() {
        assert_eq!(row.len(), 4, "a row has four cells: {row:?}");
        assert!(
            row.iter().all(|cell| !cell.is_empty()),
            "a row leaves a cell empty: {row:?}"
        );
    }
}

#[test]
fn the_event_types_the_page_names_exist() {
    assert!(RunEventType::parse("run_reopened").is_some());
    let mut checked = 0;
    for word in backticked(PAGE) {
        let event_like = word.contains('_')
            && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            && ["run_", "agent_", "tool_", "model_", "context_", "task_"]
                .iter()
                .any(|prefix| word.starts_with(prefix));
        if !event_like {
            continue;
        }
        checked += 1;
        if CONTRACT_ONLY_EVENTS.contains(&word) {
            assert!(
                RunEventType::parse(word).is_none(),
                "`{word}` is journaled now: update its row"
            );
        } else {
            assert!(
                RunEventType::parse(word).is_some(),
                "docs/contract-differences.md names `{word}`, which is no event type"
            );
        }
    }
    assert!(checked > 20, "{checked}");
}

#[test]
fn the_contract_codes_listed_as_never_produced_are_not_produced() {
    let row = row("error codes of the contract never produced");
    let listed: Vec<&str> = backticked(row[2]).into_iter().collect();
    for code in NEVER_PRODUCED {
        assert!(listed.contains(&code), "the row does not list `{code}`");
        assert!(
            error_codes::lookup(code).is_none(),
            "`{code}` is in the runtime's code list now: take it off the row"
        );
    }
    assert_eq!(listed.len(), NEVER_PRODUCED.len(), "{listed:?}");
}
