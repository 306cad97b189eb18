//! The run, invocation, journal and profile ports of `InMemoryStore`.

use async_trait::async_trait;
use serde_json::Value;
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::{InvocationId, ProfileId, RunId, TaskId};
use tt_domain::invocation::AgentInvocation;
use tt_domain::profile::AgentProfileDefinition;
use tt_domain::run::AgentRun;
use tt_domain::task::{AgentTaskRecord, TaskTransition};
use tt_domain::time::Timestamp;
use tt_domain::workspace::RunManifest;
use tt_ports::{
    AgentInvocationRepository, AgentRunRepository, EventPage, ProfileRepository, RunDocument,
    RunJournal, RunListPage, StorageError, StorageResult, TaskTransitionOutcome,
};

use super::{InMemoryStore, RunState, StoreOp};

#[async_trait]
impl AgentRunRepository for InMemoryStore {
    async fn create_run(&self, run: &AgentRun, manifest: &RunManifest) -> StorageResult<()> {
        let mut state = self.lock();
        state.check_fault(StoreOp::CreateRun)?;
        if state.runs.contains_key(&run.id) {
            return Err(StorageError::AlreadyExists {
                what: format!("run {}", run.id),
            });
        }
        state.runs.insert(
            run.id.clone(),
            RunState {
                run: run.clone(),
                manifest: manifest.clone(),
                invocations: Default::default(),
                tasks: Default::default(),
                documents: Default::default(),
                events: Vec::new(),
                files: Default::default(),
                checkpoints: Vec::new(),
            },
        );
        Ok(())
    }

    async fn save_run(&self, run: &AgentRun) -> StorageResult<()> {
        let mut state = self.lock();
        state.check_fault(StoreOp::SaveRun)?;
        state.run_mut(&run.id)?.run = run.clone();
        Ok(())
    }

    async fn load_run(&self, run_id: &RunId) -> StorageResult<AgentRun> {
        let mut state = self.lock();
        state.check_fault(StoreOp::LoadRun)?;
        Ok(state.run(run_id)?.run.clone())
    }

    async fn load_manifest(&self, run_id: &RunId) -> StorageResult<RunManifest> {
        Ok(self.lock().run(run_id)?.manifest.clone())
    }

    async fn list_runs(&self, page: RunListPage) -> StorageResult<Vec<AgentRun>> {
        let state = self.lock();
        let mut runs: Vec<AgentRun> = state.runs.values().map(|s| s.run.clone()).collect();
        runs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        Ok(runs
            .into_iter()
            .skip(page.offset)
            .take(page.limit)
            .collect())
    }

    async fn unreadable_runs(&self) -> StorageResult<Vec<tt_domain::damage::UnreadableRun>> {
        // Runs are held typed: none can be unreadable.
        Ok(Vec::new())
    }

    async fn write_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
        value: &Value,
    ) -> StorageResult<()> {
        let mut state = self.lock();
        state.check_fault(StoreOp::WriteDocument)?;
        state
            .run_mut(run_id)?
            .documents
            .insert(document.clone(), value.clone());
        Ok(())
    }

    async fn read_document(
        &self,
        run_id: &RunId,
        document: &RunDocument,
    ) -> StorageResult<Option<Value>> {
        let mut state = self.lock();
        state.check_fault(StoreOp::ReadDocument)?;
        Ok(state.run(run_id)?.documents.get(document).cloned())
    }
}

#[async_trait]
impl AgentInvocationRepository for InMemoryStore {
    async fn save_invocation(&self, invocation: &AgentInvocation) -> StorageResult<()> {
        let mut state = self.lock();
        state.check_fault(StoreOp::SaveInvocation)?;
        state
            .run_mut(&invocation.run_id)?
            .invocations
            .insert(invocation.id.clone(), invocation.clone());
        Ok(())
    }

    async fn load_invocation(
        &self,
        run_id: &RunId,
        invocation_id: &InvocationId,
    ) -> StorageResult<AgentInvocation> {
        self.lock()
            .run(run_id)?
            .invocations
            .get(invocation_id)
            .cloned()
            .ok_or_else(|| StorageError::not_found(format!("invocation {invocation_id}")))
    }

    async fn list_invocations(&self, run_id: &RunId) -> StorageResult<Vec<AgentInvocation>> {
        Ok(self.lock().run(run_id)?.sorted_invocations())
    }

    async fn create_task(&self, task: &AgentTaskRecord) -> StorageResult<()> {
        let mut state = self.lock();
        state.check_fault(StoreOp::CreateTask)?;
        let run = state.run_mut(&task.run_id)?;
        if run.tasks.contains_key(&task.id) {
            return Err(StorageError::AlreadyExists {
                what: format!("task {}", task.id),
            });
        }
        run.tasks.insert(task.id.clone(), task.clone());
        Ok(())
    }

    async fn load_task(&self, run_id: &RunId, task_id: &TaskId) -> StorageResult<AgentTaskRecord> {
        self.lock()
            .run(run_id)?
            .tasks
            .get(task_id)
            .cloned()
            .ok_or_else(|| StorageError::not_found(format!("task {task_id}")))
    }

    async fn list_tasks(&self, run_id: &RunId) -> StorageResult<Vec<AgentTaskRecord>> {
        Ok(self.lock().run(run_id)?.sorted_tasks())
    }

    async fn transition_task(
        &self,
        run_id: &RunId,
        task_id: &TaskId,
        transition: &TaskTransition,
        now: Timestamp,
    ) -> StorageResult<TaskTransitionOutcome> {
        let mut state = self.lock();
        state.check_fault(StoreOp::TransitionTask)?;
        let task = state
            .run_mut(run_id)?
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| StorageError::not_found(format!("task {task_id}")))?;
        // Apply to a copy so a rejected transition leaves the stored record untouched.
        let mut updated = task.clone();
        let changed = updated.apply_transition(transition, now)?;
        if changed {
            *task = updated.clone();
        }
        Ok(TaskTransitionOutcome {
            task: updated,
            changed,
        })
    }
}

#[async_trait]
impl RunJournal for InMemoryStore {
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        let stored = {
            let mut state = self.lock();
            if let Some(error) = state.take_fault(StoreOp::JournalAppend, Some(&event.event_type)) {
                return Err(error);
            }
            let run = state.run_mut(&event.run_id)?;
            let seq = u64::try_from(run.events.len())
                .unwrap_or(u64::MAX)
                .saturating_add(1);
            let stored = event.with_seq(seq);
            run.events.push(read_back(&stored)?);
            stored
        };
        self.appended
            .send_modify(|count| *count = count.wrapping_add(1));
        Ok(stored)
    }

    /// In order under one lock, so no other append comes between them (each event can meet
    /// its injected fault as one `append` would, the ones before it staying written).
    async fn append_all(&self, events: Vec<NewRunEvent>) -> StorageResult<Vec<RecordedEvent>> {
        let mut stored = Vec::with_capacity(events.len());
        let outcome = {
            let mut state = self.lock();
            let mut outcome = Ok(());
            for event in events {
                if let Some(error) =
                    state.take_fault(StoreOp::JournalAppend, Some(&event.event_type))
                {
                    outcome = Err(error);
                    break;
                }
                let run = match state.run_mut(&event.run_id) {
                    Ok(run) => run,
                    Err(error) => {
                        outcome = Err(error);
                        break;
                    }
                };
                let seq = u64::try_from(run.events.len())
                    .unwrap_or(u64::MAX)
                    .saturating_add(1);
                let event = event.with_seq(seq);
                match read_back(&event) {
                    Ok(read) => run.events.push(read),
                    Err(error) => {
                        outcome = Err(error);
                        break;
                    }
                }
                stored.push(event);
            }
            outcome
        };
        if !stored.is_empty() {
            self.appended.send_modify(|count| {
                *count = count.wrapping_add(u64::try_from(stored.len()).unwrap_or(u64::MAX));
            });
        }
        outcome.map(|()| stored)
    }

    /// One by one in order (each write can meet its injected fault as before).
    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<tt_ports::RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        tt_ports::commit_in_order(self, run_id, writes).await
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        let mut state = self.lock();
        state.check_fault(StoreOp::JournalRead)?;
        let events = &state.run(run_id)?.events;
        let limit = page.effective_limit();
        let matching = events.iter().filter(|event| page.matches(event));
        let selected: Vec<AgentRunEvent> = match (page.before_seq, page.after_seq) {
            (Some(before), _) => {
                let below: Vec<&AgentRunEvent> =
                    matching.filter(|event| event.seq < before).collect();
                let skip = below.len().saturating_sub(limit);
                below.into_iter().skip(skip).cloned().collect()
            }
            (None, Some(after)) => matching
                .filter(|event| event.seq > after)
                .take(limit)
                .cloned()
                .collect(),
            (None, None) => matching.take(limit).cloned().collect(),
        };
        Ok(selected)
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        let state = self.lock();
        let events = &state.run(run_id)?.events;
        Ok(events.last().map_or(0, |event| event.seq))
    }
}

#[async_trait]
impl ProfileRepository for InMemoryStore {
    async fn load_profile(&self, id: &ProfileId) -> StorageResult<Option<AgentProfileDefinition>> {
        let mut state = self.lock();
        state.check_fault(StoreOp::LoadProfile)?;
        Ok(state.profiles.get(id).cloned())
    }

    async fn list_profile_ids(&self) -> StorageResult<Vec<ProfileId>> {
        // BTreeMap keys are already sorted.
        Ok(self.lock().profiles.keys().cloned().collect())
    }

    async fn save_profile(&self, definition: &AgentProfileDefinition) -> StorageResult<()> {
        self.lock()
            .profiles
            .insert(definition.id.clone(), definition.clone());
        Ok(())
    }

    async fn delete_profile(&self, id: &ProfileId) -> StorageResult<bool> {
        Ok(self.lock().profiles.remove(id).is_some())
    }
}

/// `event` as the journal reads it back: its payload parsed from the text written.
fn read_back(event: &RecordedEvent) -> StorageResult<AgentRunEvent> {
    event
        .to_event()
        .map_err(|err| StorageError::Other(format!("cannot read an event back: {err}")))
}
