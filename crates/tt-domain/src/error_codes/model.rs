//! The `model.*` codes: what the model provider adapters (HTTP, scripted, cassette) report, and
//! the model's own slips and protocol drift.

super::error_codes! {
    MODEL_CALL_DEADLINE_EXCEEDED = "model.call_deadline_exceeded", Provider,
        "A model call, its retries and waits included, outlasted its deadline: the profile's `run.modelRetry.deadlineSeconds`, else the connection's call deadline, else 300 s.";
    MODEL_CASSETTE_INVALID = "model.cassette_invalid", Provider,
        "A model cassette file is malformed.";
    MODEL_CASSETTE_IO_FAILED = "model.cassette_io_failed", Provider,
        "A model cassette file could not be read or written.";
    MODEL_CASSETTE_MISMATCH = "model.cassette_mismatch", Provider,
        "A replayed run asked the model something the cassette did not record (the message has a field diff).";
    MODEL_CONTEXT_OVERFLOW = "model.context_overflow", Provider,
        "The request does not fit the model's context window.";
    MODEL_CONTEXT_WINDOW_TOO_SMALL = "model.context_window_too_small", Configuration,
        "The system prompt, the tools and the request alone do not fit the model's context window with room for the answer and a summary; checked before the first request.";
    MODEL_ERROR = "model.error", Internal,
        "Telemetry only: the span status of a failed model call whose event carried no code.";
    MODEL_FALLBACKS_EXHAUSTED = "model.fallbacks_exhausted", ProviderTransient,
        "The agent's model and every fallback binding of its profile (`model.fallbacks`) failed; the message names the last failure.";
    MODEL_INVALID_TOOL_CALL = "model.invalid_tool_call", ModelSlip,
        "The model sent tool-call arguments that are not one JSON object within the size limit.";
    MODEL_PROVIDER_ERROR = "model.provider_error", Provider,
        "The model provider failed in a way of no known kind.";
    MODEL_PROVIDER_RATE_LIMITED = "model.provider_rate_limited", ProviderTransient,
        "The model provider rate-limited the call (HTTP 429 or equivalent).";
    MODEL_REQUEST_REJECTED = "model.request_rejected", Provider,
        "The model provider refused the request (a 4xx other than 429).";
    MODEL_RESPONSE_TOO_LARGE = "model.response_too_large", Provider,
        "The model provider's reply was larger than the runtime accepts.";
    MODEL_SCRIPT_EXHAUSTED = "model.script_exhausted", Provider,
        "The scripted model has no more turns for the agent.";
    MODEL_SCRIPT_INVALID = "model.script_invalid", Configuration,
        "A scripted-model script is malformed.";
    MODEL_SCRIPT_UNREADABLE = "model.script_unreadable", Configuration,
        "A scripted-model script file could not be read.";
    MODEL_SETTING_UNSUPPORTED = "model.setting_unsupported", Provider,
        "A generation setting this provider cannot honour; refused before anything is sent.";
    MODEL_TIMEOUT = "model.timeout", ProviderTransient,
        "One attempt of a model call outlasted the connection's request, header or idle timeout; retried.";
    MODEL_TOO_MANY_TOOL_CALLS = "model.too_many_tool_calls", ModelSlip,
        "The model's reply asked for more tool calls than the agent may make in all; none ran.";
    MODEL_TOOL_CALL_REQUIRED = "model.tool_call_required", UserRetryable,
        "The model answered with text where the agent had to call a tool to end.";
    MODEL_TRANSIENT = "model.transient", ProviderTransient,
        "The model provider failed transiently (5xx, dropped connection, unreadable stream).";
    MODEL_UNKNOWN_TOOL_CALL = "model.unknown_tool_call", ModelSlip,
        "The model called a tool that does not exist.";
    MODEL_UPSTREAM_INVALID_RESPONSE = "model.upstream_invalid_response", ProviderTransient,
        "The model provider's reply could not be decoded.";
}
