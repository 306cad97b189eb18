//! Contract cases for `TranscriptRepository`: entries read back in the order they were
//! appended, per workspace, from a fresh handle too; an unknown workspace reads empty; a
//! workspace id that is not a storage segment is refused with one code. Run with
//! `transcripts_contract_tests!`.

use tt_domain::error_codes;

use tt_domain::transcript::TranscriptEntry;
use tt_ports::TranscriptRepository;

use super::assert_code;

/// One transcript store under test.
pub type TranscriptsUnderTest = super::RepositoryUnderTest<dyn TranscriptRepository>;

contract_suite_macro! {
    /// Runs every `TranscriptRepository` contract case against `$factory`, an expression that
    /// yields a fresh [`TranscriptsUnderTest`] (it may `.await`).
    transcripts_contract_tests => transcripts_contract, transcripts {
        entries_read_back_in_order_per_workspace,
        an_unknown_workspace_reads_empty,
        workspace_ids_that_are_not_one_segment_are_refused,
    }
}

fn entry(message_id: &str, run_id: &str, mode: &str, content: &str) -> TranscriptEntry {
    TranscriptEntry {
        message_id: message_id.to_owned(),
        run_id: run_id.to_owned(),
        commit_id: format!("commit_{message_id}_{mode}"),
        mode: mode.to_owned(),
        path: "output/main.md".to_owned(),
        content: content.to_owned(),
    }
}

pub async fn entries_read_back_in_order_per_workspace(s: TranscriptsUnderTest) {
    let first = [
        entry("1", "run_a", "replace", "# Scene\n"),
        entry(
            "1",
            "run_a",
            "append",
            "More, with \"quotes\" and a\nnew line.\n",
        ),
        entry("2", "run_b", "replace", "Ünïcode ✓\n"),
    ];
    let other = entry("1", "run_c", "replace", "elsewhere\n");
    s.repo
        .append_transcript_entry("chat_one", &first[0])
        .await
        .unwrap();
    s.repo
        .append_transcript_entry("chat_two", &other)
        .await
        .unwrap();
    for e in &first[1..] {
        s.repo.append_transcript_entry("chat_one", e).await.unwrap();
    }
    assert_eq!(s.repo.read_transcript("chat_one").await.unwrap(), first);
    assert_eq!(
        s.repo.read_transcript("chat_two").await.unwrap(),
        std::slice::from_ref(&other)
    );
    // What was appended is stored, not only held by this handle.
    let again = (s.reopen)();
    assert_eq!(again.read_transcript("chat_one").await.unwrap(), first);
    assert_eq!(again.read_transcript("chat_two").await.unwrap(), [other]);
}

pub async fn an_unknown_workspace_reads_empty(s: TranscriptsUnderTest) {
    assert!(
        s.repo
            .read_transcript("chat_none")
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn workspace_ids_that_are_not_one_segment_are_refused(s: TranscriptsUnderTest) {
    let e = entry("1", "run_a", "replace", "x");
    for bad in ["", "../escape", "a/b", "has space", &"x".repeat(129)] {
        assert_code(
            s.repo.append_transcript_entry(bad, &e).await,
            error_codes::AGENT_STORAGE_SEGMENT_INVALID,
        );
        assert_code(
            s.repo.read_transcript(bad).await,
            error_codes::AGENT_STORAGE_SEGMENT_INVALID,
        );
    }
}
