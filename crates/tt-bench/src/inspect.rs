//! `tt-bench inspect`: what the inspector reads of a big fan-out. Runs the `fanout` workload
//! (N children), then opens a second runtime on the same data dir (as `tt serve` reads a run
//! another process wrote: from its files) and times the root's conversation and the agent graph
//! (the timeline projection), each read first on a fresh runtime (cold) and then again (warm).

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;
use tt_domain::ids::ROOT_INVOCATION_ID;
use tt_runtime::{AgentRuntime, AgentRuntimeBuilder};

use crate::fanout;
use tt_bench::model::FanoutModel;

/// Warm reads of each kind by default; the median is reported.
pub(crate) const WARM_READS: u32 = 5;

/// What one `inspect` process measured; printed as one JSON line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InspectReport {
    pub n_children: u32,
    /// The fan-out run's own wall time (setup, not part of the figures below).
    pub setup_s: f64,
    pub conversation_cold_s: f64,
    pub conversation_warm_s: f64,
    pub graph_cold_s: f64,
    pub graph_warm_s: f64,
    /// Entries of the root's conversation (checked to hold every delegation's result).
    pub conversation_entries: usize,
}

impl InspectReport {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "nChildren": self.n_children,
            "setupS": self.setup_s,
            "conversationColdS": self.conversation_cold_s,
            "conversationWarmS": self.conversation_warm_s,
            "graphColdS": self.graph_cold_s,
            "graphWarmS": self.graph_warm_s,
            "conversationEntries": self.conversation_entries,
        })
    }
}

pub(crate) async fn run(
    children: u32,
    warm_reads: u32,
    signals: &tt_runtime::StopSignals,
) -> Result<InspectReport> {
    let temp = tempfile::Builder::new()
        .prefix("tt-bench-inspect-")
        .tempdir()
        .context("creating a temporary data dir")?;
    let data_dir = temp.path().join("data");
    let started = Instant::now();
    let fanout = fanout::run(children, Some(data_dir.clone()), false, None, signals).await?;
    let setup_s = started.elapsed().as_secs_f64();
    // The writing runtime is gone: this one reads the run from its files, as an inspector
    // serving runs another process wrote does.
    let runtime = AgentRuntimeBuilder::new()
        .data_dir(&data_dir)
        .provider(Arc::new(FanoutModel::new(children)))
        .build()?;
    let run_id = fanout.run_id.as_str();

    let (conversation_cold_s, root) = timed(conversation(&runtime, run_id)).await?;
    let entries = root
        .get("entries")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("the root's conversation has no entries"))?;
    let tool_results = entries
        .iter()
        .filter(|entry| entry.get("kind").and_then(Value::as_str) == Some("toolResult"))
        .count();
    ensure!(
        tool_results >= children as usize,
        "the root's conversation shows {tool_results} tool results, fewer than its {children} delegations"
    );
    let (graph_cold_s, projection) = timed(graph(&runtime, run_id)).await?;
    let agents = projection
        .get("invocations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    ensure!(
        agents == children as usize + 1,
        "the graph shows {agents} agents, not the root and its {children} children"
    );
    let mut conversation_warm = Vec::new();
    let mut graph_warm = Vec::new();
    for _ in 0..warm_reads {
        ensure!(!signals.is_requested(), "stopped by a signal");
        conversation_warm.push(timed(conversation(&runtime, run_id)).await?.0);
        graph_warm.push(timed(graph(&runtime, run_id)).await?.0);
    }
    let report = InspectReport {
        n_children: children,
        setup_s,
        conversation_cold_s,
        conversation_warm_s: median(&mut conversation_warm),
        graph_cold_s,
        graph_warm_s: median(&mut graph_warm),
        conversation_entries: entries.len(),
    };
    runtime
        .shutdown()
        .await
        .map_err(|err| anyhow!("shutting the reader down: {err}"))?;
    Ok(report)
}

async fn timed<T>(work: impl Future<Output = Result<T>>) -> Result<(f64, T)> {
    let started = Instant::now();
    let value = work.await?;
    Ok((started.elapsed().as_secs_f64(), value))
}

async fn conversation(runtime: &AgentRuntime, run_id: &str) -> Result<Value> {
    let conversation = runtime
        .agent_conversation(run_id, ROOT_INVOCATION_ID)
        .await
        .map_err(|err| anyhow!("the root's conversation: {err}"))?;
    Ok(serde_json::to_value(conversation)?)
}

async fn graph(runtime: &AgentRuntime, run_id: &str) -> Result<Value> {
    let graph = runtime
        .timeline_projection(run_id)
        .await
        .map_err(|err| anyhow!("the agent graph: {err}"))?;
    Ok(serde_json::to_value(graph)?)
}

/// The middle value (the upper middle for an even count); 0 for none (no warm reads).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_value() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
        assert_eq!(median(&mut []), 0.0);
    }
}
