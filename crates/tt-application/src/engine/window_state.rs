//! What one agent has learned about its model's context window (`WindowState`). A module of
//! its own, beside `context_fit` rather than inside it, so that an agent's loop state
//! (`engine::invocation`) can hold it without using the fitting code, which works on that loop
//! state (tidy's `module-cycle`, T11).

use tt_domain::context_window::{self as window, Calibration, request_tokens};
use tt_domain::model::AgentModelMessage;
use tt_ports::ModelError;

/// What an agent has learned about its model's window.
#[derive(Debug, Clone, Default)]
pub(crate) struct WindowState {
    pub(super) calibration: Calibration,
    /// The window a provider's refusal named, over the configured one.
    pub(super) learned_window: Option<u64>,
    /// The uncalibrated estimate of the request last sent, for calibrating with its usage.
    pub(super) last_estimate: Option<u64>,
    /// How many of the history's first messages are its opening (system prompt and request),
    /// which trimming and compaction never touch; set when the agent's loop starts
    /// ([`WindowState::start`]).
    pub(crate) opening: usize,
    /// The index of the agent's request when it comes after the opening (a conversation's
    /// earlier answers come before it): compaction keeps it whole, ahead of the summary.
    pub(crate) request: Option<usize>,
}

impl WindowState {
    /// Notes where the opening and the request of the history an agent starts with are.
    pub(crate) fn start(&mut self, messages: &[AgentModelMessage]) {
        self.opening = window::opening_len(messages);
        self.request = messages
            .iter()
            .rposition(|message| message.role == tt_domain::model::ModelRole::User)
            .filter(|index| *index >= self.opening);
    }

    /// The messages never summarized: the opening, and the request when it comes later.
    pub(crate) fn protected<'m>(
        &self,
        messages: &'m [AgentModelMessage],
    ) -> impl Iterator<Item = &'m AgentModelMessage> {
        let opening = self.opening.min(messages.len());
        messages[..opening]
            .iter()
            .chain(self.request.and_then(|index| messages.get(index)))
    }

    /// Notes the history of a request as sent (a replayed one too), so its usage calibrates;
    /// only while a window is known (`configured`, or learned), as [`fit_request`] does.
    pub(crate) fn note_sent(
        &mut self,
        configured: Option<u64>,
        messages: &[AgentModelMessage],
        tools: &[tt_domain::tool::AgentToolSpec],
    ) {
        self.last_estimate = self
            .learned_window
            .or(configured)
            .map(|_| request_tokens(messages, window::tools_tokens(tools)));
    }

    /// Notes the size of a request a provider refused, when it was not measured.
    pub(crate) fn note_refused(
        &mut self,
        messages: &[AgentModelMessage],
        tools: &[tt_domain::tool::AgentToolSpec],
    ) {
        if self.last_estimate.is_none() {
            self.last_estimate = Some(request_tokens(messages, window::tools_tokens(tools)));
        }
    }

    /// Learns from a provider's answer to the request last sent.
    pub(crate) fn observe_usage(&mut self, usage: Option<&tt_domain::model::ModelUsage>) {
        if let (Some(estimate), Some(usage)) = (self.last_estimate.take(), usage) {
            self.calibration.observe(estimate, usage.input_tokens);
        }
    }

    /// Learns from a provider's refusal of a request estimated at `estimate` tokens: its
    /// window, and how it counts (when it said the request's size).
    pub(crate) fn observe_refusal(&mut self, error: &ModelError, configured: Option<u64>) {
        let ModelError::ContextOverflow {
            prompt_tokens,
            window_tokens,
            ..
        } = error
        else {
            return;
        };
        let estimate = self.last_estimate.take();
        if let (Some(estimate), Some(prompt)) = (estimate, prompt_tokens) {
            self.calibration.observe(estimate, *prompt);
        }
        self.learned_window = match (window_tokens, configured) {
            (Some(window), _) => Some(*window),
            // No figure: assume the window is a little smaller than what was sent.
            (None, Some(window)) => Some(window / 10 * 9),
            (None, None) => prompt_tokens
                .or(estimate.map(|e| self.calibration.apply(e)))
                .map(|tokens| tokens / 10 * 9),
        };
    }
}
