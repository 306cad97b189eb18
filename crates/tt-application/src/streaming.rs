//! Live model output: a streamed call's deltas are coalesced into `model_delta` events at a
//! bounded rate (never one journal line per token) while the call is in flight. The stored
//! response stays the complete one the provider returns at the end.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tt_domain::event::{EventLevel, RunEventType};
use tt_domain::ids::InvocationId;
use tt_domain::model::{AgentModelRequest, AgentModelResponse, ModelDelta};
use tt_ports::{CancellationToken, ModelDeltaSink, ModelError, ModelProvider};

use crate::context::RunContext;
use crate::error::ApplicationResult;

/// Flush buffered output at least this often while deltas keep coming.
const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Or as soon as this much text is buffered.
const FLUSH_CHARS: usize = 2000;

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
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.reasoning.is_empty()
            && self.tool_calls.is_empty()
            && self.argument_chars == 0
    }

    fn size(&self) -> usize {
        self.text.len() + self.reasoning.len()
    }

    fn add(&mut self, delta: ModelDelta) {
        match delta {
            ModelDelta::Text { text } => self.text.push_str(&text),
            ModelDelta::Reasoning { text } => self.reasoning.push_str(&text),
            ModelDelta::ToolCallStarted { id, name } => {
                self.tool_calls.push(json!({"id": id, "name": name}))
            }
            ModelDelta::ToolCallArguments { fragment, .. } => {
                self.argument_chars += fragment.chars().count()
            }
        }
    }
}

/// Runs one streamed call, journaling coalesced `model_delta` events as output arrives.
pub async fn stream_with_deltas(
    ctx: &RunContext,
    provider: &Arc<dyn ModelProvider>,
    invocation_id: &InvocationId,
    request: AgentModelRequest,
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
    let taken = std::mem::take(pending);
    ctx.events
        .emit(
            &ctx.run_id,
            EventLevel::Debug,
            RunEventType::ModelDelta,
            json!({
                "round": round, "invocationId": invocation_id, "part": *part,
                "text": taken.text, "reasoning": taken.reasoning,
                "toolCalls": taken.tool_calls, "argumentChars": taken.argument_chars,
            }),
        )
        .await?;
    Ok(())
}
