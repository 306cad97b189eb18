//! `cargo xtask bench channel [--n N]`: how fast and how late a run's events reach a
//! `tauri::ipc::Channel` through the plugin (docs/benchmarks.md, "Channel delivery").
//!
//! The workload is `tt-bench`'s fan-out (its profiles and zero-latency scripted model: a root
//! delegating N children of five turns each, 256 by default) on the file store, in Tauri's mock
//! runtime with the plugin. The run's events are followed with the plugin's own
//! `subscribe_run_events` (what `subscribe_agent_run_events` does) on a `Channel` whose callback
//! records the instant each message arrives, serialized as the webview would receive it. The
//! journal is the file store's, wrapped to record the monotonic instant each event was written
//! (durable, just before the runtime broadcasts it): latency = arrival minus that instant.
//! Then the whole journal is replayed over a new channel (events/s of the replay). Every event
//! must arrive once, in seq order, followed by the stream's end; the process fails otherwise.
//! Prints one JSON line on stdout, a summary on stderr.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Value, json};
use tauri::ipc::{Channel, InvokeResponseBody};
use tauri::test::{MockRuntime, mock_builder, mock_context, noop_assets};
use tauri_plugin_tt_agent::{RunStreamMessage, SubscribeRunEventsRequest, TtAgentExt};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tt_bench::model::FanoutModel;
use tt_bench::workload::{profiles, start_request};
use tt_domain::event::{AgentRunEvent, NewRunEvent, RecordedEvent};
use tt_domain::ids::RunId;
use tt_ports::{EventPage, RunJournal, RunWrite, StorageResult};
use tt_runtime::{CommitBridgeChoice, StoragePorts, StoreChoice, UserDataStore};

/// The fan-out's children unless `--n` says otherwise.
const DEFAULT_CHILDREN: u32 = 256;

/// The instant each event was written, by run and seq.
type Stamps = Arc<Mutex<HashMap<(String, u64), Instant>>>;

/// The file store's journal, recording when each event became durable.
struct StampedJournal {
    inner: Arc<UserDataStore>,
    stamps: Stamps,
}

impl StampedJournal {
    fn stamp(&self, events: &[RecordedEvent]) {
        let now = Instant::now();
        if let Ok(mut stamps) = self.stamps.lock() {
            for event in events {
                stamps.insert((event.run_id.as_str().to_owned(), event.seq), now);
            }
        }
    }
}

#[async_trait]
impl RunJournal for StampedJournal {
    async fn append(&self, event: NewRunEvent) -> StorageResult<RecordedEvent> {
        let stored = self.inner.append(event).await?;
        self.stamp(std::slice::from_ref(&stored));
        Ok(stored)
    }

    async fn append_all(&self, events: Vec<NewRunEvent>) -> StorageResult<Vec<RecordedEvent>> {
        let stored = self.inner.append_all(events).await?;
        self.stamp(&stored);
        Ok(stored)
    }

    async fn commit(
        &self,
        run_id: &RunId,
        writes: Vec<RunWrite>,
    ) -> StorageResult<Vec<RecordedEvent>> {
        let stored = self.inner.commit(run_id, writes).await?;
        self.stamp(&stored);
        Ok(stored)
    }

    async fn read(&self, run_id: &RunId, page: &EventPage) -> StorageResult<Vec<AgentRunEvent>> {
        self.inner.read(run_id, page).await
    }

    async fn last_seq(&self, run_id: &RunId) -> StorageResult<u64> {
        self.inner.last_seq(run_id).await
    }

    async fn wait_for_append(&self, run_id: &RunId, after_seq: u64, max_wait: std::time::Duration) {
        self.inner
            .wait_for_append(run_id, after_seq, max_wait)
            .await;
    }
}

/// One message as the channel's callback got it.
type Arrival = (Instant, InvokeResponseBody);

/// A channel recording each message's arrival, and where the arrivals go.
fn recording_channel() -> (Channel<RunStreamMessage>, UnboundedReceiver<Arrival>) {
    let (sender, receiver) = unbounded_channel();
    let channel = Channel::new(move |body| {
        let at = Instant::now();
        let _ = sender.send((at, body));
        Ok(())
    });
    (channel, receiver)
}

/// The events of one stream, checked: once each, in seq order from 1, then the end.
struct Delivered {
    /// `(seq, arrival)` in arrival order.
    events: Vec<(u64, Instant)>,
    /// When the end message arrived.
    ended: Instant,
}

async fn collect(mut arrivals: UnboundedReceiver<Arrival>) -> Result<Delivered, String> {
    let mut events = Vec::new();
    while let Some((at, body)) = arrivals.recv().await {
        let InvokeResponseBody::Json(text) = body else {
            return Err("a channel message that is not JSON".to_owned());
        };
        let message: Value = serde_json::from_str(&text).map_err(|err| err.to_string())?;
        match message["kind"].as_str() {
            Some("event") => {
                let seq = message["event"]["seq"]
                    .as_u64()
                    .ok_or_else(|| format!("an event without a seq: {text}"))?;
                let expected = events.len() as u64 + 1;
                if seq != expected {
                    return Err(format!("seq {seq} arrived where {expected} was due"));
                }
                events.push((seq, at));
            }
            Some("end") => return Ok(Delivered { events, ended: at }),
            _ => return Err(format!("unexpected message {text}")),
        }
    }
    Err("the channel closed without its end message".to_owned())
}

/// The `q` quantile (0..=1) of sorted `values`, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn parse_children() -> Result<u32, String> {
    // `cargo bench` passes `--bench`; `--n N` picks the fan-out size.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.as_slice() {
        [] => Ok(DEFAULT_CHILDREN),
        [flag, value] if flag == "--n" => value
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("--n needs a whole number from 1, got `{value}`")),
        other => Err(format!(
            "usage: channel [--n N] (got `{}`)",
            other.join(" ")
        )),
    }
}

async fn measure(
    agent: &tauri_plugin_tt_agent::TtAgent,
    stamps: &Stamps,
    children: u32,
) -> Result<Value, String> {
    let runtime = agent.runtime();
    for profile in profiles(children).map_err(|err| err.to_string())? {
        runtime
            .save_profile(profile)
            .await
            .map_err(|err| err.to_string())?;
    }
    let started = Instant::now();
    let run = runtime
        .start_run(start_request(children))
        .await
        .map_err(|err| err.to_string())?;
    let (channel, arrivals) = recording_channel();
    let request = SubscribeRunEventsRequest {
        run_id: run.id.as_str().to_owned(),
        ..SubscribeRunEventsRequest::default()
    };
    agent
        .subscribe_run_events("bench", request.clone(), channel)
        .await
        .map_err(|err| err.to_string())?;
    let live = collect(arrivals).await?;
    let finished = runtime
        .wait_for_run(run.id.as_str())
        .await
        .map_err(|err| err.to_string())?;
    let journaled = runtime
        .read_events(tt_runtime::ReadEventsRequest {
            run_id: run.id.as_str().to_owned(),
            before_seq: Some(u64::MAX),
            limit: Some(1),
            ..tt_runtime::ReadEventsRequest::default()
        })
        .await
        .map_err(|err| err.to_string())?
        .events
        .last()
        .map_or(0, |event| event.seq);
    if live.events.len() as u64 != journaled {
        return Err(format!(
            "{} events arrived, the journal holds {journaled}",
            live.events.len()
        ));
    }
    if finished.status.as_str() != "completed" {
        return Err(format!("the run ended {}", finished.status.as_str()));
    }
    let mut latencies_ms = Vec::with_capacity(live.events.len());
    {
        let stamps = stamps.lock().map_err(|_| "stamps poisoned".to_owned())?;
        for (seq, arrived) in &live.events {
            let written = stamps
                .get(&(run.id.as_str().to_owned(), *seq))
                .ok_or_else(|| format!("seq {seq} was never stamped at its write"))?;
            latencies_ms.push(arrived.saturating_duration_since(*written).as_secs_f64() * 1e3);
        }
    }
    latencies_ms.sort_by(f64::total_cmp);
    let live_s = live.ended.duration_since(started).as_secs_f64();

    // The same journal again, from seq 0, over a new channel: the replay's rate.
    let (channel, arrivals) = recording_channel();
    let replay_started = Instant::now();
    agent
        .subscribe_run_events("bench", request, channel)
        .await
        .map_err(|err| err.to_string())?;
    let replay = collect(arrivals).await?;
    if replay.events.len() != live.events.len() {
        return Err(format!(
            "the replay delivered {} events, the live stream {}",
            replay.events.len(),
            live.events.len()
        ));
    }
    let replay_s = replay.ended.duration_since(replay_started).as_secs_f64();
    let events = live.events.len() as f64;
    Ok(json!({
        "nChildren": children,
        "status": finished.status.as_str(),
        "events": live.events.len(),
        "inOrder": true,
        "liveS": live_s,
        "liveEventsPerS": events / live_s,
        "latencyMsP50": quantile(&latencies_ms, 0.50),
        "latencyMsP95": quantile(&latencies_ms, 0.95),
        "latencyMsP99": quantile(&latencies_ms, 0.99),
        "latencyMsMax": quantile(&latencies_ms, 1.0),
        "replayS": replay_s,
        "replayEventsPerS": events / replay_s,
    }))
}

fn run(children: u32) -> Result<Value, String> {
    let dir = tempfile::Builder::new()
        .prefix("tt-bench-channel-")
        .tempdir()
        .map_err(|err| err.to_string())?;
    let store = UserDataStore::open(dir.path().join("runs")).map_err(|err| err.to_string())?;
    let stamps = Stamps::default();
    let mut ports = StoragePorts::from_store(Arc::clone(&store), "bench");
    ports.journal = Arc::new(StampedJournal {
        inner: store,
        stamps: Arc::clone(&stamps),
    });
    let plugin = tauri_plugin_tt_agent::Builder::<MockRuntime>::new()
        .data_dir(dir.path().join("host"))
        .runtime(move |builder, _app| {
            Ok(builder
                .store(StoreChoice::Ports(ports))
                .provider(Arc::new(FanoutModel::new(children)))
                .commit_bridge(CommitBridgeChoice::Transcript))
        })
        .build();
    let app = mock_builder()
        .plugin(plugin)
        .build(mock_context(noop_assets()))
        .map_err(|err| err.to_string())?;
    let agent = app.tt_agent();
    let report = tauri::async_runtime::block_on(measure(&agent, &stamps, children));
    let _ = tauri::async_runtime::block_on(agent.shutdown());
    report
}

fn main() -> ExitCode {
    let outcome = parse_children().and_then(run);
    match outcome {
        Ok(report) => {
            eprintln!(
                "channel delivery, {} children: {} events, every one once and in order; \
                 latency journal -> channel p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
                 live {:.0} events/s over {:.2} s; replay {:.0} events/s",
                report["nChildren"],
                report["events"],
                report["latencyMsP50"].as_f64().unwrap_or(f64::NAN),
                report["latencyMsP99"].as_f64().unwrap_or(f64::NAN),
                report["latencyMsMax"].as_f64().unwrap_or(f64::NAN),
                report["liveEventsPerS"].as_f64().unwrap_or(f64::NAN),
                report["liveS"].as_f64().unwrap_or(f64::NAN),
                report["replayEventsPerS"].as_f64().unwrap_or(f64::NAN),
            );
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("channel bench failed: {err}");
            ExitCode::FAILURE
        }
    }
}
