//! The `agent.*` codes: runs, agents, delegation, host bridges, profiles and storage, plus the
//! host-facing codes a model failure surfaces under.

super::error_codes! {
    AGENT_ALREADY_EXISTS = "agent.already_exists", Storage,
        "The store already holds a record that was to be created new.";
    AGENT_APPROVAL_INVALID = "agent.approval_invalid", HostContract,
        "The host's answer to a tool-call approval is refused (a denial message or edited arguments over their limits, or not fitting the call).";
    AGENT_APPROVAL_NOT_FOUND = "agent.approval_not_found", HostContract,
        "No tool-call approval with that id is pending in the run.";
    AGENT_AWAIT_RESULT_INVALID = "agent.await_result_invalid", Storage,
        "A stored agent result could not be read back for `agent.await`.";
    AGENT_AWAIT_TASK_NOT_FOUND = "agent.await_task_not_found", ToolRefusal,
        "`agent.await` named a task this agent did not delegate.";
    AGENT_CANCEL_TASK_ALREADY_FINISHED = "agent.cancel_task_already_finished", ToolRefusal,
        "`agent.cancel_task` named a task that has already ended.";
    AGENT_CANCEL_TASK_NOT_FOUND = "agent.cancel_task_not_found", ToolRefusal,
        "`agent.cancel_task` named no task of the run.";
    AGENT_CANCEL_TASK_NOT_YOURS = "agent.cancel_task_not_yours", ToolRefusal,
        "`agent.cancel_task` named a task another agent delegated.";
    AGENT_CANCELLED = "agent.cancelled", Cancelled,
        "The run or the agent was cancelled (by the host, by its caller, by `workspace.finish` or by shutdown).";
    AGENT_CHAT_COMMIT_BRIDGE_NOT_HOST_API = "agent.chat_commit_bridge_not_host_api", HostContract,
        "A chat-commit call reached a runtime whose commit bridge is not the host API's.";
    AGENT_CHAT_COMMIT_CHANNEL_CLOSED = "agent.chat_commit_channel_closed", HostBridge,
        "The host's chat-commit bridge went away before it answered.";
    AGENT_CHAT_COMMIT_FAILED = "agent.chat_commit_failed", HostBridge,
        "The host refused or failed to publish a `workspace.commit`.";
    AGENT_CHAT_COMMIT_ID_COLLISION = "agent.chat_commit_id_collision", Internal,
        "Reason in the message of a chat-commit bridge failure: a commit id was asked for while one with that id was pending.";
    AGENT_CHAT_COMMIT_NOT_PENDING = "agent.chat_commit_not_pending", HostContract,
        "No chat commit with that id is waiting for an answer (answered already, or never asked).";
    AGENT_CHAT_COMMIT_RESOLVE_INVALID = "agent.chat_commit_resolve_invalid", HostContract,
        "The host's answer to a chat commit is malformed.";
    AGENT_CHAT_COMMIT_RUN_MISMATCH = "agent.chat_commit_run_mismatch", HostContract,
        "The chat commit answered belongs to another run.";
    AGENT_CHILD_FINISH_DENIED = "agent.child_finish_denied", ToolRefusal,
        "A delegated agent called `workspace.finish`; it ends with `task.return` instead.";
    AGENT_CHILD_HANDOFF_DENIED = "agent.child_handoff_denied", RoleViolation,
        "A delegated agent handed off; only the foreground agent may.";
    AGENT_CHILD_INVOCATION_MISSING_RETURN = "agent.child_invocation_missing_return", RoleViolation,
        "A delegated agent ended without calling `task.return`.";
    AGENT_CHILD_PROMPT_ASSEMBLY_FROZEN_SNAPSHOT_REQUIRED = "agent.child_prompt_assembly_frozen_snapshot_required", Storage,
        "A delegated agent's prompt is assembled by the host, but the run has no frozen input snapshot to assemble from.";
    AGENT_COMMIT_HANDLER_REQUIRES_HOST_BRIDGE = "agent.commit_handler_requires_host_bridge", Configuration,
        "A commit handler was given to a runtime whose commit bridge is not the host API's.";
    AGENT_CONNECTION_INVALID = "agent.connection_invalid", HostContract,
        "A connection document the host saves is not one (not a JSON object of the connection fields, an unknown field, a bad provider spec or setting).";
    AGENT_CONNECTION_NAME_REGISTERED = "agent.connection_name_registered", HostContract,
        "The host saved or removed a stored connection under a name the runtime's builder registered, which would hide the stored one.";
    AGENT_CONTEXT_POLICY_MISMATCH = "agent.context_policy_mismatch", HostBridge,
        "The host's prompt assembly answered under a context policy other than the profile's.";
    AGENT_CONTEXT_POLICY_REQUIRED = "agent.context_policy_required", HostBridge,
        "The prompt snapshot a host assembly starts from has no context policy.";
    AGENT_DELEGATION_BUDGET_EXHAUSTED = "agent.delegation_budget_exhausted", ToolRefusal,
        "The caller has delegated as many tasks as its profile allows in one run.";
    AGENT_DELEGATION_POLICY_DENIED = "agent.delegation_policy_denied", ToolRefusal,
        "Delegation policy forbids this `agent.delegate`; the message starts with the reason's code.";
    AGENT_DUPLICATE_TASK_RECORD = "agent.duplicate_task_record", Storage,
        "The store holds two task records for one delegated agent.";
    AGENT_FOREGROUND_COMMIT_REQUIRED = "agent.foreground_commit_required", ToolRefusal,
        "A foreground agent called `workspace.finish` before publishing anything with `workspace.commit`.";
    AGENT_FOREGROUND_COMMIT_UNAVAILABLE = "agent.foreground_commit_unavailable", Configuration,
        "A directly runnable foreground profile does not show `workspace.commit`.";
    AGENT_FORK_POINT_INVALID = "agent.fork_point_invalid", HostContract,
        "The fork point names no seq, agent or round of the source run that a branch can start at.";
    AGENT_FORK_SOURCE_UNAVAILABLE = "agent.fork_source_unavailable", Storage,
        "The store lacks something of the source run that the branch needs (a journal event, a file version).";
    AGENT_GENERATION_SETTINGS_INVALID = "agent.generation_settings_invalid", Configuration,
        "A generation setting (temperature, token limit, ...) is out of range or malformed.";
    AGENT_GUIDANCE_EMPTY = "agent.guidance_empty", HostContract,
        "Guidance sent to an agent is blank.";
    AGENT_GUIDANCE_MAILBOX_CLOSED = "agent.guidance_mailbox_closed", HostContract,
        "The run no longer accepts guidance: it has finished, failed or been cancelled.";
    AGENT_GUIDANCE_PENDING_TOO_LARGE = "agent.guidance_pending_too_large", HostContract,
        "The guidance waiting for the agent would pass its total size limit.";
    AGENT_GUIDANCE_QUEUE_FULL = "agent.guidance_queue_full", HostContract,
        "Too many guidance messages are already waiting for the agent.";
    AGENT_GUIDANCE_RUN_NOT_OWNED = "agent.guidance_run_not_owned", HostContract,
        "Guidance was sent for a run this runtime is not running.";
    AGENT_GUIDANCE_TOO_LARGE = "agent.guidance_too_large", HostContract,
        "One guidance message is over the size limit.";
    AGENT_HANDOFF_DEPTH_EXHAUSTED = "agent.handoff_depth_exhausted", ToolRefusal,
        "The run has handed off as many times as the caller's profile allows.";
    AGENT_HANDOFF_PENDING_TASKS = "agent.handoff_pending_tasks", ToolRefusal,
        "`agent.handoff` while delegated tasks still run; await or cancel them first.";
    AGENT_HANDOFF_POLICY_DENIED = "agent.handoff_policy_denied", ToolRefusal,
        "Handoff policy forbids this `agent.handoff`; the message starts with the reason's code.";
    AGENT_INACTIVITY_TIMEOUT = "agent.inactivity_timeout", UserRetryable,
        "The agent showed no activity (no model output, tool result or event) for its watchdog's warning and stop limits (`limits.watchdog`).";
    AGENT_INTERNAL_ERROR = "agent.internal_error", Internal,
        "A failure with no finer code: a broken invariant or a store error of no known kind.";
    AGENT_INVALID_CONTEXT_POLICY_SNAPSHOT = "agent.invalid_context_policy_snapshot", Storage,
        "A stored prompt-assembly context policy could not be read back.";
    AGENT_INVOCATION_DEADLINE_EXCEEDED = "agent.invocation_deadline_exceeded", UserRetryable,
        "The agent ran past its profile's time limit.";
    AGENT_INVOCATION_STATUS_TRANSITION_INVALID = "agent.invocation_status_transition_invalid", Internal,
        "An agent's status was to change in a way its state machine forbids.";
    AGENT_JOURNAL_DAMAGED = "agent.journal_damaged", Storage,
        "The run's journal is missing events (a seq gap); readers print what it holds, then report this (`tt-agent events`, `check`, `graph`).";
    AGENT_JOURNAL_EMPTY = "agent.journal_empty", Storage,
        "A damage finding: the run has a record but its journal holds no event.";
    AGENT_JOURNAL_END_MISSING = "agent.journal_end_missing", Storage,
        "A damage finding: the run's record says it ended, but its journal does not end with that end (it stops earlier, or shows the run still working).";
    AGENT_MAX_HANDOFF_DEPTH_EXHAUSTED = "agent.max_handoff_depth_exhausted", ToolRefusal,
        "Reason in the message of `agent.handoff_depth_exhausted`: the profile's handoff depth is used up.";
    AGENT_MAX_INVOCATIONS_PER_RUN_EXHAUSTED = "agent.max_invocations_per_run_exhausted", ToolRefusal,
        "Reason in the message of `agent.delegation_budget_exhausted`: the profile's tasks per run are used up.";
    AGENT_MAX_TOOL_ROUNDS_EXCEEDED = "agent.max_tool_rounds_exceeded", UserRetryable,
        "The agent used all its model rounds without ending.";
    AGENT_MODEL_CONNECTION_NOT_FOUND = "agent.model_connection_not_found", Configuration,
        "A model binding names a connection the runtime was not given.";
    AGENT_NO_CHILD_TASKS = "agent.no_child_tasks", ToolRefusal,
        "`agent.await` selected no delegated tasks to wait for.";
    AGENT_NOT_FOUND = "agent.not_found", HostContract,
        "No run, agent or stored record with that id exists.";
    AGENT_PERMISSION_DENIED = "agent.permission_denied", Provider,
        "The model provider answered 403: the key may not use this model or endpoint (`details.modelCode` has the finer code).";
    AGENT_PERSIST_BASE_STATE_MISMATCH = "agent.persist_base_state_mismatch", HostContract,
        "The run request's persistent base state id is not a valid state id.";
    AGENT_PERSISTENT_DELETE_UNSUPPORTED = "agent.persistent_delete_unsupported", Storage,
        "Promoting `persist/` would delete a file of its base state, which promotion cannot do.";
    AGENT_PERSISTENT_STATE_CONFLICT = "agent.persistent_state_conflict", HostContract,
        "Another run of the conversation saved `persist/` first (this run started from an older state, or lost the race to finish); its changes stay in its own workspace.";
    AGENT_PERSISTENT_STATE_EXISTS = "agent.persistent_state_exists", Storage,
        "The persistent state `persist/` was to be promoted to already exists (it was promoted before).";
    AGENT_PERSISTENT_STATE_MANIFEST_MISMATCH = "agent.persistent_state_manifest_mismatch", Storage,
        "A stored persistent state's manifest names another state.";
    AGENT_PERSISTENT_STATE_MESSAGE_MISSING = "agent.persistent_state_message_missing", HostBridge,
        "The host's persistent-state metadata names no chat message.";
    AGENT_PERSISTENT_STATE_METADATA_UPDATE_CHANNEL_CLOSED = "agent.persistent_state_metadata_update_channel_closed", HostBridge,
        "The host's persistent-state metadata bridge went away before it answered.";
    AGENT_PERSISTENT_STATE_METADATA_UPDATE_FAILED = "agent.persistent_state_metadata_update_failed", HostBridge,
        "The host refused or failed a persistent-state metadata update.";
    AGENT_PERSISTENT_STATE_METADATA_UPDATE_ID_COLLISION = "agent.persistent_state_metadata_update_id_collision", Internal,
        "Reason in the message of a metadata bridge failure: an update id was asked for while one with that id was pending.";
    AGENT_PERSISTENT_STATE_METADATA_UPDATE_NOT_PENDING = "agent.persistent_state_metadata_update_not_pending", HostContract,
        "No persistent-state metadata update with that id is waiting for an answer.";
    AGENT_PERSISTENT_STATE_METADATA_UPDATE_RUN_MISMATCH = "agent.persistent_state_metadata_update_run_mismatch", HostContract,
        "The metadata update answered belongs to another run.";
    AGENT_PERSISTENT_STATE_ROOT_INVALID = "agent.persistent_state_root_invalid", HostContract,
        "A persistent state id is not a valid storage name.";
    AGENT_PERSISTENT_STATE_ROOT_MISSING = "agent.persistent_state_root_missing", Storage,
        "The persistent state a run starts from is not in the store.";
    AGENT_PERSISTENT_STATE_WORKSPACE_MISMATCH = "agent.persistent_state_workspace_mismatch", Storage,
        "A stored persistent state belongs to another workspace.";
    AGENT_PLAN_MODE_UNSUPPORTED = "agent.plan_mode_unsupported", Configuration,
        "A profile asks for a plan mode this runtime does not support.";
    AGENT_PRESET_TEMPLATE_INVALID = "agent.preset_template_invalid", HostContract,
        "A preset template the host saves is not one: a JSON object of `schemaVersion` and `messages`, each `{role, content}` or `{insert: \"history\"}`.";
    AGENT_PROFILE_AGENT_TOOL_REQUIRES_POLICY = "agent.profile_agent_tool_requires_policy", Configuration,
        "A profile shows an `agent.*` tool without the delegation or handoff policy it needs.";
    AGENT_PROFILE_ALLOWED_CALLERS_INVALID = "agent.profile_allowed_callers_invalid", Configuration,
        "A profile's allowed callers are empty or malformed.";
    AGENT_PROFILE_APPROVAL_INVALID = "agent.profile_approval_invalid", Configuration,
        "A profile's tool-approval policy names an unknown tool or an unusable root, or has a zero timeout.";
    AGENT_PROFILE_BUILT_IN = "agent.profile_built_in", HostContract,
        "A built-in profile cannot be deleted (only a stored profile that replaces it can).";
    AGENT_PROFILE_CALLABLE_CONFLICT = "agent.profile_callable_conflict", Configuration,
        "A profile may be a subagent or handoff target but is not callable.";
    AGENT_PROFILE_CANNOT_DELEGATE = "agent.profile_cannot_delegate", ToolRefusal,
        "Reason of `agent.delegation_policy_denied` (also for `agent.cancel_task`): the calling agent's profile may not delegate.";
    AGENT_PROFILE_CANNOT_HANDOFF = "agent.profile_cannot_handoff", ToolRefusal,
        "Reason of `agent.handoff_policy_denied`: the calling agent's profile may not hand off.";
    AGENT_PROFILE_DELEGATION_DEPTH_INVALID = "agent.profile_delegation_depth_invalid", Configuration,
        "A profile's maximum delegation depth is zero.";
    AGENT_PROFILE_DESCRIPTION_BLANK = "agent.profile_description_blank", Configuration,
        "A callable profile has a blank description (other agents choose it by its description).";
    AGENT_PROFILE_DISPLAY_NAME_REQUIRED = "agent.profile_display_name_required", Configuration,
        "A profile has no display name.";
    AGENT_PROFILE_ENTRYPOINT_REQUIRED = "agent.profile_entrypoint_required", Configuration,
        "A profile that is not directly runnable cannot be called as a subagent or handoff target either.";
    AGENT_PROFILE_FINISH_TOOL_REQUIRED = "agent.profile_finish_tool_required", Configuration,
        "A profile that may own the foreground does not show `workspace.finish`.";
    AGENT_PROFILE_ID_INVALID = "agent.profile_id_invalid", Configuration,
        "A profile id is not a valid name.";
    AGENT_PROFILE_ID_MISMATCH = "agent.profile_id_mismatch", Configuration,
        "A stored profile's id differs from the id it is stored under.";
    AGENT_PROFILE_KIND_INVALID = "agent.profile_kind_invalid", Configuration,
        "A profile's `kind` is not the agent-profile kind.";
    AGENT_PROFILE_LIMIT_INVALID = "agent.profile_limit_invalid", Configuration,
        "A profile limit or budget is zero or out of range.";
    AGENT_PROFILE_MODEL_BINDING_INVALID = "agent.profile_model_binding_invalid", Configuration,
        "A profile's model binding lacks a connection or a model.";
    AGENT_PROFILE_MODEL_CACHE_INVALID = "agent.profile_model_cache_invalid", Configuration,
        "A profile's `model.cache.ttl` is neither `default` nor `1h`.";
    AGENT_PROFILE_MODEL_FALLBACK_INVALID = "agent.profile_model_fallback_invalid", Configuration,
        "A profile's `model.fallbacks` entry lacks a connection or a model, there are too many, or `fallbackOnRateLimitAfterSeconds` is 0 or set without fallbacks.";
    AGENT_PROFILE_MODEL_REQUIRES_CONFIGURATION = "agent.profile_model_requires_configuration", Configuration,
        "A profile's model is still to be configured by the host (also a reason of the delegation and handoff denials).";
    AGENT_PROFILE_MODEL_RETRY_INVALID = "agent.profile_model_retry_invalid", Configuration,
        "A profile retries model calls with no interval between them.";
    AGENT_PROFILE_NOT_DIRECT_RUNNABLE = "agent.profile_not_direct_runnable", HostContract,
        "A run was started with a profile that may only be called by another agent.";
    AGENT_PROFILE_NOT_FOUND = "agent.profile_not_found", HostContract,
        "No profile with that id is installed.";
    AGENT_PROFILE_OUTPUT_INVALID = "agent.profile_output_invalid", Configuration,
        "A profile's output artifacts are invalid (for example not exactly one message body).";
    AGENT_PROFILE_PRESENTATION_INVALID = "agent.profile_presentation_invalid", Configuration,
        "A profile that only other agents may start does not use background presentation.";
    AGENT_PROFILE_PRESET_REF_REQUIRED = "agent.profile_preset_ref_required", Configuration,
        "A profile whose prompt the host assembles names no preset.";
    AGENT_PROFILE_PRESET_REF_UNEXPECTED = "agent.profile_preset_ref_unexpected", Configuration,
        "A profile names a preset but does not have its prompt assembled by the host.";
    AGENT_PROFILE_SCHEMA_VERSION_UNSUPPORTED = "agent.profile_schema_version_unsupported", Configuration,
        "A profile's schema version is not one this runtime reads.";
    AGENT_PROFILE_SKILLS_INVALID = "agent.profile_skills_invalid", Configuration,
        "A profile's skill settings are invalid (no visible skills, a per-call read limit above the per-run one).";
    AGENT_PROFILE_SYSTEM_PROMPT_BLANK = "agent.profile_system_prompt_blank", Configuration,
        "A profile's system prompt is blank.";
    AGENT_PROFILE_TASK_RETURN_RUNTIME_ONLY = "agent.profile_task_return_runtime_only", Configuration,
        "A profile lists `task.return`, which the runtime gives delegated agents by itself.";
    AGENT_PROFILE_RETURN_GATE_INVALID = "agent.profile_return_gate_invalid", Configuration,
        "`delegation.returnGate` names no profile id, has a blank rubric, more than 10 revisions or a grader budget of 0.";
    AGENT_PROFILE_TIMEOUT_INVALID = "agent.profile_timeout_invalid", Configuration,
        "A profile timeout is zero.";
    AGENT_PROFILE_TOOL_DESCRIPTION_INVALID = "agent.profile_tool_description_invalid", Configuration,
        "A profile's tool description override names a property the tool does not have.";
    AGENT_PROFILE_TOOL_NOT_VISIBLE = "agent.profile_tool_not_visible", Configuration,
        "A profile configures a tool it does not show.";
    AGENT_PROFILE_TOOL_SPEC_STYLE_INVALID = "agent.profile_tool_spec_style_invalid", Configuration,
        "A profile's `tools.specStyle` is neither `full` nor `compact`.";
    AGENT_PROFILE_TOOL_UNKNOWN = "agent.profile_tool_unknown", Configuration,
        "A profile names a tool the runtime does not have.";
    AGENT_PROFILE_TOOLS_REQUIRED = "agent.profile_tools_required", Configuration,
        "A profile allows no tools.";
    AGENT_PROFILE_WORKSPACE_INVALID = "agent.profile_workspace_invalid", Configuration,
        "A profile's workspace roots are empty or not model-visible roots.";
    AGENT_PROFILE_WRITE_TOOL_REQUIRED = "agent.profile_write_tool_required", Configuration,
        "A profile that must write an artifact does not show `workspace.write_file`.";
    AGENT_PROMPT_ASSEMBLY_CHANNEL_CLOSED = "agent.prompt_assembly_channel_closed", HostBridge,
        "The host's prompt-assembly bridge went away before it answered.";
    AGENT_PROMPT_ASSEMBLY_COMPONENT_MISSING = "agent.prompt_assembly_component_missing", HostBridge,
        "The host's assembled prompt lacks a component the profile needs.";
    AGENT_PROMPT_ASSEMBLY_FAILED = "agent.prompt_assembly_failed", HostBridge,
        "The host refused or failed to assemble a prompt.";
    AGENT_PROMPT_ASSEMBLY_ID_COLLISION = "agent.prompt_assembly_id_collision", Internal,
        "Reason in the message of a prompt-assembly bridge failure: an assembly id was asked for while one with that id was pending.";
    AGENT_PROMPT_ASSEMBLY_NOT_PENDING = "agent.prompt_assembly_not_pending", HostContract,
        "No prompt assembly with that id is waiting for an answer.";
    AGENT_PROMPT_ASSEMBLY_RESOLVE_INVALID = "agent.prompt_assembly_resolve_invalid", HostBridge,
        "The host's prompt assembly answer is malformed.";
    AGENT_PROMPT_ASSEMBLY_RUN_MISMATCH = "agent.prompt_assembly_run_mismatch", HostContract,
        "The prompt assembly answered belongs to another run.";
    AGENT_PROMPT_ASSEMBLY_SNAPSHOT_REQUIRED = "agent.prompt_assembly_snapshot_required", HostBridge,
        "The host's prompt assembly answer holds no messages.";
    AGENT_RATE_LIMITED = "agent.rate_limited", ProviderTransient,
        "The model provider kept rate-limiting past the retries (`details.modelCode` has the provider's code).";
    AGENT_READ_EVENTS_INVOCATION_ID_INVALID = "agent.read_events_invocation_id_invalid", HostContract,
        "The invocation filter of an event read is empty or holds a path separator.";
    AGENT_RECORD_REFERENCE_INVALID = "agent.record_reference_invalid", HostContract,
        "A stored-record reference names no kind of record.";
    AGENT_RECORDS_INCONSISTENT = "agent.records_inconsistent", Storage,
        "A damage finding: the run's records contradict its recorded end (an agent or task still working in a run that ended, a missing root), as when `records.jsonl` was cut short.";
    AGENT_RESUME_PROFILE_CHANGED = "agent.resume_profile_changed", HostContract,
        "A run is resumed with a profile that differs from the one it started with.";
    AGENT_RETURN_GRADING_FAILED = "agent.return_grading_failed", Provider,
        "The return gate's grader could not answer (its model call failed or its answer had no verdict); the task fails.";
    AGENT_RETURN_REJECTED = "agent.return_rejected", UserRetryable,
        "The return gate's grader rejected a delegated agent's result; the task fails with the grader's reason.";
    AGENT_RETURN_REVISION_REQUESTED = "agent.return_revision_requested", ToolRefusal,
        "The return gate's grader sent a `task.return` back with notes; the agent revises its work and returns again.";
    AGENT_RETURN_REVISIONS_SPENT = "agent.return_revisions_spent", UserRetryable,
        "The return gate would send a result back once more but its revisions (or its grader budget) are spent, and `whenRevisionsSpent` is `fail`.";
    AGENT_RUN_BUDGET_EXHAUSTED = "agent.run_budget_exhausted", Budget,
        "The run used up its token or cost budget.";
    AGENT_RUN_DEADLINE_EXCEEDED = "agent.run_deadline_exceeded", UserRetryable,
        "The run ran past its time limit.";
    AGENT_RUN_END_UNRECORDED = "agent.run_end_unrecorded", Storage,
        "A damage finding: the journal refused the run's end (a full or read-only disk); the run record keeps it as `unrecordedEnd`.";
    AGENT_RUN_END_UNWRITTEN = "agent.run_end_unwritten", Storage,
        "A damage finding: an interrupted run whose foreground agent failed or was cancelled never got its end on the run record; resume reopens what the end stopped.";
    AGENT_RUN_LOCKED = "agent.run_locked", HostContract,
        "Another process, or another runtime of this one, is writing the run.";
    AGENT_RUN_NOT_ABANDONABLE = "agent.run_not_abandonable", HostContract,
        "Only an interrupted, failed or cancelled run that was not abandoned yet can be abandoned.";
    AGENT_RUN_NOT_RESUMABLE = "agent.run_not_resumable", HostContract,
        "The run cannot be resumed (it completed, was abandoned, or is still running).";
    AGENT_RUN_NOT_RUNNING = "agent.run_not_running", HostContract,
        "The call needs a running run, and this one has ended.";
    AGENT_RUN_RECORD_MISSING = "agent.run_record_missing", Storage,
        "A run directory holds a journal or records but no run record, and nothing can rebuild one; it is kept and listed as unreadable, never removed.";
    AGENT_RUN_RECORD_REBUILT = "agent.run_record_rebuilt", Storage,
        "A damage finding: the run record was missing or unreadable and was rebuilt from the run index's copy or the journal (`rebuilt` on the record says which and why).";
    AGENT_RUN_SPEND_REFUSED = "agent.run_spend_refused", Budget,
        "The run's spend reached `limits.askAboveTotalCostUsd` and a person refused to raise the limit.";
    AGENT_RUN_STATUS_TRANSITION_INVALID = "agent.run_status_transition_invalid", Internal,
        "A run's status was to change in a way its state machine forbids.";
    AGENT_RUNTIME_PROVIDER_MISSING = "agent.runtime_provider_missing", Configuration,
        "A runtime was built without a model provider.";
    AGENT_RUNTIME_SHUT_DOWN = "agent.runtime_shut_down", HostContract,
        "The runtime was shut down; every later call answers this.";
    AGENT_RUNTIME_SHUTDOWN_TIMED_OUT = "agent.runtime_shutdown_timed_out", Internal,
        "A run did not stop within the shutdown's grace period; the next start marks it interrupted.";
    AGENT_SPEND_LIMIT_INVALID = "agent.spend_limit_invalid", HostContract,
        "A raised run spend limit must be a number of US dollars above what the run has spent.";
    AGENT_SPEND_LIMIT_NOT_REACHED = "agent.spend_limit_not_reached", HostContract,
        "The run is not parked at its spend limit, so there is nothing to raise or refuse.";
    AGENT_STABLE_CHAT_ID_INVALID = "agent.stable_chat_id_invalid", HostContract,
        "The run request's stable chat id is blank or malformed.";
    AGENT_STORAGE_CORRUPT = "agent.storage_corrupt", Storage,
        "Stored data could not be parsed.";
    AGENT_STORAGE_IO = "agent.storage_io", Storage,
        "The store failed to read or write (disk full, permissions, connection lost).";
    AGENT_STORAGE_READ_ONLY = "agent.storage_read_only", Storage,
        "A write reached a store opened for reading only.";
    AGENT_STORAGE_SEGMENT_INVALID = "agent.storage_segment_invalid", Storage,
        "An id used as a storage name is not 1 to 128 letters, digits, `-` or `_`.";
    AGENT_STORE_URL_INVALID = "agent.store_url_invalid", Configuration,
        "The store URL has a known scheme but names nothing its store can open (`file://` without a directory).";
    AGENT_STORE_URL_UNSUPPORTED = "agent.store_url_unsupported", Configuration,
        "The store URL names a kind of store this runtime does not have.";
    AGENT_TARGET_CALLER_DENIED = "agent.target_caller_denied", ToolRefusal,
        "Reason of a delegation or handoff denial: the target's profile does not accept this caller.";
    AGENT_TARGET_FORK_DENIED = "agent.target_fork_denied", ToolRefusal,
        "Reason of a delegation denial: the target's profile cannot be started in fork mode (`delegation.allowFork`).";
    AGENT_TARGET_NOT_CALLABLE = "agent.target_not_callable", ToolRefusal,
        "Reason of a delegation or handoff denial: the target's profile is not callable.";
    AGENT_TARGET_NOT_HANDOFF = "agent.target_not_handoff", ToolRefusal,
        "Reason of a handoff denial: the target's profile is no handoff target.";
    AGENT_TARGET_NOT_SUBAGENT = "agent.target_not_subagent", ToolRefusal,
        "Reason of a delegation denial: the target's profile is no subagent.";
    AGENT_TARGET_PROFILE_NOT_FOUND = "agent.target_profile_not_found", ToolRefusal,
        "`agent.delegate` or `agent.handoff` named an agent that does not exist.";
    AGENT_TASK_ALREADY_FINISHED = "agent.task_already_finished", HostContract,
        "The task has already ended: a cancel came too late, or a `task.return` came after its task was stopped.";
    AGENT_TASK_ALREADY_SCHEDULED = "agent.task_already_scheduled", Internal,
        "A task was handed to the scheduler twice.";
    AGENT_TASK_BUDGET_EXHAUSTED = "agent.task_budget_exhausted", Budget,
        "A delegated task used up its token budget; it ends `failed` with its written work listed.";
    AGENT_TASK_NOT_CANCELLABLE = "agent.task_not_cancellable", HostContract,
        "The task is a handoff, which cannot be cancelled on its own; cancel the run instead.";
    AGENT_TASK_NOT_FOUND = "agent.task_not_found", HostContract,
        "No task with that id exists in the run.";
    AGENT_TASK_PROMPT_REQUIRED = "agent.task_prompt_required", HostBridge,
        "The host's assembled prompt for a delegated agent does not contain its task.";
    AGENT_TASK_RECORD_MISSING = "agent.task_record_missing", Storage,
        "The store holds no task record for a delegated agent.";
    AGENT_TASK_RETURN_DENIED = "agent.task_return_denied", RoleViolation,
        "The foreground agent ended with `task.return`, which only delegated agents may call.";
    AGENT_TASK_RETURN_RESULT_SERIALIZE_FAILED = "agent.task_return_result_serialize_failed", Internal,
        "A `task.return` result could not be serialised for the store.";
    AGENT_TASK_SCHEDULER_CLOSED = "agent.task_scheduler_closed", Internal,
        "The run's task scheduler stopped while an agent waited on it.";
    AGENT_TASK_STATUS_TRANSITION_INVALID = "agent.task_status_transition_invalid", Internal,
        "A task's status was to change in a way its state machine forbids.";
    AGENT_TIMELINE_PROJECTION_INVALID = "agent.timeline_projection_invalid", Storage,
        "A stored task points at an agent the run does not have, so no timeline can be built.";
    AGENT_TOOL_AFTER_FINISH = "agent.tool_after_finish", UserRetryable,
        "The model called more tools in the reply that ended its agent.";
    AGENT_TOOL_BUDGET_EXHAUSTED = "agent.tool_budget_exhausted", ToolRefusal,
        "The agent has made as many tool calls (in all, or of this tool) as its profile allows.";
    AGENT_TOOL_CALL_DENIED = "agent.tool_call_denied", ToolRefusal,
        "A person (or the approval timeout) declined the tool call.";
    AGENT_TOOL_POLICY_DENIED = "agent.tool_policy_denied", ToolRefusal,
        "The model called a tool its profile does not offer it.";
    AGENT_TOOL_UNAVAILABLE = "agent.tool_unavailable", Configuration,
        "A profile lists a tool this runtime does not provide yet.";
    AGENT_TRANSIENT = "agent.transient", ProviderTransient,
        "The model provider kept failing transiently past the retries (`details.modelCode` has the provider's code).";
    AGENT_UNAUTHORIZED = "agent.unauthorized", Provider,
        "The model provider answered 401: the API key is missing or wrong.";
    AGENT_VALIDATION_ERROR = "agent.validation_error", Provider,
        "The model provider answered 400 or 422: it refused the request as malformed.";
    AGENT_WORKSPACE_SYMLINK_ESCAPE = "agent.workspace_symlink_escape", Storage,
        "A workspace path resolves through a symlink to outside the run's directory.";
}
