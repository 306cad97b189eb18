//! Live model output: a streamed call's deltas are coalesced into `model_delta` events at a
//! bounded rate (never one journal line per token) while the call is in flight, and at most
//! [`MAX_DELTA_BYTES_PER_CALL`] of text per call reach the journal (a model that runs on would
//! otherwise fill it twice: once live, once in the stored response). The stored response stays
//! the complete one the provider returns at the end.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tt_domain::event::EventLevel;
use tt_domain::ids::InvocationId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};
use tt_ports::{CancellationToken, ModelDeltaSink, ModelError, ModelProvider};

use crate::engine::context::RunContext;
use crate::error::ApplicationResult;

/// Flush buffered output at least this often while deltas keep coming.
const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Or as soon as this much text is buffered.
const FLUSH_CHARS: usize = 2000;
/// The most bytes of text, reasoning and tool-call names one call journals as `model_delta`
/// events; what comes after is only counted (`omittedBytes`).
pub const MAX_DELTA_BYTES_PER_CALL: usize = 256 * 1024;

struct ChannelSink(mpsc::UnboundedSender<ModelDelta>);

impl ModelDeltaSink for ChannelSink {
    fn delta(&self, delta: ModelDelta) {
        // The receiver lives as long as the call; a closed channel only means nobody listens.
        let _ = self.0.send(delta);
    }
}

/// What has arrived since the last `model_delta` event.
#[derive(Default)]
struct Pending {
    text: String,
    reasoning: String,
    tool_calls: Vec<serde_json::Value>,
    argument_chars: usize,
    /// Bytes journaled by this call so far, including what is pending.
    journaled: usize,
    /// Bytes left out since the cap was reached (carried over across flushes).
    omitted: usize,
    /// `omitted` as of the last event, so a new omission still produces one (rate-limited).
    omitted_reported: usize,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.reasoning.is_empty()
            && self.tool_calls.is_empty()
            && self.argument_chars == 0
            && self.omitted == self.omitted_reported
    }

    /// The part of `text` that still fits under the per-call cap (cut at a char boundary);
    /// the rest is counted as omitted.
    fn admit<'a>(&mut self, text: &'a str) -> &'a str {
        let room = MAX_DELTA_BYTES_PER_CALL.saturating_sub(self.journaled);
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.journaled += end;
        self.omitted += text.len() - end;
        &text[..end]
    }

    fn size(&self) -> usize {
        self.text.len() + self.reasoning.len()
    }

    fn add(&mut self, delta: ModelDelta) {
        match delta {
            ModelDelta::Text { text } => {
                let admitted = self.admit(&text);
                self.text.push_str(admitted);
            }
            ModelDelta::Reasoning { text } => {
                let admitted = self.admit(&text);
                self.reasoning.push_str(admitted);
            }
            ModelDelta::ToolCallStarted { id, name } => {
                let size = id.len() + name.len();
                if self.journaled + size <= MAX_DELTA_BYTES_PER_CALL {
                    self.journaled += size;
                    self.tool_calls.push(json!({"id": id, "name": name}));
                } else {
                    self.omitted += size;
                }
            }
            ModelDelta::ToolCallArguments { fragment, .. } => {
                self.argument_chars += fragment.chars().count()
            }
        }
    }
}

/// Runs one streamed call, journaling coalesced `model_delta` events as output arrives.
pub(crate) async fn stream_with_deltas(
    ctx: &RunContext,
    provider: &Arc<dyn ModelProvider>,
    invocation_id: &InvocationId,
    request: &AgentModelRequest,
    cancel: CancellationToken,
) -> ApplicationResult<Result<AgentModelResponse, ModelError>> {
    let round = request.round;
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let sink: Arc<dyn ModelDeltaSink> = Arc::new(ChannelSink(sender));
    let call = provider.stream(request, sink, cancel);
    tokio::pin!(call);
    let mut pending = Pending::default();
    let mut part: u64 = 0;
    let mut next_flush = tokio::time::Instant::now() + FLUSH_INTERVAL;
    loop {
        tokio::select! {
            result = &mut call => {
                // Whatever arrived before the end is still shown.
                while let Ok(delta) = receiver.try_recv() {
                    pending.add(delta);
                }
                flush(ctx, invocation_id, round, &mut part, &mut pending).await?;
                return Ok(result);
            }
            Some(delta) = receiver.recv() => {
                pending.add(delta);
                if pending.size() >= FLUSH_CHARS {
                    flush(ctx, invocation_id, round, &mut part, &mut pending).await?;
                    next_flush = tokio::time::Instant::now() + FLUSH_INTERVAL;
                }
            }
            () = tokio::time::sleep_until(next_flush), if !pending.is_empty() => {
                flush(ctx, invocation_id, round, &mut part, &mut pending).await?;
                next_flush = tokio::time::Instant::now() + FLUSH_INTERVAL;
            }
        }
    }
}

async fn flush(
    ctx: &RunContext,
    invocation_id: &InvocationId,
    round: u32,
    part: &mut u64,
    pending: &mut Pending,
) -> ApplicationResult<()> {
    if pending.is_empty() {
        return Ok(());
    }
    *part += 1;
    let taken = Pending {
        journaled: pending.journaled,
        omitted: pending.omitted,
        omitted_reported: pending.omitted,
        ..Pending::default()
    };
    let taken = std::mem::replace(pending, taken);
    ctx.events
        .record(
            &ctx.run_id,
            EventLevel::Debug,
            &tt_domain::event_payload::ModelDelta {
                round,
                invocation_id: invocation_id.clone(),
                part: *part,
                text: taken.text,
                reasoning: taken.reasoning,
                tool_calls: serde_json::Value::Array(taken.tool_calls),
                argument_chars: taken.argument_chars as u64,
                omitted_bytes: taken.omitted as u64,
            },
        )
        .await?;
    Ok(())
}
