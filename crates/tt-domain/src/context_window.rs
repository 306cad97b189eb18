//! The context window: how large a model's window is, how large a request is, and what to
//! drop from an agent's history when the next request would not fit.
//!
//! Sizes are estimated without a tokenizer: the bytes a provider would receive for each
//! message, tool spec and system prompt, at [`BYTES_PER_TOKEN`], plus a small overhead per
//! message. The runtime calibrates the estimate per agent against the `input_tokens` its
//! provider reported for the previous request ([`Calibration`]), so a model whose tokenizer
//! is denser or looser than the rule is measured after one call. docs/providers.md
//! ("Context window and compaction") says how the pieces fit together.
//!
//! Everything here is pure: the engine decides when to call it and journals what it did, so
//! a resumed run applies the same steps instead of computing them again.

use crate::model::{AgentModelMessage, ModelContentPart, ModelRole};
use crate::tool::{AgentToolResult, AgentToolSpec, ToolName};

mod trim;

pub use trim::{
    DRIFT_REMINDER_PREFIX, DRIFT_SAVED_TO, remove_messages, saved_text_path, settled_turns,
};

/// Bytes per token of the uncalibrated estimate: English prose runs near 4, JSON and code
/// nearer 3; 3.5 errs on the large side, which is the safe side for a window.
pub const BYTES_PER_TOKEN_TIMES_TEN: u64 = 35;

/// The fixed cost of one message (role markers, separators), in tokens.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// With no output limit set, above this many tokens of output reserve a window is not further
/// reserved: a model rarely writes more in one turn.
const MAX_OUTPUT_RESERVE_TOKENS: u64 = 8192;

/// The least room kept for the model's answer when no output limit is set, however small the
/// window (but at most half of it).
const MIN_OUTPUT_RESERVE_TOKENS: u64 = 256;

/// Results smaller than this (in bytes) are never replaced: a stub would save next to nothing.
const MIN_STUB_BYTES: u64 = 600;

/// Tool-call arguments larger than this (in bytes) in an older turn are replaced by a marker
/// (the text of a `write_file` or `apply_patch` the workspace already holds).
const MIN_ARGUMENT_STUB_BYTES: u64 = 2048;

/// Known context windows by model-id prefix, longest prefix first. A connection's or a
/// profile's `contextWindowTokens` overrides them; docs/providers.md lists them.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("claude-3-haiku", 200_000),
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("deepseek-", 128_000),
    ("gemini-", 1_048_576),
    ("qwen", 32_768),
    ("llama-3", 128_000),
];

/// The context window of `model_id`, when it is a known model.
pub fn known_context_window(model_id: &str) -> Option<u64> {
    by_model_prefix(KNOWN_WINDOWS, model_id).copied()
}

/// The entry of `table` whose prefix is the longest that `model_id` starts with, case aside;
/// a provider prefix (`openai/gpt-4o`, `anthropic/claude-…`) is ignored, the model comes last.
pub fn by_model_prefix<'t, T>(table: &'t [(&str, T)], model_id: &str) -> Option<&'t T> {
    let id = model_id.to_ascii_lowercase();
    let id = id.rsplit('/').next().unwrap_or(&id);
    table
        .iter()
        .filter(|(prefix, _)| id.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, value)| value)
}

/// How a request is split between its input and the model's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowBudget {
    /// The model's whole window.
    pub window_tokens: u64,
    /// Kept for the answer.
    pub output_reserve_tokens: u64,
    /// What the input may take: `window_tokens - output_reserve_tokens`.
    pub input_budget_tokens: u64,
}

impl WindowBudget {
    /// The split of `window_tokens` for an agent whose answers may be `max_output_tokens`
    /// long: that limit when it is set, else an eighth of the window (at least 256 tokens, at
    /// most 8,192); never more than half the window.
    pub fn new(window_tokens: u64, max_output_tokens: Option<u32>) -> Self {
        let reserve = match max_output_tokens {
            Some(limit) => u64::from(limit),
            None => (window_tokens / 8).clamp(MIN_OUTPUT_RESERVE_TOKENS, MAX_OUTPUT_RESERVE_TOKENS),
        }
        .min(window_tokens / 2);
        Self {
            window_tokens,
            output_reserve_tokens: reserve,
            input_budget_tokens: window_tokens - reserve,
        }
    }

    /// Where trimming stops once it has to start: three quarters of the input budget, so the
    /// history can grow for a while before the next trim changes the cached prefix again.
    pub fn trim_target_tokens(&self) -> u64 {
        self.input_budget_tokens / 4 * 3
    }

    /// The most tokens the answer to a request of `input_tokens` may take.
    pub fn output_room(&self, input_tokens: u64) -> u64 {
        self.window_tokens.saturating_sub(input_tokens)
    }
}

/// The bytes a provider receives for one message, roughly: its texts, tool calls (name and
/// arguments) and tool results (the JSON payload the adapters send).
pub fn message_bytes(message: &AgentModelMessage) -> u64 {
    message
        .parts
        .iter()
        .map(|part| match part {
            ModelContentPart::Text { text } => text.len() as u64,
            ModelContentPart::Reasoning { text, .. } => text.as_ref().map_or(0, |t| t.len() as u64),
            ModelContentPart::ToolCall { call } => {
                (call.name.len() + call.id.len()) as u64 + json_len(&call.arguments)
            }
            ModelContentPart::ToolResult { result } => result.to_model_payload().len() as u64,
            ModelContentPart::Media { value, .. } => value.len() as u64,
            ModelContentPart::ResourceRef { uri } => uri.len() as u64,
            ModelContentPart::Native { value, .. } => json_len(value),
        })
        .sum()
}

fn json_len(value: &serde_json::Value) -> u64 {
    match value {
        serde_json::Value::String(text) => text.len() as u64 + 2,
        other => serde_json::to_string(other).map_or(0, |text| text.len() as u64),
    }
}

/// The uncalibrated token estimate of `bytes` bytes.
pub fn tokens_of_bytes(bytes: u64) -> u64 {
    (bytes * 10).div_ceil(BYTES_PER_TOKEN_TIMES_TEN)
}

/// The uncalibrated estimate of one message.
pub fn message_tokens(message: &AgentModelMessage) -> u64 {
    tokens_of_bytes(message_bytes(message)) + MESSAGE_OVERHEAD_TOKENS
}

/// The uncalibrated estimate of the tool specs a request offers.
pub fn tools_tokens(tools: &[AgentToolSpec]) -> u64 {
    tools
        .iter()
        .map(|spec| {
            let bytes = spec.model_name.len() + spec.description.len();
            tokens_of_bytes(bytes as u64 + json_len(&spec.input_schema)) + MESSAGE_OVERHEAD_TOKENS
        })
        .sum()
}

/// The uncalibrated estimate of a whole request.
pub fn request_tokens(messages: &[AgentModelMessage], tools_tokens: u64) -> u64 {
    tools_tokens + messages.iter().map(message_tokens).sum::<u64>()
}

/// How the estimate compares with what the provider counted, learned per agent from each
/// answer: the provider's `input_tokens` over the estimate of the same request, kept within
/// 0.5 to 4, in thousandths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    per_mille: u64,
}

impl Default for Calibration {
    fn default() -> Self {
        Self { per_mille: 1000 }
    }
}

impl Calibration {
    /// The calibration that makes `estimated` come out as `reported`.
    pub fn observe(&mut self, estimated: u64, reported: u64) {
        if estimated == 0 || reported == 0 {
            return;
        }
        self.per_mille = (reported * 1000 / estimated).clamp(500, 4000);
    }

    /// `estimated` tokens as the provider would count them.
    pub fn apply(self, estimated: u64) -> u64 {
        (estimated * self.per_mille).div_ceil(1000)
    }

    /// Calibrated tokens back to the estimate's scale.
    pub fn unapply(self, tokens: u64) -> u64 {
        tokens * 1000 / self.per_mille
    }

    /// The ratio in thousandths (1000 = the estimate is exact), for events.
    pub fn per_mille(self) -> u64 {
        self.per_mille
    }
}

/// The parts of a history that trimming never touches: the opening the agent started with
/// before its first answer (system prompt and request), and its latest answer with everything
/// after it (the results it is about to read). Compaction keeps only the opening (see
/// `engine::context_fit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtectedSpans {
    /// Messages `0..head_end` are the opening.
    pub head_end: usize,
    /// Messages `tail_start..` are the latest turn.
    pub tail_start: usize,
}

impl ProtectedSpans {
    /// The spans of `messages` whose first `opening` messages are the opening
    /// ([`opening_len`] of the messages the agent started with).
    pub fn of(messages: &[AgentModelMessage], opening: usize) -> Self {
        let head_end = opening.min(messages.len());
        let tail_start = messages
            .iter()
            .rposition(|message| message.role == ModelRole::Assistant)
            .unwrap_or(messages.len())
            .max(head_end);
        Self {
            head_end,
            tail_start,
        }
    }
}

/// How many of the messages an agent starts with are its opening: all of them up to its first
/// answer (a conversation's earlier answers are history, not opening).
pub fn opening_len(messages: &[AgentModelMessage]) -> usize {
    messages
        .iter()
        .position(|message| message.role == ModelRole::Assistant)
        .unwrap_or(messages.len())
}

/// What one trim does: messages that leave the history (settled slip and drift turns, see
/// [`settled_turns`]) and messages replaced by stubs, as indices of the history before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrimPlan {
    /// Ascending.
    pub removed: Vec<usize>,
    /// Oldest first.
    pub stubbed: Vec<usize>,
}

impl TrimPlan {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.stubbed.is_empty()
    }
}

/// What to take out of the history (the first `opening` messages are its opening) so that its
/// estimate is at most `target` (uncalibrated tokens, with `fixed` the tool specs' share):
/// first every settled slip and drift turn, then stubs, oldest first, until the target is
/// met. The plan may still leave the history over `target`: then everything that can go went.
pub fn plan_trim(
    messages: &[AgentModelMessage],
    opening: usize,
    fixed: u64,
    target: u64,
) -> TrimPlan {
    let mut total = request_tokens(messages, fixed);
    let spans = ProtectedSpans::of(messages, opening);
    let removed = if total > target {
        settled_turns(messages, spans.head_end)
    } else {
        Vec::new()
    };
    for &index in &removed {
        total = total.saturating_sub(message_tokens(&messages[index]));
    }
    let mut stubbed = Vec::new();
    for index in spans.head_end..spans.tail_start {
        if total <= target {
            break;
        }
        if removed.binary_search(&index).is_ok() {
            continue;
        }
        let Some(stub) = stub_at(messages, index) else {
            continue;
        };
        let saved = message_tokens(&messages[index]).saturating_sub(message_tokens(&stub));
        if saved > 0 {
            total -= saved;
            stubbed.push(index);
        }
    }
    TrimPlan { removed, stubbed }
}

/// Applies `plan` to the history it was made for: the stubs, then the removals.
pub fn apply_trim(messages: &mut Vec<AgentModelMessage>, plan: &TrimPlan) {
    apply_stubs(messages, &plan.stubbed);
    remove_messages(messages, &plan.removed);
}

/// Replaces the messages at `indices` by their stubs (indices past the end are ignored).
pub fn apply_stubs(messages: &mut [AgentModelMessage], indices: &[usize]) {
    for &index in indices {
        if let Some(stubbed) = stub_at(messages, index) {
            messages[index] = stubbed;
        }
    }
}

/// The stub of the message at `index`: a long plain-text answer the runtime saved to a file
/// ([`saved_text_path`]) becomes a note naming the file; any other message as
/// [`stub_message`] says.
pub fn stub_at(messages: &[AgentModelMessage], index: usize) -> Option<AgentModelMessage> {
    let message = messages.get(index)?;
    if let Some(path) = saved_text_path(messages, index) {
        let text = message.text_content();
        if (text.len() as u64) < MIN_STUB_BYTES || is_stub(&text) {
            return None;
        }
        let mut stubbed = message.clone();
        stubbed
            .parts
            .retain(|part| !matches!(part, ModelContentPart::Text { .. }));
        stubbed.parts.insert(
            0,
            ModelContentPart::Text {
                text: prose_stub(text.chars().count(), &path),
            },
        );
        return Some(stubbed);
    }
    stub_message(message)
}

/// The note in place of a plain-text answer of `chars` characters saved to `path`.
pub fn prose_stub(chars: usize, path: &str) -> String {
    format!(
        "{STUB_PREFIX}your plain-text answer of {chars} characters. It was saved to `{path}`; read it there if you need it.]"
    )
}

/// The stub of one message: its large tool results and large tool-call arguments replaced by
/// a short note that says how to get the text again; `None` when nothing in it is large.
pub fn stub_message(message: &AgentModelMessage) -> Option<AgentModelMessage> {
    let mut stubbed = message.clone();
    let mut changed = false;
    for part in &mut stubbed.parts {
        match part {
            ModelContentPart::ToolResult { result }
                if result.to_model_payload().len() as u64 >= MIN_STUB_BYTES
                    && !is_stub(&result.content) =>
            {
                *result = stub_result(result);
                changed = true;
            }
            ModelContentPart::ToolCall { call }
                if json_len(&call.arguments) >= MIN_ARGUMENT_STUB_BYTES
                    && !call.arguments.is_string() =>
            {
                let bytes = json_len(&call.arguments);
                call.arguments =
                    serde_json::Value::String(format!("[arguments omitted: {bytes} bytes]"));
                changed = true;
            }
            _ => {}
        }
    }
    changed.then_some(stubbed)
}

const STUB_PREFIX: &str = "[Removed to save room: ";

/// Where the results of delegated tasks stay once their text is cut from an agent's history:
/// they are given only once, so asking for them again cannot bring them back.
const TASK_RESULTS_KEPT: &str = "These results are not given again: each task's summary stays in its file under `summaries/` (`<agent>-result.md`); list them with `workspace_list_files` and read one with `workspace_read_file`.";

fn is_stub(content: &str) -> bool {
    content.starts_with(STUB_PREFIX)
}

/// The stub of a tool result: read-file results name the file and lines to read again,
/// other reading tools the tool to call again. A delegated task's result (`agent_await`,
/// `agent_delegate`) is given only once, so its stub says where the task's summary stays
/// instead; other tools' outputs (confirmations of what was done) are only counted. The call id,
/// tool and error flag stay.
pub fn stub_result(result: &AgentToolResult) -> AgentToolResult {
    let tool = ToolName::from_any(&result.name);
    let chars = result.content.chars().count();
    let content = match tool {
        Some(ToolName::WorkspaceReadFile) => {
            let path = result
                .structured
                .get("path")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("the file");
            let lines = match (
                result
                    .structured
                    .get("startLine")
                    .and_then(serde_json::Value::as_u64),
                result
                    .structured
                    .get("endLine")
                    .and_then(serde_json::Value::as_u64),
            ) {
                (Some(start), Some(end)) => format!(", lines {start}-{end}"),
                _ => String::new(),
            };
            format!("{STUB_PREFIX}the text of `{path}`{lines}. Read it again if you need it.]")
        }
        Some(tool @ (ToolName::AgentAwait | ToolName::AgentDelegate)) => format!(
            "{STUB_PREFIX}{chars} characters of `{}` output. {}]",
            tool.model_alias(),
            TASK_RESULTS_KEPT
        ),
        Some(
            tool @ (ToolName::WorkspaceListFiles
            | ToolName::WorkspaceSearchFiles
            | ToolName::SkillList
            | ToolName::SkillSearch
            | ToolName::SkillRead
            | ToolName::AgentList),
        ) => format!(
            "{STUB_PREFIX}{chars} characters of `{}` output. Call it again if you need it.]",
            tool.model_alias()
        ),
        Some(tool) => format!(
            "{STUB_PREFIX}{chars} characters of `{}` output.]",
            tool.model_alias()
        ),
        None => format!("{STUB_PREFIX}{chars} characters of tool output.]"),
    };
    AgentToolResult {
        call_id: result.call_id.clone(),
        name: result.name.clone(),
        content,
        structured: serde_json::Value::Null,
        is_error: result.is_error,
        error_code: result.error_code.clone(),
        error_reason: result.error_reason.clone(),
        resource_refs: result.resource_refs.clone(),
    }
}

/// Whether `result`'s content is estimated at more than `max_tokens`.
pub fn exceeds(result: &AgentToolResult, max_tokens: u64) -> bool {
    tokens_of_bytes(result.content.len() as u64) > max_tokens
}

/// `result` with its content cut to its head and tail when it is estimated at more than
/// `max_tokens`: a read-file result says which lines to read next, any other how much was
/// left out and, when the whole output was saved to a workspace file (`saved_at`), where.
pub fn bound_result(
    result: &AgentToolResult,
    max_tokens: u64,
    saved_at: Option<&str>,
) -> AgentToolResult {
    if !exceeds(result, max_tokens) {
        return result.clone();
    }
    // A fifth of the budget goes to the structured part and the note.
    let keep = usize::try_from(max_tokens * 8 / 10 * BYTES_PER_TOKEN_TIMES_TEN / 10).unwrap_or(0);
    let half = keep / 2;
    let text = &result.content;
    let head = &text[..floor_char_boundary(text, half)];
    let head = head.rfind('\n').map_or(head, |end| &head[..=end]);
    let tail_start = ceil_char_boundary(text, text.len() - half);
    let tail = &text[tail_start..];
    let tail = tail.find('\n').map_or(tail, |start| &tail[start + 1..]);
    let omitted = &text[head.len()..text.len() - tail.len()];
    let note = match ToolName::from_any(&result.name) {
        Some(ToolName::WorkspaceReadFile) => format!(
            "[… {} lines left out to save room. Read them with `start_line` and `line_count`.]",
            omitted.matches('\n').count()
        ),
        tool => match saved_at {
            Some(path) => format!(
                "[… {} characters left out to save room. The whole output is in `{path}`.]",
                omitted.chars().count()
            ),
            None if matches!(tool, Some(ToolName::AgentAwait | ToolName::AgentDelegate)) => {
                format!(
                    "[… {} characters left out to save room. {TASK_RESULTS_KEPT}]",
                    omitted.chars().count()
                )
            }
            None => format!(
                "[… {} characters left out to save room. Narrow the call to see them.]",
                omitted.chars().count()
            ),
        },
    };
    let mut bounded = result.clone();
    bounded.content = format!("{head}{note}\n{tail}");
    bounded
}

/// How the summary message begins.
pub const SUMMARY_HEADER: &str = "[Summary of your earlier work, written to save room]";

/// The text an agent reads in place of the turns a summary replaced.
pub fn summary_message_text(summary: &str) -> String {
    format!("{SUMMARY_HEADER}\n{}", summary.trim())
}

/// Whether `message` is the summary message.
pub fn is_summary(message: &AgentModelMessage) -> bool {
    message.role == ModelRole::User && message.text_content().starts_with(SUMMARY_HEADER)
}

/// What the summarizing call is asked, after the transcript of the turns it replaces.
pub const SUMMARY_INSTRUCTION: &str = "The conversation above is getting too long to keep. Write a summary of it that lets you continue the work without it, taking in your earlier summary if there is one: the task, what you did and found, the files you read or wrote (exact paths), decisions made, and what remains to do. Keep names, paths and numbers exact. Answer with the summary only.";

/// The transcript of `messages` as plain text for the summarizing call, at most `max_bytes`
/// long (its middle is cut when longer).
pub fn transcript(messages: &[AgentModelMessage], max_bytes: usize) -> String {
    let mut text = String::new();
    for message in messages {
        let who = match message.role {
            _ if is_summary(message) => "Your earlier summary",
            ModelRole::System | ModelRole::Developer => "Instructions",
            ModelRole::User => "User",
            ModelRole::Assistant => "You",
            ModelRole::Tool => "Tool result",
        };
        for part in &message.parts {
            let line = match part {
                ModelContentPart::Text { text } => text
                    .strip_prefix(SUMMARY_HEADER)
                    .filter(|_| is_summary(message))
                    .unwrap_or(text)
                    .to_owned(),
                ModelContentPart::ToolCall { call } => {
                    let alias = ToolName::from_any(&call.name)
                        .map_or(call.name.as_str(), |t| t.model_alias());
                    format!("call `{alias}` {}", call.arguments)
                }
                ModelContentPart::ToolResult { result } => result.content.clone(),
                _ => continue,
            };
            if line.trim().is_empty() {
                continue;
            }
            text.push_str(who);
            text.push_str(": ");
            text.push_str(line.trim());
            text.push_str("\n\n");
        }
    }
    cut_middle(&text, max_bytes)
}

/// `text` with its middle replaced by a marker when it is longer than `max_bytes`.
pub fn cut_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let half = max_bytes / 2;
    let head_end = floor_char_boundary(text, half);
    let tail_start = ceil_char_boundary(text, text.len() - half);
    let omitted = text[head_end..tail_start].chars().count();
    format!(
        "{}\n[… {omitted} characters omitted …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while index < text.len() && !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::AgentToolCall;
    use serde_json::json;

    fn read_result(call: &str, text: &str) -> AgentModelMessage {
        AgentModelMessage::tool_result(AgentToolResult {
            call_id: call.into(),
            name: "workspace.read_file".into(),
            content: text.into(),
            structured: json!({"path": "scratch/notes.md", "startLine": 1, "endLine": 40}),
            is_error: false,
            error_code: None,
            error_reason: None,
            resource_refs: Vec::new(),
        })
    }

    /// The line of a cut result that says what was left out.
    fn cut_note(content: &str) -> &str {
        content
            .lines()
            .find(|line| line.starts_with("[…"))
            .unwrap_or_default()
    }

    fn call(id: &str) -> AgentModelMessage {
        AgentModelMessage::assistant(vec![ModelContentPart::ToolCall {
            call: AgentToolCall::new(
                id,
                "workspace.read_file",
                json!({"path": "scratch/notes.md"}),
            ),
        }])
    }

    /// The task, a plain-text answer of 1080 characters, and the drift reminder that followed
    /// it (`reminder` after its prefix).
    fn history_with_a_plain_answer(reminder: &str) -> Vec<AgentModelMessage> {
        let mut messages = history(0);
        messages.push(AgentModelMessage::text(
            ModelRole::Assistant,
            "Once upon a time. ".repeat(60),
        ));
        messages.push(AgentModelMessage::text(
            ModelRole::User,
            format!("{DRIFT_REMINDER_PREFIX}{reminder}"),
        ));
        messages
    }

    fn history(rounds: usize) -> Vec<AgentModelMessage> {
        let mut messages = vec![
            AgentModelMessage::text(ModelRole::System, "You write."),
            AgentModelMessage::text(ModelRole::User, "Write a story."),
        ];
        for round in 0..rounds {
            messages.push(call(&format!("c{round}")));
            messages.push(read_result(&format!("c{round}"), &"word ".repeat(400)));
        }
        messages
    }

    #[test]
    fn known_windows_match_the_longest_prefix_and_provider_prefixed_ids() {
        assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_context_window("openai/gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_context_window("local"), None);
    }

    #[test]
    fn the_budget_keeps_the_output_limit_or_an_eighth_for_the_answer() {
        let small = WindowBudget::new(4096, None);
        assert_eq!(small.output_reserve_tokens, 512);
        assert_eq!(small.input_budget_tokens, 3584);
        assert_eq!(WindowBudget::new(1024, None).output_reserve_tokens, 256);
        assert_eq!(WindowBudget::new(200_000, None).output_reserve_tokens, 8192);
        assert_eq!(
            WindowBudget::new(200_000, Some(1000)).output_reserve_tokens,
            1000
        );
        assert_eq!(WindowBudget::new(300, None).output_reserve_tokens, 150);
        // A set limit is what the answer keeps, small or large.
        assert_eq!(
            WindowBudget::new(4096, Some(160)).output_reserve_tokens,
            160
        );
        assert_eq!(
            WindowBudget::new(4096, Some(1500)).output_reserve_tokens,
            1500
        );
        assert_eq!(
            WindowBudget::new(4096, Some(8192)).output_reserve_tokens,
            2048
        );
    }

    #[test]
    fn calibration_scales_the_estimate_within_bounds() {
        let mut calibration = Calibration::default();
        assert_eq!(calibration.apply(1000), 1000);
        calibration.observe(1000, 1500);
        assert_eq!(calibration.apply(1000), 1500);
        assert_eq!(calibration.unapply(1500), 1000);
        calibration.observe(1000, 100_000);
        assert_eq!(calibration.per_mille(), 4000);
        calibration.observe(0, 5);
        assert_eq!(calibration.per_mille(), 4000);
    }

    #[test]
    fn stubs_go_oldest_first_and_spare_the_opening_and_the_latest_turn() {
        let messages = history(4);
        let total = request_tokens(&messages, 0);
        let chosen = plan_trim(&messages, 2, 0, total - 100).stubbed;
        assert_eq!(chosen, vec![3]);
        let all = plan_trim(&messages, 2, 0, 0).stubbed;
        // The opening (0, 1) and the latest turn (8, 9) are never stubbed.
        assert_eq!(all, vec![3, 5, 7]);
        let mut trimmed = messages.clone();
        apply_stubs(&mut trimmed, &all);
        assert!(request_tokens(&trimmed, 0) < total / 2);
        // A stub is never stubbed again.
        assert!(plan_trim(&trimmed, 2, 0, 0).is_empty());
    }

    #[test]
    fn nothing_is_stubbed_when_the_history_fits() {
        let messages = history(3);
        assert!(plan_trim(&messages, 2, 0, u64::MAX).is_empty());
    }

    #[test]
    fn stub_texts_say_how_to_get_the_text_again() {
        let ModelContentPart::ToolResult { result } = &read_result("c", &"x".repeat(900)).parts[0]
        else {
            unreachable!()
        };
        let read = stub_result(result);
        let mut other = result.clone();
        other.name = "workspace.search_files".into();
        let other = stub_result(&other);
        let mut waited = result.clone();
        waited.name = "agent.await".into();
        let waited = stub_result(&waited);
        let mut written = result.clone();
        written.name = "workspace.write_file".into();
        let written = stub_result(&written);
        insta::assert_snapshot!(format!("{}\n{}\n{}\n{}", read.content, other.content, waited.content, written.content), @r"
        [Removed to save room: the text of `scratch/notes.md`, lines 1-40. Read it again if you need it.]
        [Removed to save room: 900 characters of `workspace_search_files` output. Call it again if you need it.]
        [Removed to save room: 900 characters of `agent_await` output. These results are not given again: each task's summary stays in its file under `summaries/` (`<agent>-result.md`); list them with `workspace_list_files` and read one with `workspace_read_file`.]
        [Removed to save room: 900 characters of `workspace_write_file` output.]
        ");
        assert!(!waited.content.contains("again if"), "{}", waited.content);
        let mut delegated = result.clone();
        delegated.name = "agent.delegate".into();
        let delegated = stub_result(&delegated).content;
        insta::assert_snapshot!(delegated, @"[Removed to save room: 900 characters of `agent_delegate` output. These results are not given again: each task's summary stays in its file under `summaries/` (`<agent>-result.md`); list them with `workspace_list_files` and read one with `workspace_read_file`.]");
    }

    #[test]
    fn a_cut_task_result_says_where_the_summaries_stay_never_to_call_again() {
        let text: String = (1..=400).map(|n| format!("finding {n}\n")).collect();
        let ModelContentPart::ToolResult { result } = &read_result("c", &text).parts[0] else {
            unreachable!()
        };
        let mut waited = result.clone();
        waited.name = "agent.await".into();
        let bounded = bound_result(&waited, 200, None);
        let note = cut_note(&bounded.content);
        insta::assert_snapshot!(note, @"[… 4139 characters left out to save room. These results are not given again: each task's summary stays in its file under `summaries/` (`<agent>-result.md`); list them with `workspace_list_files` and read one with `workspace_read_file`.]");
        assert!(!bounded.content.contains("Narrow the call"));
    }

    #[test]
    fn a_large_result_keeps_its_head_and_tail_on_line_boundaries() {
        let text: String = (1..=400).map(|n| format!("{n:>4}| line {n}\n")).collect();
        let ModelContentPart::ToolResult { result } = &read_result("c", &text).parts[0] else {
            unreachable!()
        };
        assert_eq!(&bound_result(result, 100_000, None), result);
        let bounded = bound_result(result, 200, None);
        assert!(tokens_of_bytes(bounded.content.len() as u64) <= 200);
        assert!(bounded.content.starts_with("   1| line 1\n"));
        assert!(bounded.content.ends_with(" 400| line 400\n"));
        let note = cut_note(&bounded.content);
        insta::assert_snapshot!(note, @"[… 362 lines left out to save room. Read them with `start_line` and `line_count`.]");
        let mut listed = result.clone();
        listed.name = "workspace.search_files".into();
        let saved = bound_result(&listed, 200, Some("scratch/tool-output/x.md"));
        let note = cut_note(&saved.content);
        insta::assert_snapshot!(note, @"[… 5351 characters left out to save room. The whole output is in `scratch/tool-output/x.md`.]");
    }

    #[test]
    fn what_the_model_reads_of_a_summary() {
        insta::assert_snapshot!(
            format!("{SUMMARY_INSTRUCTION}\n---\n{}", summary_message_text("  Wrote the outline.\n")),
            @r"
        The conversation above is getting too long to keep. Write a summary of it that lets you continue the work without it, taking in your earlier summary if there is one: the task, what you did and found, the files you read or wrote (exact paths), decisions made, and what remains to do. Keep names, paths and numbers exact. Answer with the summary only.
        ---
        [Summary of your earlier work, written to save room]
        Wrote the outline.
        "
        );
    }

    #[test]
    fn a_saved_plain_text_answer_becomes_a_stub_naming_its_file() {
        let mut messages = history_with_a_plain_answer(
            "1] Plain text is not delivered to anyone. Your text was saved to `output/direct_output.md`; you can refer to that file.",
        );
        messages.push(call("c"));
        let stub = stub_at(&messages, 2).map(|m| m.text_content());
        insta::assert_snapshot!(stub.unwrap_or_default(), @"[Removed to save room: your plain-text answer of 1080 characters. It was saved to `output/direct_output.md`; read it there if you need it.]");
        // The reminder is no answer: it is never stubbed.
        assert!(stub_at(&messages, 3).is_none());
    }

    #[test]
    fn a_trim_removes_settled_turns_first_then_stubs_a_saved_answer() {
        let slip = |id: &str| {
            let mut result = read_result(id, "no such tool");
            if let ModelContentPart::ToolResult { result } = &mut result.parts[0] {
                result.is_error = true;
                result.error_code = Some("model.unknown_tool_call".into());
            }
            result
        };
        let mut messages =
            history_with_a_plain_answer("1] Your text was saved to `output/direct_output.md`.");
        messages.extend([call("s1"), slip("s1"), call("s2"), slip("s2")]);
        // Only slips since the plain-text answer: nothing is settled, the answer is stubbed.
        let plan = plan_trim(&messages, 2, 0, 0);
        assert_eq!(
            plan,
            TrimPlan {
                removed: vec![],
                stubbed: vec![2]
            }
        );
        // A call ran: the plain-text turn and the slip before the latest turn leave whole.
        messages.extend([call("ok"), read_result("ok", "fine")]);
        let plan = plan_trim(&messages, 2, 0, 0);
        assert_eq!(plan.removed, vec![2, 3, 4, 5, 6, 7]);
        let mut trimmed = messages.clone();
        apply_trim(&mut trimmed, &plan);
        assert_eq!(trimmed.len(), 4);
        assert_eq!(trimmed[2], messages[8]);
        // Nothing is taken while the history fits.
        assert!(plan_trim(&messages, 2, 0, u64::MAX).is_empty());
    }

    #[test]
    fn a_later_summary_takes_in_the_earlier_one() {
        let messages = vec![
            AgentModelMessage::text(ModelRole::User, summary_message_text("Wrote the outline.")),
            AgentModelMessage::text(ModelRole::Assistant, "Now the ending."),
        ];
        assert!(is_summary(&messages[0]));
        insta::assert_snapshot!(transcript(&messages, 10_000), @r"
        Your earlier summary: Wrote the outline.

        You: Now the ending.
        ");
    }

    #[test]
    fn the_transcript_cuts_its_middle_on_char_boundaries() {
        let text = "é".repeat(100);
        let cut = cut_middle(&text, 51);
        assert!(cut.starts_with('é'));
        assert!(cut.contains("characters omitted"));
        let transcript = transcript(&history(1), 10_000);
        insta::assert_snapshot!(transcript.lines().next().unwrap_or_default(), @"Instructions: You write.");
    }
}
