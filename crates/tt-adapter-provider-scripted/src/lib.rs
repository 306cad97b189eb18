//! Deterministic model providers for demos and tests: [`ScriptedProvider`] plays a JSON
//! script, [`ScriptedScenarios`] chooses one of several scripts per run, and [`FnProvider`]
//! answers with a closure over the request (for an embedder's unit tests). The script format
//! and the tools' argument formats are documented for embedders in `docs/scripted-provider.md`.
//!
//! # Script format
//!
//! ```json
//! {
//!   "schemaVersion": 1,
//!   "description": "optional free text",
//!   "agents": {
//!     "default-writer": [
//!       { "text": "I'll draft the scene first.",
//!         "toolCalls": [
//!           { "id": "call_w1", "name": "workspace_write_file",
//!             "arguments": { "path": "output/main.md", "content": "# Scene\n" } } ] },
//!       { "error": { "kind": "rateLimited", "message": "slow down", "retryAfterMs": 10 } },
//!       { "error": { "kind": "transient", "message": "502" } },
//!       { "toolCalls": [ { "id": "call_c1", "name": "workspace_commit", "arguments": {} } ],
//!         "delayMs": 250 },
//!       { "toolCalls": [ { "id": "call_f1", "name": "workspace_finish" } ] }
//!     ],
//!     "scene-critic": [
//!       { "toolCalls": [ { "id": "call_r1", "name": "task_return",
//!                          "arguments": { "summary": "Looks good." } } ] }
//!     ]
//!   }
//! }
//! ```
//!
//! - `agents` maps an agent profile id to its entries, in order. An entry is either an
//!   **answer** (`text` and/or `toolCalls`; use `"text": ""` for an empty answer) or an
//!   **injected error** (`error`, alone). Any entry may add `delayMs`: the call first sleeps that
//!   long on tokio time, and a cancel during the sleep returns `ModelError::Cancelled`.
//! - Tool calls: `id` and `name` are sent verbatim (use the model-facing names such as
//!   `workspace_write_file`); `arguments` defaults to `{}`. Ids must be unique within an entry.
//! - Error kinds: `rateLimited` (`retryAfterMs`), `transient`, `rejected` (`status`) and
//!   `invalidResponse` (code `model.upstream_invalid_response`); `message` is optional.
//!   Unknown keys anywhere are rejected, with the agent and entry named in the error.
//!
//! # Which entry is played
//!
//! Nothing is consumed from a global queue; each call is answered from what its request holds:
//!
//! - The turn index is the request's 1-based `round` within its invocation minus one (a
//!   conversation's own history may hold assistant messages, so they are not counted), and
//!   answer entries are numbered by it per agent (`request.agent_profile_id`). Concurrent agents
//!   therefore follow their own scripts, a retried call replays the same turn, and every new
//!   session of an agent (for example repeated delegations to it) starts from its first turn.
//! - Error entries belong to the answer that follows them. For each session
//!   (`request.session.session_id`) and turn index, the provider counts the errors it already
//!   emitted: a call emits the next unused error of its turn, and once they are all used up the
//!   turn's answer is played. So an error fires once per session and the retry proceeds. An
//!   error counts as used as soon as a call picks it, even if that call is then cancelled.
//!   `close_session` forgets the session's counters.
//! - When an agent has no script, or no answer for the requested turn, the call fails with
//!   `ModelError::Unavailable` code `model.script_exhausted`, naming the agent and the 1-based
//!   turn number.
//!
//! Responses carry `model: "scripted"`, `finish_reason` `tool_calls` or `stop`, the entry as
//! `raw_response`, and usage counted as characters / 4 (input: the request's messages as JSON;
//! output: text plus tool names and arguments).
//!
//! ```
//! use tt_adapter_provider_scripted::ScriptedProvider;
//!
//! let provider = ScriptedProvider::from_json_str(
//!     r#"{"schemaVersion": 1, "agents": {"default-writer": [{"text": "Hello."}]}}"#,
//! )?;
//! assert_eq!(provider.turn_count("default-writer"), 1);
//! # Ok::<(), tt_adapter_provider_scripted::ScriptError>(())
//! ```

mod closure;
mod provider;
mod scenarios;
mod script;

pub use closure::{FN_PROVIDER_NAME, FnProvider, ModelReply};
pub use provider::{SCRIPT_EXHAUSTED_CODE, SCRIPTED_PROVIDER_NAME, ScriptHold, ScriptedProvider};
pub use scenarios::ScriptedScenarios;
pub use script::{
    SCRIPT_SCHEMA_VERSION, Script, ScriptError, ScriptedErrorEntry, ScriptedFailure,
    ScriptedResponse, ScriptedToolCall, ScriptedTurn,
};
