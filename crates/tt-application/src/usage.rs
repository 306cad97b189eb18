//! Token usage and cost of a run, summed per invocation and in total from the journal's
//! `model_completed` events (and the summarizing calls of `context_compacted`) (so it is exact for stored runs too, after a restart). Failed model
//! call attempts (`model_call_attempt_failed`) are counted apart: they return no usage. Tool
//! calls are counted from `tool_call_completed` / `tool_call_failed`, and each invocation's
//! figures are also rolled up over the sub-tree of tasks it delegated (from
//! `agent_invocation_created`'s `parentInvocationId`).
//!
//! Wall time comes from the same journal: the Clock-port timestamps of each invocation's
//! `agent_invocation_started` and of the event that ended it (completed, failed, cancelled,
//! transferred, interrupted), waits included. An invocation started again after an interruption
//! adds each running stretch; one still running counts up to the run's latest event.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tt_domain::event::RunEventType;
use tt_domain::ids::RunId;
use tt_domain::model::ModelUsage;
use tt_domain::time::Timestamp;
use tt_ports::RunJournal;

use crate::error::ApplicationResult;
use crate::journal_read::JournalPages;

/// Usage of one invocation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationUsage {
    pub invocation_id: String,
    /// Model calls that completed.
    pub model_calls: u64,
    /// Model call attempts that failed (retried or not); not part of `model_calls`.
    pub failed_model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those the provider served from its prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those the provider wrote to its prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What the priced model calls cost, in US dollars (docs/providers.md, "Cost").
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Completed model calls whose model has no known price: `costUsd` leaves them out.
    #[serde(default)]
    pub unpriced_model_calls: u64,
    /// Tool calls it made (completed or failed).
    #[serde(default)]
    pub tool_calls: u64,
    /// Milliseconds from its start to its end (waits included), by the run's clock.
    #[serde(default)]
    pub wall_time_ms: u64,
    /// The invocation that created it (`None` for the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_invocation_id: Option<String>,
    /// This invocation plus everything delegated below it, at any depth.
    #[serde(default)]
    pub subtree: UsageTotals,
}

/// Summed figures of a sub-tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    pub model_calls: u64,
    pub tool_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those the provider served from its prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those the provider wrote to its prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What the priced model calls cost, in US dollars (docs/providers.md, "Cost").
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Completed model calls whose model has no known price: `costUsd` leaves them out.
    #[serde(default)]
    pub unpriced_model_calls: u64,
    /// Milliseconds from the first start to the last end of any agent in the sub-tree: how
    /// long the branch took.
    #[serde(default)]
    pub wall_time_ms: u64,
    /// The wall times of every agent in the sub-tree, added up: agents working side by side
    /// each count, and a delegator's waits overlap its tasks' work.
    #[serde(default)]
    pub agent_time_ms: u64,
}

/// When an invocation ran, from its lifecycle events.
#[derive(Debug, Default, Clone, Copy)]
struct Span {
    first_start: Option<Timestamp>,
    /// Start of the stretch it is running now.
    open: Option<Timestamp>,
    last_end: Option<Timestamp>,
    ran_ms: u64,
}

impl Span {
    fn start(&mut self, at: Timestamp) {
        self.first_start.get_or_insert(at);
        self.open.get_or_insert(at);
    }

    fn end(&mut self, at: Timestamp) {
        if let Some(open) = self.open.take() {
            self.ran_ms += at.millis_since(open);
            self.last_end = Some(at);
        }
    }
}

/// `agent_invocation_<status>` events that end a running stretch of an invocation.
const INVOCATION_ENDS: [RunEventType; 5] = [
    RunEventType::AgentInvocationCompleted,
    RunEventType::AgentInvocationFailed,
    RunEventType::AgentInvocationCancelled,
    RunEventType::AgentInvocationTransferred,
    RunEventType::AgentInvocationInterrupted,
];

/// Usage of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunUsage {
    /// Model calls that completed.
    pub model_calls: u64,
    /// Model call attempts that failed (retried or not); not part of `model_calls`.
    pub failed_model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those the provider served from its prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those the provider wrote to its prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// What the priced model calls cost, in US dollars (docs/providers.md, "Cost").
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Completed model calls whose model has no known price: `costUsd` leaves them out.
    #[serde(default)]
    pub unpriced_model_calls: u64,
    /// Every invocation that started (or called a model), in the order they started.
    pub by_invocation: Vec<InvocationUsage>,
    /// A branch's: what its source had paid up to the fork point. The figures above leave it
    /// out (they are what this run paid); absent for a run that is not a branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited: Option<InheritedUsage>,
}

/// What a branch inherited from its source (docs/branching.md): the figures of the source's
/// events up to the fork point, which the branch's journal starts with a copy of. The branch
/// did not pay for them; its own figures leave them out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InheritedUsage {
    /// The run the branch was taken from.
    pub run_id: String,
    /// The seq the branch shares its source's journal up to.
    pub seq: u64,
    pub model_calls: u64,
    pub failed_model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub unpriced_model_calls: u64,
    #[serde(default)]
    pub tool_calls: u64,
}

/// Sums `usage` over every `model_completed` event of the run and counts the failed attempts.
/// For a branch, the events it copied from its source (up to `forkedFrom.seq`, named by its
/// `run_created`) are summed apart, as `inherited`.
pub async fn run_usage(journal: &dyn RunJournal, run_id: &RunId) -> ApplicationResult<RunUsage> {
    let mut own = Tally::default();
    let mut inherited = Tally::default();
    let mut forked_from: Option<(String, u64)> = None;
    let mut pages = JournalPages::new(journal, run_id);
    while let Some(page) = pages.next().await? {
        for event in &page {
            if event.event_type == RunEventType::RunCreated {
                forked_from = fork_point(&event.payload);
            }
            match &forked_from {
                Some((_, seq)) if event.seq <= *seq => inherited.add(event),
                _ => own.add(event),
            }
            // Who delegated whom is the run's whole story, whoever paid for it.
            if event.event_type == RunEventType::AgentInvocationCreated {
                own.add_parent(event);
            }
        }
    }
    let mut usage = own.finish();
    usage.inherited = forked_from.map(|(run_id, seq)| {
        let paid = inherited.finish();
        InheritedUsage {
            run_id,
            seq,
            model_calls: paid.model_calls,
            failed_model_calls: paid.failed_model_calls,
            input_tokens: paid.input_tokens,
            output_tokens: paid.output_tokens,
            cached_input_tokens: paid.cached_input_tokens,
            cache_write_tokens: paid.cache_write_tokens,
            cost_usd: paid.cost_usd,
            unpriced_model_calls: paid.unpriced_model_calls,
            tool_calls: paid.by_invocation.iter().map(|u| u.tool_calls).sum(),
        }
    });
    Ok(usage)
}

/// `forkedFrom {runId, seq}` of a `run_created` payload.
fn fork_point(payload: &serde_json::Value) -> Option<(String, u64)> {
    let from = payload.get("forkedFrom")?;
    Some((
        from.get("runId")?.as_str()?.to_owned(),
        from.get("seq")?.as_u64()?,
    ))
}

/// The figures of a run's events, per invocation, as they are read.
#[derive(Default)]
struct Tally {
    order: Vec<String>,
    sums: BTreeMap<String, InvocationUsage>,
    parents: BTreeMap<String, String>,
    tool_calls: BTreeMap<String, u64>,
    spans: BTreeMap<String, Span>,
    latest: Option<Timestamp>,
}

impl Tally {
    fn entry(&mut self, id: &str) -> &mut InvocationUsage {
        if !self.sums.contains_key(id) {
            self.order.push(id.to_owned());
        }
        self.sums
            .entry(id.to_owned())
            .or_insert_with(|| empty_usage(id))
    }

    fn add_parent(&mut self, event: &tt_domain::event::AgentRunEvent) {
        let field = |key: &str| event.payload.get(key).and_then(|v| v.as_str());
        if let (Some(id), Some(parent)) = (field("invocationId"), field("parentInvocationId")) {
            self.parents.insert(id.to_owned(), parent.to_owned());
        }
    }

    fn add(&mut self, event: &tt_domain::event::AgentRunEvent) {
        self.latest = Some(event.timestamp);
        let Some(id) = event.payload.get("invocationId").and_then(|v| v.as_str()) else {
            return;
        };
        match &event.event_type {
            RunEventType::AgentInvocationStarted => {
                self.entry(id);
                self.spans
                    .entry(id.to_owned())
                    .or_default()
                    .start(event.timestamp);
            }
            ended if INVOCATION_ENDS.contains(ended) => {
                if let Some(span) = self.spans.get_mut(id) {
                    span.end(event.timestamp);
                }
            }
            RunEventType::AgentInvocationCreated => self.add_parent(event),
            RunEventType::ToolCallCompleted | RunEventType::ToolCallFailed => {
                *self.tool_calls.entry(id.to_owned()).or_default() += 1;
            }
            RunEventType::ModelCallAttemptFailed => self.entry(id).failed_model_calls += 1,
            RunEventType::ModelCompleted | RunEventType::ContextCompacted => {
                let usage: ModelUsage = event
                    .payload
                    .get("usage")
                    .and_then(|usage| serde_json::from_value(usage.clone()).ok())
                    .unwrap_or_default();
                let cost = event
                    .payload
                    .get("costUsd")
                    .and_then(serde_json::Value::as_f64);
                let entry = self.entry(id);
                entry.model_calls += 1;
                entry.input_tokens += usage.input_tokens;
                entry.output_tokens += usage.output_tokens;
                entry.cached_input_tokens += usage.cached_input_tokens;
                entry.cache_write_tokens += usage.cache_write_tokens;
                match cost {
                    Some(cost) => add_cost(&mut entry.cost_usd, Some(cost)),
                    None => entry.unpriced_model_calls += 1,
                }
            }
            _ => {}
        }
    }

    /// The run's usage from what was added.
    fn finish(self) -> RunUsage {
        let Tally {
            order,
            mut sums,
            parents,
            tool_calls,
            mut spans,
            latest,
        } = self;
        let mut by_invocation: Vec<InvocationUsage> =
            order.iter().filter_map(|id| sums.remove(id)).collect();
        // One still running counts up to the run's latest event.
        for span in spans.values_mut() {
            if let Some(latest) = latest {
                span.end(latest);
            }
        }
        for usage in &mut by_invocation {
            usage.tool_calls = tool_calls.get(&usage.invocation_id).copied().unwrap_or(0);
            usage.parent_invocation_id = parents.get(&usage.invocation_id).cloned();
            usage.wall_time_ms = spans
                .get(&usage.invocation_id)
                .map_or(0, |span| span.ran_ms);
        }
        roll_up(&mut by_invocation, &parents, &spans);
        RunUsage {
            model_calls: by_invocation.iter().map(|u| u.model_calls).sum(),
            failed_model_calls: by_invocation.iter().map(|u| u.failed_model_calls).sum(),
            input_tokens: by_invocation.iter().map(|u| u.input_tokens).sum(),
            output_tokens: by_invocation.iter().map(|u| u.output_tokens).sum(),
            cached_input_tokens: by_invocation.iter().map(|u| u.cached_input_tokens).sum(),
            cache_write_tokens: by_invocation.iter().map(|u| u.cache_write_tokens).sum(),
            cost_usd: by_invocation
                .iter()
                .fold(None, |mut sum, u| {
                    add_cost(&mut sum, u.cost_usd);
                    sum
                })
                .map(tt_domain::cost::round_usd),
            unpriced_model_calls: by_invocation.iter().map(|u| u.unpriced_model_calls).sum(),
            by_invocation,
            inherited: None,
        }
    }
}

/// Adds each invocation's own figures to it and to every invocation above it, and sets each
/// sub-tree's wall time from its first start to its last end.
fn roll_up(
    by_invocation: &mut [InvocationUsage],
    parents: &BTreeMap<String, String>,
    spans: &BTreeMap<String, Span>,
) {
    // Each invocation's own figures are added to it and to every invocation above it.
    let own: Vec<(String, UsageTotals)> = by_invocation
        .iter()
        .map(|u| {
            (
                u.invocation_id.clone(),
                UsageTotals {
                    model_calls: u.model_calls,
                    tool_calls: u.tool_calls,
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    cached_input_tokens: u.cached_input_tokens,
                    cache_write_tokens: u.cache_write_tokens,
                    cost_usd: u.cost_usd,
                    unpriced_model_calls: u.unpriced_model_calls,
                    wall_time_ms: 0,
                    agent_time_ms: u.wall_time_ms,
                },
            )
        })
        .collect();
    // Each sub-tree's first start and last end, for how long the branch took.
    let mut bounds: Vec<(Option<Timestamp>, Option<Timestamp>)> =
        vec![(None, None); by_invocation.len()];
    let index: BTreeMap<String, usize> = by_invocation
        .iter()
        .enumerate()
        .map(|(i, u)| (u.invocation_id.clone(), i))
        .collect();
    for (id, totals) in own {
        let span = spans.get(&id).copied().unwrap_or_default();
        let mut current = Some(id);
        let mut hops = 0;
        while let Some(id) = current {
            if let Some(&i) = index.get(&id) {
                let subtree = &mut by_invocation[i].subtree;
                subtree.model_calls += totals.model_calls;
                subtree.tool_calls += totals.tool_calls;
                subtree.input_tokens += totals.input_tokens;
                subtree.output_tokens += totals.output_tokens;
                subtree.cached_input_tokens += totals.cached_input_tokens;
                subtree.cache_write_tokens += totals.cache_write_tokens;
                add_cost(&mut subtree.cost_usd, totals.cost_usd);
                subtree.unpriced_model_calls += totals.unpriced_model_calls;
                subtree.agent_time_ms += totals.agent_time_ms;
                let (first, last) = &mut bounds[i];
                *first = [*first, span.first_start].into_iter().flatten().min();
                *last = [*last, span.last_end].into_iter().flatten().max();
            }
            // A malformed journal cannot make this loop forever.
            hops += 1;
            current = parents.get(&id).cloned().filter(|_| hops <= parents.len());
        }
    }
    for (usage, (first, last)) in by_invocation.iter_mut().zip(bounds) {
        if let (Some(first), Some(last)) = (first, last) {
            usage.subtree.wall_time_ms = last.millis_since(first);
        }
        // Sums of rounded figures are rounded again, so totals print as they add up.
        usage.cost_usd = usage.cost_usd.map(tt_domain::cost::round_usd);
        usage.subtree.cost_usd = usage.subtree.cost_usd.map(tt_domain::cost::round_usd);
    }
}

/// Adds `cost` to `sum`: a sum stays `None` until a priced call is added.
pub(crate) fn add_cost(sum: &mut Option<f64>, cost: Option<f64>) {
    if let Some(cost) = cost {
        *sum = Some(sum.unwrap_or(0.0) + cost);
    }
}

fn empty_usage(id: &str) -> InvocationUsage {
    InvocationUsage {
        invocation_id: id.to_owned(),
        ..InvocationUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::{Value, json};
    use tt_domain::event::{AgentRunEvent, EventLevel, NewRunEvent, RecordedEvent};
    use tt_domain::ids::EventId;
    use tt_ports::{EventPage, StorageResult};

    /// A journal that only reads back the events it was built with.
    struct Journal(Vec<AgentRunEvent>);

    #[async_trait]
    impl RunJournal for Journal {
        async fn append(&self, _event: NewRunEvent) -> StorageResult<RecordedEvent> {
            unreachable!("the ledger only reads")
        }

        async fn commit(
            &self,
            _run: &RunId,
            _writes: Vec<tt_ports::RunWrite>,
        ) -> StorageResult<Vec<RecordedEvent>> {
            unreachable!("the ledger only reads")
        }

        async fn read(&self, _run: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
            let after = page.after_seq.unwrap_or(0);
            Ok(self
                .0
                .iter()
                .filter(|event| event.seq > after)
                .take(page.effective_limit())
                .cloned()
                .collect())
        }

        async fn last_seq(&self, _run: &RunId) -> StorageResult<u64> {
            Ok(self.0.len() as u64)
        }
    }

    fn journal(events: &[(i64, &str, Value)]) -> Journal {
        Journal(
            events
                .iter()
                .zip(1..)
                .map(|((at, event_type, payload), seq)| AgentRunEvent {
                    seq,
                    id: EventId::from_raw(format!("evt_{seq}")),
                    run_id: RunId::from_raw("run_a"),
                    timestamp: Timestamp::from_unix_millis(*at),
                    level: EventLevel::Info,
                    event_type: tt_domain::event::RunEventType::from_name(event_type),
                    payload: payload.clone(),
                })
                .collect(),
        )
    }

    fn on(id: &str) -> Value {
        json!({"invocationId": id})
    }

    fn created(id: &str, parent: &str) -> Value {
        json!({"invocationId": id, "parentInvocationId": parent})
    }

    fn answered(id: &str, tokens: u64) -> Value {
        json!({"invocationId": id, "usage": {"inputTokens": tokens, "outputTokens": 0}})
    }

    #[tokio::test]
    async fn cost_is_summed_per_agent_sub_tree_and_run_and_unpriced_calls_are_counted() {
        let priced = |id: &str, cost: Option<f64>| {
            let mut payload = answered(id, 100);
            if let Some(cost) = cost {
                payload["costUsd"] = json!(cost);
            }
            payload
        };
        let journal = journal(&[
            (1_000, "agent_invocation_started", on("inv_root")),
            (1_100, "model_completed", priced("inv_root", Some(0.25))),
            (
                1_200,
                "agent_invocation_created",
                created("inv_a", "inv_root"),
            ),
            (1_300, "agent_invocation_started", on("inv_a")),
            (1_400, "model_completed", priced("inv_a", Some(0.125))),
            (1_450, "context_compacted", priced("inv_a", Some(0.0625))),
            (1_500, "model_completed", priced("inv_root", None)),
        ]);
        let usage = run_usage(&journal, &RunId::from_raw("run_a"))
            .await
            .unwrap();
        assert_eq!(usage.cost_usd, Some(0.4375));
        assert_eq!(usage.unpriced_model_calls, 1);
        assert_eq!(usage.model_calls, 4);
        let root = &usage.by_invocation[0];
        assert_eq!(
            (root.cost_usd, root.subtree.cost_usd),
            (Some(0.25), Some(0.4375))
        );
        assert_eq!(usage.by_invocation[1].cost_usd, Some(0.1875));
        assert_eq!(root.subtree.unpriced_model_calls, 1);
    }

    #[tokio::test]
    async fn a_run_whose_calls_have_no_price_costs_null_never_zero() {
        let journal = journal(&[
            (1_000, "agent_invocation_started", on("inv_root")),
            (1_100, "model_completed", answered("inv_root", 100)),
            (1_200, "model_completed", answered("inv_root", 100)),
        ]);
        let usage = run_usage(&journal, &RunId::from_raw("run_a"))
            .await
            .unwrap();
        assert_eq!(usage.unpriced_model_calls, 2);
        assert_eq!(usage.cost_usd, None);
        assert_eq!(usage.by_invocation[0].subtree.cost_usd, None);
        let json = serde_json::to_value(&usage).unwrap();
        assert_eq!(json["costUsd"], Value::Null);
        assert_eq!(json["byInvocation"][0]["subtree"]["costUsd"], Value::Null);
    }

    #[tokio::test]
    async fn cached_input_is_summed_per_agent_sub_tree_and_run() {
        let cached = |id: &str, input: u64, read: u64, written: u64| {
            json!({"invocationId": id, "usage": {
                "inputTokens": input, "outputTokens": 5,
                "cachedInputTokens": read, "cacheWriteTokens": written,
            }})
        };
        let journal = journal(&[
            (1_000, "agent_invocation_started", on("inv_root")),
            (1_100, "model_completed", cached("inv_root", 100, 0, 90)),
            (
                1_200,
                "agent_invocation_created",
                created("inv_a", "inv_root"),
            ),
            (1_300, "agent_invocation_started", on("inv_a")),
            (1_400, "model_completed", cached("inv_a", 120, 90, 0)),
            (1_500, "model_completed", cached("inv_root", 130, 90, 30)),
        ]);
        let usage = run_usage(&journal, &RunId::from_raw("run_a"))
            .await
            .unwrap();
        assert_eq!(
            (usage.cached_input_tokens, usage.cache_write_tokens),
            (180, 120)
        );
        let root = &usage.by_invocation[0];
        assert_eq!(
            (root.cached_input_tokens, root.cache_write_tokens),
            (90, 120)
        );
        assert_eq!(
            (root.subtree.cached_input_tokens, root.subtree.input_tokens),
            (180, 350)
        );
        assert_eq!(usage.by_invocation[1].cached_input_tokens, 90);
    }

    /// The root runs on (to the run's latest event); `a` is interrupted and started again;
    /// `b` works under `a`; `c` is cancelled before its first model call.
    #[tokio::test]
    async fn wall_time_is_each_agents_running_time_rolled_up_per_sub_tree() {
        let journal = journal(&[
            (1_000, "agent_invocation_started", on("inv_root")),
            (1_100, "model_completed", answered("inv_root", 10)),
            (
                1_200,
                "agent_invocation_created",
                created("inv_a", "inv_root"),
            ),
            (1_300, "agent_invocation_started", on("inv_a")),
            (1_400, "model_completed", answered("inv_a", 20)),
            (1_450, "agent_invocation_created", created("inv_b", "inv_a")),
            (1_500, "agent_invocation_started", on("inv_b")),
            (1_600, "model_completed", answered("inv_b", 30)),
            (2_000, "agent_invocation_interrupted", on("inv_a")),
            (2_500, "agent_invocation_completed", on("inv_b")),
            (3_000, "agent_invocation_started", on("inv_a")),
            (3_500, "agent_invocation_completed", on("inv_a")),
            (
                3_550,
                "agent_invocation_created",
                created("inv_c", "inv_root"),
            ),
            (3_600, "agent_invocation_started", on("inv_c")),
            (3_700, "agent_invocation_cancelled", on("inv_c")),
            (
                4_000,
                "agent_await_completed",
                json!({"parentInvocationId": "inv_root"}),
            ),
        ]);
        let usage = run_usage(&journal, &RunId::from_raw("run_a"))
            .await
            .unwrap();
        let figures: Vec<(&str, u64, u64, u64, u64)> = usage
            .by_invocation
            .iter()
            .map(|u| {
                (
                    u.invocation_id.as_str(),
                    u.wall_time_ms,
                    u.subtree.wall_time_ms,
                    u.subtree.agent_time_ms,
                    u.subtree.input_tokens,
                )
            })
            .collect();
        assert_eq!(
            figures,
            [
                // Started at 1 s and still running at the latest event (4 s).
                ("inv_root", 3_000, 3_000, 3_000 + 1_200 + 1_000 + 100, 60),
                // Two stretches: 1.3–2.0 s and 3.0–3.5 s; its branch spans 1.3–3.5 s.
                ("inv_a", 1_200, 2_200, 1_200 + 1_000, 50),
                ("inv_b", 1_000, 1_000, 1_000, 30),
                ("inv_c", 100, 100, 100, 0),
            ]
        );
        assert_eq!(usage.by_invocation[3].model_calls, 0);
        assert_eq!(
            usage.by_invocation[3].parent_invocation_id.as_deref(),
            Some("inv_root")
        );
    }
    /// A branch's journal starts with its source's events up to the fork point (seq 4 here):
    /// what they cost is inherited, and only what follows is the branch's.
    #[tokio::test]
    async fn a_branch_pays_only_for_what_follows_its_fork_point() {
        let priced = |id: &str, tokens: u64, cost: f64| {
            let mut payload = answered(id, tokens);
            payload["costUsd"] = json!(cost);
            payload
        };
        let journal = journal(&[
            (
                1_000,
                "run_created",
                json!({"forkedFrom": {"runId": "run_source", "seq": 4}}),
            ),
            (1_000, "agent_invocation_started", on("inv_root")),
            (1_100, "model_completed", priced("inv_root", 100, 0.5)),
            (1_200, "tool_call_completed", on("inv_root")),
            (5_000, "agent_invocation_interrupted", on("inv_root")),
            (5_100, "agent_invocation_started", on("inv_root")),
            (5_200, "model_completed", priced("inv_root", 30, 0.25)),
            (5_300, "agent_invocation_completed", on("inv_root")),
        ]);
        let usage = run_usage(&journal, &RunId::from_raw("run_a"))
            .await
            .unwrap();
        assert_eq!(
            (usage.model_calls, usage.input_tokens, usage.cost_usd),
            (1, 30, Some(0.25))
        );
        let root = &usage.by_invocation[0];
        assert_eq!((root.model_calls, root.tool_calls), (1, 0));
        assert_eq!((root.wall_time_ms, root.subtree.input_tokens), (200, 30));
        let inherited = usage.inherited.unwrap();
        assert_eq!(
            (inherited.run_id.as_str(), inherited.seq),
            ("run_source", 4)
        );
        assert_eq!(
            (
                inherited.model_calls,
                inherited.input_tokens,
                inherited.cost_usd,
                inherited.tool_calls
            ),
            (1, 100, Some(0.5), 1)
        );
    }
}
