//! Profile validation and resolution (reference §3).
//!
//! `validate_profile` checks every cross-field rule and reports the first violation with an
//! `agent.profile_*` code; `resolve_profile` validates and derives the message-body artifact.

use crate::error_codes;
use serde::{Deserialize, Serialize};

use super::definition::*;
use crate::ids::{ProfileId, is_valid_profile_id};
use crate::run::Presentation;
use crate::tool::ToolName;
use crate::tool_model::{ExternalToolId, ToolFamily, ToolId};
use crate::workspace::{WorkspaceAccessPolicy, WorkspacePath};
use crate::{DomainError, DomainResult};

/// Where a resolved profile came from: `built_in` or `file:<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileSource {
    pub profile_source: String,
}

impl ProfileSource {
    pub fn built_in() -> Self {
        Self {
            profile_source: "built_in".to_owned(),
        }
    }

    pub fn file(id: &ProfileId) -> Self {
        Self {
            profile_source: format!("file:{id}"),
        }
    }
}

/// A validated profile plus what the runtime derives from it; frozen per run as
/// `input/resolved_profile.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedProfile {
    pub definition: AgentProfileDefinition,
    pub message_body_artifact_id: String,
    pub message_body_path: WorkspacePath,
    pub source_trace: ProfileSource,
}

impl ResolvedProfile {
    pub fn id(&self) -> &ProfileId {
        &self.definition.id
    }

    pub fn access_policy(&self) -> WorkspaceAccessPolicy {
        WorkspaceAccessPolicy::new(
            self.definition.workspace.visible_roots.clone(),
            self.definition.workspace.writable_roots.clone(),
        )
    }

    pub fn visible_tools(&self) -> Vec<ToolName> {
        self.definition.tools.visible_tools()
    }
}

/// Validates and resolves a definition.
pub fn resolve_profile(
    definition: AgentProfileDefinition,
    source: ProfileSource,
) -> DomainResult<ResolvedProfile> {
    let definition = migrate(definition);
    validate_profile(&definition)?;
    let body = definition
        .output
        .artifacts
        .iter()
        .find(|artifact| artifact.target == ArtifactTarget::MessageBody)
        .ok_or_else(|| {
            err(
                error_codes::AGENT_PROFILE_OUTPUT_INVALID,
                "exactly one messageBody artifact is required",
            )
        })?;
    let message_body_path = WorkspacePath::parse(&body.path).map_err(|e| {
        err(
            error_codes::AGENT_PROFILE_OUTPUT_INVALID,
            format!("artifact `{}`: {}", body.id, e.message),
        )
    })?;
    Ok(ResolvedProfile {
        message_body_artifact_id: body.id.clone(),
        message_body_path,
        source_trace: source,
        definition,
    })
}

fn err(code: crate::error_codes::Code, message: impl Into<String>) -> DomainError {
    DomainError::new(code, message)
}

/// Checks every rule of reference §3; the first violation is returned.
pub fn validate_profile(p: &AgentProfileDefinition) -> DomainResult<()> {
    validate_header(p)?;
    validate_bindings(p)?;
    validate_run(p)?;
    let visible = validate_tools(p)?;
    validate_delegation(p, &visible)?;
    if let Some(gate) = &p.delegation.return_gate {
        validate_return_gate(gate)?;
    }
    validate_entrypoints(p, &visible)?;
    validate_skills(p)?;
    validate_workspace(p)?;
    validate_plan(p)?;
    validate_output(p)?;
    validate_limits(p)?;
    super::model_cache::validate_cache(&p.model.cache)?;
    super::model_fallbacks::validate_fallbacks(
        &p.model.fallbacks,
        p.model.fallback_on_rate_limit_after_seconds,
        p.model.mode != ModelMode::RequiresConfiguration,
    )?;
    super::watchdog::validate_watchdog(p.limits.watchdog.as_ref())?;
    Ok(())
}

/// Bounds of `model.contextWindowTokens` (and of `context.maxToolResultTokens`).
pub const MIN_CONTEXT_WINDOW_TOKENS: u64 = 256;
pub const MAX_CONTEXT_WINDOW_TOKENS: u64 = 100_000_000;
/// The least `context.maxToolResultTokens`.
pub const MIN_TOOL_RESULT_TOKENS: u64 = 64;

fn validate_limits(p: &AgentProfileDefinition) -> DomainResult<()> {
    p.model
        .generation
        .validate(&format!("profile `{}` model.generation", p.id))?;
    if p.model
        .max_output_tokens
        .is_some_and(|tokens| tokens == 0 || tokens > MAX_OUTPUT_TOKENS_LIMIT)
    {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            format!("model.maxOutputTokens must be > 0 and <= {MAX_OUTPUT_TOKENS_LIMIT}"),
        ));
    }
    if p.model.context_window_tokens.is_some_and(|tokens| {
        !(MIN_CONTEXT_WINDOW_TOKENS..=MAX_CONTEXT_WINDOW_TOKENS).contains(&tokens)
    }) {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            format!(
                "model.contextWindowTokens must be {MIN_CONTEXT_WINDOW_TOKENS} to {MAX_CONTEXT_WINDOW_TOKENS}"
            ),
        ));
    }
    if p.context.max_tool_result_tokens.is_some_and(|tokens| {
        !(MIN_TOOL_RESULT_TOKENS..=MAX_CONTEXT_WINDOW_TOKENS).contains(&tokens)
    }) {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            format!(
                "context.maxToolResultTokens must be {MIN_TOOL_RESULT_TOKENS} to {MAX_CONTEXT_WINDOW_TOKENS}"
            ),
        ));
    }
    let limits = &p.limits;
    if limits.max_consecutive_slips > MAX_CONSECUTIVE_SLIPS_LIMIT {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            format!("limits.maxConsecutiveSlips must be <= {MAX_CONSECUTIVE_SLIPS_LIMIT}"),
        ));
    }
    for (name, value) in [
        ("maxRunSeconds", limits.max_run_seconds),
        ("maxInvocationSeconds", limits.max_invocation_seconds),
    ] {
        if value.is_some_and(|seconds| seconds == 0 || seconds > MAX_DEADLINE_SECONDS) {
            return Err(err(
                error_codes::AGENT_PROFILE_LIMIT_INVALID,
                format!("limits.{name} must be > 0 and <= {MAX_DEADLINE_SECONDS}"),
            ));
        }
    }
    if limits.max_total_tokens == Some(0) {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            "limits.maxTotalTokens must be > 0",
        ));
    }
    for (name, cap) in [
        ("limits.maxTotalCostUsd", limits.max_total_cost_usd),
        (
            "limits.askAboveTotalCostUsd",
            limits.ask_above_total_cost_usd,
        ),
        ("delegation.maxTaskCostUsd", p.delegation.max_task_cost_usd),
    ] {
        if cap == Some(crate::cost::Usd::ZERO) {
            return Err(err(
                error_codes::AGENT_PROFILE_LIMIT_INVALID,
                format!("{name} must be > 0"),
            ));
        }
    }
    if limits.max_tool_argument_bytes == 0
        || limits.max_tool_argument_bytes > MAX_TOOL_ARGUMENT_BYTES_LIMIT
    {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            format!(
                "limits.maxToolArgumentBytes must be > 0 and <= {MAX_TOOL_ARGUMENT_BYTES_LIMIT}"
            ),
        ));
    }
    if let Some(bytes) = limits.max_inline_tool_result_bytes {
        let range = INLINE_TOOL_RESULT_BYTES_RANGE;
        if !range.contains(&bytes) {
            return Err(err(
                error_codes::AGENT_PROFILE_LIMIT_INVALID,
                format!(
                    "limits.maxInlineToolResultBytes must be {} to {}",
                    range.start(),
                    range.end()
                ),
            ));
        }
    }
    Ok(())
}

/// The first profile format.
pub(super) const PROFILE_SCHEMA_VERSION_1: u32 = 1;

/// A profile in the current format. Version 1 (the contract's "version 1 is migrated") has the
/// same sections; what version 2 added has defaults, so it only takes the new number. Saving a
/// version-1 profile stores it as version 2.
pub(super) fn migrate(mut definition: AgentProfileDefinition) -> AgentProfileDefinition {
    if definition.schema_version == PROFILE_SCHEMA_VERSION_1 {
        definition.schema_version = PROFILE_SCHEMA_VERSION;
    }
    definition
}

fn validate_header(p: &AgentProfileDefinition) -> DomainResult<()> {
    if p.schema_version != PROFILE_SCHEMA_VERSION {
        return Err(err(
            error_codes::AGENT_PROFILE_SCHEMA_VERSION_UNSUPPORTED,
            format!(
                "schemaVersion {} is not supported; use {PROFILE_SCHEMA_VERSION} (version 1 is migrated)",
                p.schema_version
            ),
        ));
    }
    if p.kind != PROFILE_KIND {
        return Err(err(
            error_codes::AGENT_PROFILE_KIND_INVALID,
            format!("kind must be `{PROFILE_KIND}`"),
        ));
    }
    if p.display_name.trim().is_empty() {
        return Err(err(
            error_codes::AGENT_PROFILE_DISPLAY_NAME_REQUIRED,
            "displayName must not be empty",
        ));
    }
    Ok(())
}

fn validate_bindings(p: &AgentProfileDefinition) -> DomainResult<()> {
    match p.preset.mode {
        PresetMode::Ref => match &p.preset.preset_ref {
            Some(r) if !r.api_id.trim().is_empty() && !r.name.trim().is_empty() => {}
            _ => {
                return Err(err(
                    error_codes::AGENT_PROFILE_PRESET_REF_REQUIRED,
                    "preset.mode `ref` needs preset.ref {apiId, name}",
                ));
            }
        },
        PresetMode::CurrentPromptSnapshot | PresetMode::None => {
            if p.preset.preset_ref.is_some() {
                return Err(err(
                    error_codes::AGENT_PROFILE_PRESET_REF_UNEXPECTED,
                    "preset.ref is only allowed with preset.mode `ref`",
                ));
            }
        }
    }
    let has_connection = p
        .model
        .connection_ref
        .as_deref()
        .is_some_and(|s| !s.trim().is_empty());
    let has_model = p
        .model
        .model_id
        .as_deref()
        .is_some_and(|s| !s.trim().is_empty());
    match p.model.mode {
        ModelMode::ConnectionRef => {
            if !(has_connection && has_model) {
                return Err(err(
                    error_codes::AGENT_PROFILE_MODEL_BINDING_INVALID,
                    "model.mode `connectionRef` needs both connectionRef and modelId",
                ));
            }
        }
        ModelMode::CurrentPromptSnapshot | ModelMode::RequiresConfiguration => {
            if p.model.connection_ref.is_some() || p.model.model_id.is_some() {
                return Err(err(
                    error_codes::AGENT_PROFILE_MODEL_BINDING_INVALID,
                    "connectionRef and modelId are only allowed with model.mode `connectionRef`",
                ));
            }
        }
    }
    Ok(())
}

fn validate_run(p: &AgentProfileDefinition) -> DomainResult<()> {
    if p.run.model_retry.max_retries > 0 && p.run.model_retry.interval_ms == 0 {
        return Err(err(
            error_codes::AGENT_PROFILE_MODEL_RETRY_INVALID,
            "run.modelRetry.intervalMs must be > 0 when maxRetries > 0",
        ));
    }
    if p.run.model_retry.deadline_seconds == Some(0) {
        return Err(err(
            error_codes::AGENT_PROFILE_MODEL_RETRY_INVALID,
            "run.modelRetry.deadlineSeconds must be at least 1",
        ));
    }
    if p.instructions
        .agent_system_prompt
        .as_deref()
        .is_some_and(|prompt| prompt.trim().is_empty())
    {
        return Err(err(
            error_codes::AGENT_PROFILE_SYSTEM_PROMPT_BLANK,
            "instructions.agentSystemPrompt must be omitted or non-blank",
        ));
    }
    Ok(())
}

fn validate_tools(p: &AgentProfileDefinition) -> DomainResult<Vec<ToolName>> {
    let tools = &p.tools;
    if tools.allow.is_empty() {
        return Err(err(
            error_codes::AGENT_PROFILE_TOOLS_REQUIRED,
            "tools.allow must not be empty",
        ));
    }
    validate_tool_names(tools)?;
    if let Some(style) = tools.spec_style.as_deref()
        && ToolSpecStyle::parse(style).is_none()
    {
        return Err(err(
            error_codes::AGENT_PROFILE_TOOL_SPEC_STYLE_INVALID,
            format!("tools.specStyle `{style}` is not `full` or `compact`"),
        ));
    }
    if tools.max_rounds == 0 {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            "tools.maxRounds must be > 0",
        ));
    }
    if tools.max_calls_per_run == 0 {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            "tools.maxCallsPerRun must be > 0",
        ));
    }
    let visible = tools.visible_tools();
    if !visible.contains(&ToolName::WorkspaceWriteFile) {
        return Err(err(
            error_codes::AGENT_PROFILE_WRITE_TOOL_REQUIRED,
            "workspace.write_file must be visible",
        ));
    }
    crate::approval::validate_policy(&tools.approval, tools.approval_timeout_ms)?;
    validate_tool_keyed_settings(tools)?;
    Ok(visible)
}

/// Every tool `tools.allow`, `tools.deny` and `tools.mcp` name: a built-in or host tool (MCP
/// tools go under `tools.mcp`), never `task.return`.
fn validate_tool_names(tools: &ToolsSection) -> DomainResult<()> {
    for name in tools.allow.iter().chain(tools.deny.iter()) {
        if name == ToolName::TaskReturn.canonical() {
            return Err(err(
                error_codes::AGENT_PROFILE_TASK_RETURN_RUNTIME_ONLY,
                "task.return is added by the runtime for delegated tasks; remove it from the profile",
            ));
        }
        match ToolId::parse(name) {
            Ok(ToolId::Builtin(_)) => {}
            Ok(ToolId::External(id)) if id.family() == ToolFamily::Host => {}
            Ok(ToolId::External(_)) => {
                return Err(err(
                    error_codes::AGENT_PROFILE_TOOL_UNKNOWN,
                    format!("`{name}` is an MCP tool: list it under tools.mcp with its permission"),
                ));
            }
            Err(_) => {
                return Err(err(
                    error_codes::AGENT_PROFILE_TOOL_UNKNOWN,
                    format!("unknown tool `{name}`"),
                ));
            }
        }
    }
    for (server, tools) in &tools.mcp {
        for tool in tools.keys() {
            ExternalToolId::mcp(server, tool).map_err(|e| {
                err(
                    error_codes::AGENT_PROFILE_TOOL_UNKNOWN,
                    format!("tools.mcp.{server}.{tool}: {}", e.message),
                )
            })?;
        }
    }
    Ok(())
}

/// `maxCallsPerTool` and `toolDescriptions` name tools the profile offers (with a limit of at
/// least 1).
fn validate_tool_keyed_settings(tools: &ToolsSection) -> DomainResult<()> {
    for (name, limit) in &tools.max_calls_per_tool {
        let tool = ToolId::parse(name).map_err(|_| {
            err(
                error_codes::AGENT_PROFILE_TOOL_UNKNOWN,
                format!("maxCallsPerTool names unknown tool `{name}`"),
            )
        })?;
        if !tools.offers(&tool) {
            return Err(err(
                error_codes::AGENT_PROFILE_TOOL_NOT_VISIBLE,
                format!("maxCallsPerTool names `{name}`, which is not visible"),
            ));
        }
        if *limit == 0 {
            return Err(err(
                error_codes::AGENT_PROFILE_LIMIT_INVALID,
                format!("maxCallsPerTool.{name} must be > 0"),
            ));
        }
    }
    for name in tools.tool_descriptions.keys() {
        let tool = ToolId::parse(name).map_err(|_| {
            err(
                error_codes::AGENT_PROFILE_TOOL_UNKNOWN,
                format!("toolDescriptions names unknown tool `{name}`"),
            )
        })?;
        if !tools.offers(&tool) {
            return Err(err(
                error_codes::AGENT_PROFILE_TOOL_NOT_VISIBLE,
                format!("toolDescriptions names `{name}`, which is not visible"),
            ));
        }
    }
    Ok(())
}

/// `delegation.returnGate`: a grader profile id, a rubric, at most
/// [`MAX_RETURN_REVISIONS`] revisions, a grader budget of at least 1 token.
fn validate_return_gate(gate: &ReturnGate) -> DomainResult<()> {
    let invalid = |message: String| err(error_codes::AGENT_PROFILE_RETURN_GATE_INVALID, message);
    if !is_valid_profile_id(&gate.grader) {
        return Err(invalid(format!(
            "delegation.returnGate.grader `{}` is not a profile id",
            gate.grader
        )));
    }
    if gate.rubric.trim().is_empty() {
        return Err(invalid(
            "delegation.returnGate.rubric must not be blank".to_owned(),
        ));
    }
    if gate.max_revisions > MAX_RETURN_REVISIONS {
        return Err(invalid(format!(
            "delegation.returnGate.maxRevisions can be at most {MAX_RETURN_REVISIONS}"
        )));
    }
    if gate.max_grader_tokens == Some(0) {
        return Err(invalid(
            "delegation.returnGate.maxGraderTokens must be at least 1".to_owned(),
        ));
    }
    Ok(())
}

/// The agent tools the profile shows need the delegation policy that allows them.
fn validate_agent_tools_policy(d: &DelegationPolicy, visible: &[ToolName]) -> DomainResult<()> {
    let shows = |tool: ToolName| visible.contains(&tool);
    if shows(ToolName::AgentList) && !(d.can_delegate || d.can_handoff) {
        return Err(err(
            error_codes::AGENT_PROFILE_AGENT_TOOL_REQUIRES_POLICY,
            "agent.list needs delegation.canDelegate or canHandoff",
        ));
    }
    if (shows(ToolName::AgentDelegate)
        || shows(ToolName::AgentAwait)
        || shows(ToolName::AgentCancelTask))
        && !d.can_delegate
    {
        return Err(err(
            error_codes::AGENT_PROFILE_AGENT_TOOL_REQUIRES_POLICY,
            "agent.delegate, agent.await and agent.cancel_task need delegation.canDelegate",
        ));
    }
    if shows(ToolName::AgentHandoff) && !d.can_handoff {
        return Err(err(
            error_codes::AGENT_PROFILE_AGENT_TOOL_REQUIRES_POLICY,
            "agent.handoff needs delegation.canHandoff",
        ));
    }
    Ok(())
}

fn validate_delegation(p: &AgentProfileDefinition, visible: &[ToolName]) -> DomainResult<()> {
    let d = &p.delegation;
    validate_agent_tools_policy(d, visible)?;
    if d.max_delegation_depth == 0 {
        return Err(err(
            error_codes::AGENT_PROFILE_DELEGATION_DEPTH_INVALID,
            "delegation.maxDelegationDepth must be at least 1",
        ));
    }
    for (value, field) in [
        (d.task_timeout_seconds, "taskTimeoutSeconds"),
        (d.max_task_timeout_seconds, "maxTaskTimeoutSeconds"),
        (d.idle_timeout_seconds, "idleTimeoutSeconds"),
    ] {
        if value == Some(0) {
            return Err(err(
                error_codes::AGENT_PROFILE_TIMEOUT_INVALID,
                format!("delegation.{field} must be at least 1 second"),
            ));
        }
    }
    if d.task_timeout_seconds
        .is_some_and(|timeout| timeout > d.task_timeout_limit())
    {
        return Err(err(
            error_codes::AGENT_PROFILE_TIMEOUT_INVALID,
            "delegation.taskTimeoutSeconds cannot exceed maxTaskTimeoutSeconds",
        ));
    }
    if !d.callable && (d.allow_as_subagent || d.allow_as_handoff_target) {
        return Err(err(
            error_codes::AGENT_PROFILE_CALLABLE_CONFLICT,
            "allowAsSubagent / allowAsHandoffTarget need delegation.callable = true",
        ));
    }
    if d.callable && !(d.allow_as_subagent || d.allow_as_handoff_target) {
        return Err(err(
            error_codes::AGENT_PROFILE_CALLABLE_CONFLICT,
            "a callable profile must allow use as a sub-agent or as a handoff target",
        ));
    }
    if d.allowed_callers.is_empty() {
        return Err(err(
            error_codes::AGENT_PROFILE_ALLOWED_CALLERS_INVALID,
            "delegation.allowedCallers must not be empty",
        ));
    }
    for caller in &d.allowed_callers {
        if caller != "*" && !is_valid_profile_id(caller) {
            return Err(err(
                error_codes::AGENT_PROFILE_ALLOWED_CALLERS_INVALID,
                format!("`{caller}` is neither `*` nor a profile id"),
            ));
        }
    }
    if d.description_for_agents
        .as_deref()
        .is_some_and(|text| text.trim().is_empty())
    {
        return Err(err(
            error_codes::AGENT_PROFILE_DESCRIPTION_BLANK,
            "delegation.descriptionForAgents must not be blank",
        ));
    }
    for (name, value) in [
        ("maxConcurrentInvocations", d.max_concurrent_invocations),
        ("maxInvocationsPerRun", d.max_invocations_per_run),
        ("resultBudgetTokens", d.result_budget_tokens),
        ("maxHandoffDepth", d.max_handoff_depth),
    ] {
        if value == 0 {
            return Err(err(
                error_codes::AGENT_PROFILE_LIMIT_INVALID,
                format!("delegation.{name} must be > 0"),
            ));
        }
    }
    Ok(())
}

fn validate_entrypoints(p: &AgentProfileDefinition, visible: &[ToolName]) -> DomainResult<()> {
    let d = &p.delegation;
    if p.run.direct_runnable {
        if !visible.contains(&ToolName::WorkspaceFinish) {
            return Err(err(
                error_codes::AGENT_PROFILE_FINISH_TOOL_REQUIRED,
                "a directly runnable profile needs workspace.finish",
            ));
        }
        if p.run.presentation == Presentation::Foreground
            && !visible.contains(&ToolName::WorkspaceCommit)
        {
            return Err(err(
                error_codes::AGENT_FOREGROUND_COMMIT_UNAVAILABLE,
                "a directly runnable foreground profile needs workspace.commit",
            ));
        }
    } else {
        if !(d.callable && (d.allow_as_subagent || d.allow_as_handoff_target)) {
            return Err(err(
                error_codes::AGENT_PROFILE_ENTRYPOINT_REQUIRED,
                "directRunnable = false needs callable and allowAsSubagent or allowAsHandoffTarget",
            ));
        }
        if !d.allow_as_handoff_target && p.run.presentation != Presentation::Background {
            return Err(err(
                error_codes::AGENT_PROFILE_PRESENTATION_INVALID,
                "a sub-agent-only profile must use run.presentation `background`",
            ));
        }
    }
    Ok(())
}

fn validate_skills(p: &AgentProfileDefinition) -> DomainResult<()> {
    let s = &p.skills;
    if s.visible.is_empty() {
        return Err(err(
            error_codes::AGENT_PROFILE_SKILLS_INVALID,
            "skills.visible must not be empty (use `*` for all)",
        ));
    }
    if s.max_read_chars_per_call == 0 || s.max_read_chars_per_run == 0 {
        return Err(err(
            error_codes::AGENT_PROFILE_LIMIT_INVALID,
            "skill read budgets must be > 0",
        ));
    }
    if s.max_read_chars_per_call > s.max_read_chars_per_run {
        return Err(err(
            error_codes::AGENT_PROFILE_SKILLS_INVALID,
            "skills.maxReadCharsPerCall must not exceed maxReadCharsPerRun",
        ));
    }
    Ok(())
}

fn validate_workspace(p: &AgentProfileDefinition) -> DomainResult<()> {
    let w = &p.workspace;
    if w.visible_roots.is_empty() {
        return Err(err(
            error_codes::AGENT_PROFILE_WORKSPACE_INVALID,
            "workspace.visibleRoots must not be empty",
        ));
    }
    for root in &w.writable_roots {
        if !w.visible_roots.contains(root) {
            return Err(err(
                error_codes::AGENT_PROFILE_WORKSPACE_INVALID,
                format!("writable root `{root}` must also be visible"),
            ));
        }
    }
    Ok(())
}

fn validate_plan(p: &AgentProfileDefinition) -> DomainResult<()> {
    if p.plan.mode != PlanMode::None || !p.plan.nodes.is_empty() {
        return Err(err(
            error_codes::AGENT_PLAN_MODE_UNSUPPORTED,
            "only plan.mode `none` without nodes is supported",
        ));
    }
    Ok(())
}

fn validate_output(p: &AgentProfileDefinition) -> DomainResult<()> {
    let artifacts = &p.output.artifacts;
    let bodies = artifacts
        .iter()
        .filter(|a| a.target == ArtifactTarget::MessageBody)
        .count();
    if bodies != 1 {
        return Err(err(
            error_codes::AGENT_PROFILE_OUTPUT_INVALID,
            "exactly one messageBody artifact is required",
        ));
    }
    let policy = WorkspaceAccessPolicy::new(
        p.workspace.visible_roots.clone(),
        p.workspace.writable_roots.clone(),
    );
    let mut seen_paths = Vec::new();
    for artifact in artifacts {
        if artifact.target != ArtifactTarget::MessageBody {
            return Err(err(
                error_codes::AGENT_PROFILE_OUTPUT_INVALID,
                format!(
                    "artifact `{}`: only the messageBody target is supported",
                    artifact.id
                ),
            ));
        }
        if !is_valid_profile_id(&artifact.id) {
            return Err(err(
                error_codes::AGENT_PROFILE_OUTPUT_INVALID,
                format!("artifact id `{}` is invalid", artifact.id),
            ));
        }
        let path = WorkspacePath::parse(&artifact.path).map_err(|e| {
            err(
                error_codes::AGENT_PROFILE_OUTPUT_INVALID,
                format!("artifact `{}`: {}", artifact.id, e.message),
            )
        })?;
        if !(policy.is_visible(&path) && policy.is_writable(&path)) {
            return Err(err(
                error_codes::AGENT_PROFILE_OUTPUT_INVALID,
                format!(
                    "artifact `{}` path `{path}` must be under a visible and writable root",
                    artifact.id
                ),
            ));
        }
        if seen_paths.contains(&path) {
            return Err(err(
                error_codes::AGENT_PROFILE_OUTPUT_INVALID,
                format!("artifact path `{path}` is used twice"),
            ));
        }
        seen_paths.push(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::builtin::default_writer_definition;
    use super::*;
    use crate::workspace::WorkspaceRoot;

    fn code(p: &AgentProfileDefinition) -> Option<&'static str> {
        validate_profile(p).err().map(|e| e.code.as_str())
    }

    #[test]
    fn built_in_default_writer_is_valid() {
        let resolved =
            resolve_profile(default_writer_definition(), ProfileSource::built_in()).unwrap();
        assert_eq!(resolved.message_body_path.as_str(), "output/main.md");
        assert_eq!(resolved.message_body_artifact_id, "main");
    }

    #[test]
    fn a_version_1_profile_is_migrated_and_other_versions_are_refused() {
        let mut old = default_writer_definition();
        old.schema_version = 1;
        let resolved = resolve_profile(old, ProfileSource::built_in()).unwrap();
        assert_eq!(resolved.definition.schema_version, PROFILE_SCHEMA_VERSION);
        let mut future = default_writer_definition();
        future.schema_version = 3;
        let refused = resolve_profile(future, ProfileSource::built_in()).unwrap_err();
        assert_eq!(refused.code, "agent.profile_schema_version_unsupported");
    }

    #[test]
    fn default_writer_round_trips_through_json() {
        let def = default_writer_definition();
        let json = serde_json::to_string_pretty(&def).unwrap();
        let back: AgentProfileDefinition = serde_json::from_str(&json).unwrap();
        assert_eq!(back, def);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let mut json = serde_json::to_value(default_writer_definition()).unwrap();
        json["tools"]["surprise"] = serde_json::json!(1);
        assert!(serde_json::from_value::<AgentProfileDefinition>(json).is_err());
    }

    #[test]
    fn negative_history_becomes_unlimited() {
        let mut json = serde_json::to_value(default_writer_definition()).unwrap();
        json["context"]["initialChatHistoryMessages"] = serde_json::json!(-7);
        let def: AgentProfileDefinition = serde_json::from_value(json).unwrap();
        assert_eq!(def.context.initial_chat_history_messages, -1);
    }

    #[test]
    fn task_return_is_runtime_only() {
        let mut p = default_writer_definition();
        p.tools.allow.push("task.return".into());
        assert_eq!(code(&p), Some("agent.profile_task_return_runtime_only"));
    }

    #[test]
    fn limit_rules() {
        let mut p = default_writer_definition();
        assert_eq!(p.limits.max_consecutive_slips, 3);
        assert_eq!(p.limits.max_tool_argument_bytes, 1024 * 1024);
        p.limits.max_consecutive_slips = 0;
        assert_eq!(code(&p), None);
        p.limits.max_consecutive_slips = MAX_CONSECUTIVE_SLIPS_LIMIT + 1;
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        let mut p = default_writer_definition();
        p.limits.max_tool_argument_bytes = 0;
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        p.limits.max_tool_argument_bytes = MAX_TOOL_ARGUMENT_BYTES_LIMIT + 1;
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        let mut p = default_writer_definition();
        p.model.max_output_tokens = Some(0);
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        p.model.max_output_tokens = Some(MAX_OUTPUT_TOKENS_LIMIT + 1);
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        p.model.max_output_tokens = Some(512);
        let mut spend = default_writer_definition();
        spend.limits.ask_above_total_cost_usd = Some(crate::cost::Usd::ZERO);
        assert_eq!(code(&spend), Some("agent.profile_limit_invalid"));
        spend.limits.ask_above_total_cost_usd = crate::cost::Usd::from_dollars(2.5);
        assert_eq!(code(&spend), None);
        assert_eq!(code(&p), None);
        p.limits.max_run_seconds = Some(0);
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        p.limits.max_run_seconds = Some(60);
        p.limits.max_invocation_seconds = Some(MAX_DEADLINE_SECONDS + 1);
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        p.limits.max_invocation_seconds = Some(30);
        assert_eq!(code(&p), None);
        let mut p = default_writer_definition();
        for bytes in [255, 4 * 1024 * 1024 + 1] {
            p.limits.max_inline_tool_result_bytes = Some(bytes);
            assert_eq!(
                validate_profile(&p).unwrap_err().code,
                "agent.profile_limit_invalid"
            );
        }
        p.limits.max_inline_tool_result_bytes = Some(4096);
        assert!(validate_profile(&p).is_ok());
    }

    #[test]
    fn limits_default_when_absent_and_reject_unknown_fields() {
        let mut value = serde_json::to_value(default_writer_definition()).unwrap();
        value.as_object_mut().unwrap().remove("limits");
        let parsed: AgentProfileDefinition = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(parsed.limits, LimitsSection::default());
        value["limits"] = serde_json::json!({"maxConsecutiveSlips": 5});
        let parsed: AgentProfileDefinition = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(parsed.limits.max_consecutive_slips, 5);
        value["limits"] = serde_json::json!({"maxSlips": 5});
        assert!(serde_json::from_value::<AgentProfileDefinition>(value).is_err());
    }

    #[test]
    fn spec_style_is_full_or_compact() {
        let mut p = default_writer_definition();
        assert_eq!(p.tools.spec_style(), ToolSpecStyle::Compact);
        p.tools.spec_style = None;
        assert_eq!(code(&p), None);
        assert_eq!(p.tools.spec_style(), ToolSpecStyle::Full);
        p.tools.spec_style = Some("full".into());
        assert_eq!(code(&p), None);
        assert_eq!(p.tools.spec_style(), ToolSpecStyle::Full);
        for bad in ["terse", "Compact", ""] {
            p.tools.spec_style = Some(bad.into());
            let refused = validate_profile(&p).unwrap_err();
            assert_eq!(
                refused.code, "agent.profile_tool_spec_style_invalid",
                "{bad}"
            );
            assert!(
                refused.message.contains("tools.specStyle"),
                "{}",
                refused.message
            );
        }
        // In a profile file: any string parses, so the refusal names it with its code.
        let mut json = serde_json::to_value(default_writer_definition()).unwrap();
        assert_eq!(json["tools"]["specStyle"], "compact");
        json["tools"]["specStyle"] = serde_json::json!("tiny");
        let parsed: AgentProfileDefinition = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(code(&parsed), Some("agent.profile_tool_spec_style_invalid"));
        json["tools"].as_object_mut().unwrap().remove("specStyle");
        let parsed: AgentProfileDefinition = serde_json::from_value(json).unwrap();
        assert_eq!(parsed.tools.spec_style, None);
        assert_eq!(code(&parsed), None);
    }

    #[test]
    fn tool_rules() {
        let mut p = default_writer_definition();
        p.tools.allow.push("chat.search".into());
        assert_eq!(code(&p), Some("agent.profile_tool_unknown"));

        // A host tool is named by its id; an MCP tool only under tools.mcp.
        let mut p = default_writer_definition();
        p.tools.allow.push("host/chat.search".into());
        p.tools
            .max_calls_per_tool
            .insert("host/chat.search".into(), 3);
        assert_eq!(code(&p), None);
        p.tools.allow.push("mcp/everything:echo".into());
        assert_eq!(code(&p), Some("agent.profile_tool_unknown"));

        let mut p = default_writer_definition();
        p.tools.mcp.insert(
            "everything".into(),
            [("echo".to_owned(), crate::profile::McpToolPermission::Ask)].into(),
        );
        p.tools
            .max_calls_per_tool
            .insert("mcp/everything:echo".into(), 3);
        assert_eq!(code(&p), None);
        p.tools.mcp.insert(
            "Bad Server".into(),
            [("echo".to_owned(), crate::profile::McpToolPermission::Allow)].into(),
        );
        assert_eq!(code(&p), Some("agent.profile_tool_unknown"));

        let mut p = default_writer_definition();
        p.tools.deny.push("workspace.write_file".into());
        assert_eq!(code(&p), Some("agent.profile_write_tool_required"));

        let mut p = default_writer_definition();
        p.tools.max_calls_per_tool.insert("agent.handoff".into(), 2);
        assert_eq!(code(&p), Some("agent.profile_tool_not_visible"));

        let mut p = default_writer_definition();
        p.tools.max_rounds = 0;
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
    }

    #[test]
    fn agent_tools_need_delegation_rights() {
        let mut p = default_writer_definition();
        assert!(p.tools.allow.contains(&"agent.delegate".to_owned()));
        p.delegation.can_delegate = false;
        assert_eq!(code(&p), Some("agent.profile_agent_tool_requires_policy"));
        p.delegation.can_delegate = true;
        assert_eq!(code(&p), None);
        p.tools.allow.insert(0, "agent.handoff".into());
        assert_eq!(code(&p), Some("agent.profile_agent_tool_requires_policy"));
    }

    #[test]
    fn a_return_gate_names_a_grader_a_rubric_and_bounds() {
        let mut p = default_writer_definition();
        let gate = ReturnGate {
            grader: "quality-grader".into(),
            rubric: "Every slip names its scene.".into(),
            max_revisions: 2,
            when_revisions_spent: RevisionsSpent::Accept,
            max_grader_tokens: Some(5000),
        };
        p.delegation.return_gate = Some(gate.clone());
        assert_eq!(code(&p), None);
        for broken in [
            ReturnGate {
                grader: "Not An Id".into(),
                ..gate.clone()
            },
            ReturnGate {
                rubric: "  ".into(),
                ..gate.clone()
            },
            ReturnGate {
                max_revisions: MAX_RETURN_REVISIONS + 1,
                ..gate.clone()
            },
            ReturnGate {
                max_grader_tokens: Some(0),
                ..gate.clone()
            },
        ] {
            p.delegation.return_gate = Some(broken);
            assert_eq!(code(&p), Some("agent.profile_return_gate_invalid"));
        }
        let parsed: ReturnGate =
            serde_json::from_value(serde_json::json!({"grader": "g", "rubric": "r"})).unwrap();
        assert_eq!(parsed.max_revisions, 2);
        assert_eq!(parsed.when_revisions_spent, RevisionsSpent::Accept);
    }

    #[test]
    fn task_timeouts_are_positive_and_within_their_bound() {
        let mut p = default_writer_definition();
        p.delegation.idle_timeout_seconds = Some(0);
        assert_eq!(code(&p), Some("agent.profile_timeout_invalid"));
        p.delegation.idle_timeout_seconds = Some(30);
        p.delegation.task_timeout_seconds = Some(120);
        assert_eq!(code(&p), None);
        p.delegation.max_task_timeout_seconds = Some(60);
        assert_eq!(code(&p), Some("agent.profile_timeout_invalid"));
        p.delegation.max_task_timeout_seconds = Some(120);
        assert_eq!(code(&p), None);
        p.delegation.task_timeout_seconds = Some(0);
        assert_eq!(code(&p), Some("agent.profile_timeout_invalid"));
        p.delegation.task_timeout_seconds = Some(crate::profile::MAX_TASK_TIMEOUT_SECONDS + 1);
        p.delegation.max_task_timeout_seconds = None;
        assert_eq!(code(&p), Some("agent.profile_timeout_invalid"));
        p.delegation.task_timeout_seconds = None;
        p.limits.max_total_tokens = Some(0);
        assert_eq!(code(&p), Some("agent.profile_limit_invalid"));
        p.limits.max_total_tokens = Some(1);
        assert_eq!(code(&p), None);
        p.delegation.task_timeout_seconds = Some(crate::profile::MAX_TASK_TIMEOUT_SECONDS + 1);
        p.delegation.max_task_timeout_seconds = None;
        assert_eq!(code(&p), Some("agent.profile_timeout_invalid"));
    }

    #[test]
    fn callable_rules() {
        let mut p = default_writer_definition();
        p.delegation.allow_as_subagent = true;
        assert_eq!(code(&p), Some("agent.profile_callable_conflict"));
        p.delegation.callable = true;
        assert_eq!(code(&p), None);
        p.delegation.allow_as_subagent = false;
        assert_eq!(code(&p), Some("agent.profile_callable_conflict"));
    }

    #[test]
    fn direct_runnable_profiles_require_finish_tool() {
        let mut p = default_writer_definition();
        p.tools.deny.push("workspace.finish".into());
        assert_eq!(code(&p), Some("agent.profile_finish_tool_required"));
        let mut p = default_writer_definition();
        p.tools.deny.push("workspace.commit".into());
        assert_eq!(code(&p), Some("agent.foreground_commit_unavailable"));
        p.run.presentation = Presentation::Background;
        assert_eq!(code(&p), None);
    }

    #[test]
    fn subagent_only_profiles_do_not_require_finish_tool() {
        let mut p = default_writer_definition();
        p.tools
            .deny
            .extend(["workspace.finish".to_owned(), "workspace.commit".to_owned()]);
        p.run.direct_runnable = false;
        assert_eq!(code(&p), Some("agent.profile_entrypoint_required"));
        p.delegation.callable = true;
        p.delegation.allow_as_subagent = true;
        assert_eq!(code(&p), Some("agent.profile_presentation_invalid"));
        p.run.presentation = Presentation::Background;
        assert_eq!(code(&p), None);
    }

    #[test]
    fn handoff_target_profiles_do_not_require_finish_tool() {
        let mut p = default_writer_definition();
        p.tools
            .deny
            .extend(["workspace.finish".to_owned(), "workspace.commit".to_owned()]);
        p.run.direct_runnable = false;
        p.delegation.callable = true;
        p.delegation.allow_as_handoff_target = true;
        assert_eq!(code(&p), None);
    }

    #[test]
    fn workspace_output_and_plan_rules() {
        let mut p = default_writer_definition();
        p.workspace.visible_roots = vec![WorkspaceRoot::Output];
        assert_eq!(code(&p), Some("agent.profile_workspace_invalid"));

        let mut p = default_writer_definition();
        p.output.artifacts[0].path = "output".into();
        assert_eq!(code(&p), Some("agent.profile_output_invalid"));

        let mut p = default_writer_definition();
        p.output.artifacts.clear();
        assert_eq!(code(&p), Some("agent.profile_output_invalid"));

        let mut p = default_writer_definition();
        p.plan.mode = PlanMode::Strict;
        assert_eq!(code(&p), Some("agent.plan_mode_unsupported"));
    }

    #[test]
    fn binding_rules() {
        let mut p = default_writer_definition();
        p.model.mode = ModelMode::ConnectionRef;
        assert_eq!(code(&p), Some("agent.profile_model_binding_invalid"));
        p.model.connection_ref = Some("local".into());
        p.model.model_id = Some("m".into());
        assert_eq!(code(&p), None);

        let mut p = default_writer_definition();
        p.preset.mode = PresetMode::Ref;
        assert_eq!(code(&p), Some("agent.profile_preset_ref_required"));

        let mut p = default_writer_definition();
        p.run.model_retry = ModelRetryPolicy {
            max_retries: 2,
            interval_ms: 0,
            deadline_seconds: None,
        };
        assert_eq!(code(&p), Some("agent.profile_model_retry_invalid"));
        p.run.model_retry = ModelRetryPolicy {
            deadline_seconds: Some(0),
            ..ModelRetryPolicy::default()
        };
        assert_eq!(code(&p), Some("agent.profile_model_retry_invalid"));

        let mut p = default_writer_definition();
        p.instructions.agent_system_prompt = Some("  ".into());
        assert_eq!(code(&p), Some("agent.profile_system_prompt_blank"));
    }
}
