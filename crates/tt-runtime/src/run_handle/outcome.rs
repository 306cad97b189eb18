//! A run's outcome in one answer ([`RunResult`]): its final record, why it failed (the
//! journal's `run_failed` / `run_partial_success`, or the end the journal refused), and what it
//! published: each commit the host accepted, with its text, and the message they make.

use serde::{Deserialize, Serialize};
use tt_domain::event::{AgentRunEvent, RunEventType};
use tt_domain::event_payload::{ChatCommitCompleted, RunEventPayload};
use tt_domain::ids::RunId;
use tt_domain::run::AgentRun;
use tt_ports::EventPage;

use crate::dto::HostResult;
use crate::host::AgentRuntime;

/// How a run ended, what it published, and why it failed (`AgentRuntime::run_result`,
/// `RunHandle::result`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The run's record once it stopped executing (`wait_for_run`).
    pub run: AgentRun,
    /// Why it failed or only partly succeeded; absent for a run that completed, was cancelled
    /// or interrupted (its `run.status` says which), or failed and was resumed since.
    pub failure: Option<RunFailure>,
    /// The commits the host published for this run, in order. A branch lists its own only,
    /// not those of its source before the fork point.
    #[serde(default)]
    pub commits: Vec<PublishedCommit>,
    /// The message the run published: its commits applied in order (`replace` sets the text,
    /// `append` adds to it), as a chat shows it. Absent when it published nothing, or when the
    /// text of one of its commits cannot be read any more.
    pub published_text: Option<String>,
}

/// Why a run failed: the code and messages of its `run_failed` or `run_partial_success`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFailure {
    /// `run_failed` or `run_partial_success`.
    pub event_type: String,
    /// The error code (`agent.…`).
    pub code: String,
    /// The message for a person.
    pub message: String,
    #[serde(default)]
    pub technical_message: String,
    /// Set when the journal kept this end out (a full or read-only disk): why.
    pub unrecorded_because: Option<String>,
}

/// One commit the host published.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedCommit {
    pub commit_id: String,
    /// The id the host gave the message.
    pub message_id: String,
    /// The workspace file it published (`output/main.md`).
    pub path: String,
    /// `replace` or `append`.
    pub mode: String,
    /// The seq of its `chat_commit_completed`.
    pub seq: u64,
    /// The text published, from the checkpoint the commit made (or the workspace file while it
    /// is unchanged, or the transcript); absent when none holds it any more.
    pub text: Option<String>,
}

/// What one pass over the journal finds.
#[derive(Default)]
struct Findings {
    failure: Option<RunFailure>,
    commits: Vec<(ChatCommitCompleted, u64)>,
}

impl Findings {
    fn take(&mut self, event: &AgentRunEvent, fork_seq: u64) {
        match event.event_type {
            // A resumed run's earlier end no longer says how it ended.
            RunEventType::RunReopened | RunEventType::RunResumed => self.failure = None,
            RunEventType::RunFailed | RunEventType::RunPartialSuccess => {
                self.failure = failure_of(&event.event_type, &event.payload, None);
            }
            RunEventType::ChatCommitCompleted if event.seq > fork_seq => {
                if let Some(Ok(RunEventPayload::ChatCommitCompleted(done))) = event.typed_payload()
                {
                    self.commits.push((done, event.seq));
                }
            }
            _ => {}
        }
    }
}

fn failure_of(
    event_type: &RunEventType,
    payload: &serde_json::Value,
    unrecorded_because: Option<String>,
) -> Option<RunFailure> {
    let text = |key: &str| payload.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    Some(RunFailure {
        event_type: event_type.as_str().to_owned(),
        code: text("code")?,
        message: text("message").unwrap_or_default(),
        technical_message: text("technicalMessage").unwrap_or_default(),
        unrecorded_because,
    })
}

impl AgentRuntime {
    /// Waits for run `run_id` to stop executing, then reads its outcome: the final record, why
    /// it failed (`failure`), and what it published (`commits`, `publishedText`). A run nobody
    /// executes (interrupted, stored) answers at once. `agent.not_found` for an unknown run.
    pub async fn run_result(&self, run_id: &str) -> HostResult<RunResult> {
        let run = self.wait_for_run(run_id).await?;
        let id = RunId::from_raw(run_id);
        let fork_seq = run.forked_from.as_ref().map_or(0, |from| from.seq);
        let mut findings = Findings::default();
        let mut after = 0;
        loop {
            let page = EventPage {
                after_seq: Some(after),
                limit: Some(tt_ports::journal::MAX_EVENT_PAGE_LIMIT),
                ..EventPage::default()
            };
            let events = self.service.read_events(&id, &page).await?;
            let Some(last) = events.last() else { break };
            after = last.seq;
            for event in &events {
                findings.take(event, fork_seq);
            }
        }
        // The end the journal refused, from the record or this process's memory.
        let unrecorded = run
            .unrecorded_end
            .clone()
            .or_else(|| self.service.remembered_end(&id));
        if let Some(end) = unrecorded {
            let event_type = RunEventType::from_name(&end.event_type);
            if let Some(failure) =
                failure_of(&event_type, &end.payload, Some(end.unrecorded_because))
            {
                findings.failure = Some(failure);
            }
        }
        let commits = self.commit_texts(&run, findings.commits).await?;
        let published_text = published_text(&commits);
        Ok(RunResult {
            run,
            failure: findings.failure,
            commits,
            published_text,
        })
    }

    /// Each published commit with its text: the version its checkpoint stored, else the
    /// workspace file when it still holds that version, else the transcript's copy (transcript
    /// commit bridge).
    async fn commit_texts(
        &self,
        run: &AgentRun,
        completed: Vec<(ChatCommitCompleted, u64)>,
    ) -> HostResult<Vec<PublishedCommit>> {
        let workspace = &self.service.services().workspace;
        let mut transcript = None;
        let mut commits = Vec::with_capacity(completed.len());
        for (done, seq) in completed {
            let mut text = workspace
                .checkpoint_blob(&run.id, &done.sha256)
                .await
                .ok()
                .flatten();
            if text.is_none()
                && let Ok(file) = self.service.read_workspace_file(&run.id, &done.path).await
                && file.sha256 == done.sha256
            {
                text = Some(file.text);
            }
            if text.is_none() {
                if transcript.is_none() {
                    transcript = Some(
                        self.transcript(run.workspace_id.as_str())
                            .await
                            .unwrap_or_default(),
                    );
                }
                text = transcript.iter().flatten().find_map(|entry| {
                    (entry.run_id == run.id.as_str() && entry.commit_id == done.commit_id)
                        .then(|| entry.content.clone())
                });
            }
            commits.push(PublishedCommit {
                commit_id: done.commit_id,
                message_id: done.message_id,
                path: done.path,
                mode: done.mode,
                seq,
                text,
            });
        }
        Ok(commits)
    }
}

/// The message the commits make, applied in order; `None` for none, or a text that is gone.
fn published_text(commits: &[PublishedCommit]) -> Option<String> {
    let mut message: Option<String> = None;
    for commit in commits {
        let text = commit.text.as_deref()?;
        match (&mut message, commit.mode.as_str()) {
            (Some(message), "append") => message.push_str(text),
            (message, _) => *message = Some(text.to_owned()),
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::{PublishedCommit, published_text};

    fn commit(mode: &str, text: Option<&str>) -> PublishedCommit {
        PublishedCommit {
            commit_id: "commit_1".to_owned(),
            message_id: "1".to_owned(),
            path: "output/main.md".to_owned(),
            mode: mode.to_owned(),
            seq: 1,
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn commits_make_one_message_in_order() {
        assert_eq!(published_text(&[]), None);
        let made = published_text(&[
            commit("replace", Some("a")),
            commit("append", Some("b")),
            commit("append", Some("c")),
        ]);
        assert_eq!(made.as_deref(), Some("abc"));
        let replaced = published_text(&[commit("append", Some("a")), commit("replace", Some("z"))]);
        assert_eq!(replaced.as_deref(), Some("z"));
        assert_eq!(
            published_text(&[commit("replace", Some("a")), commit("append", None)]),
            None
        );
    }
}
