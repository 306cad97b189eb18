//! The codes of the model-facing tools: `workspace.*`, `skill.*` and `tool.*`. Almost all go
//! back to the model as tool errors; the few a host can also meet say so.

super::error_codes! {
    SKILL_FILE_NOT_FOUND = "skill.file_not_found", ToolRefusal,
        "`skill.read` named a file the skill does not have.";
    SKILL_FILE_PATH_INVALID = "skill.file_path_invalid", ToolRefusal,
        "A skill file path is empty, absolute or climbs out of the skill.";
    SKILL_FILE_UNREADABLE = "skill.file_unreadable", ToolRefusal,
        "A skill file could not be read as text.";
    SKILL_ID_INVALID = "skill.id_invalid", ToolRefusal,
        "A skill id is not a valid name.";
    SKILL_NOT_FOUND = "skill.not_found", ToolRefusal,
        "No skill with that id is visible to the agent.";
    SKILL_READ_BUDGET_EXHAUSTED = "skill.read_budget_exhausted", ToolRefusal,
        "The agent has read as much skill text as its profile allows.";
    SKILL_SCOPE_INVALID = "skill.scope_invalid", Configuration,
        "A skill scope (of a profile or a run request) is blank or malformed.";
    TOOL_ERROR = "tool.error", Internal,
        "Telemetry only: the span status of a failed tool call whose event carried no code.";
    TOOL_HOST_FAILED = "tool.host_failed", ToolRefusal,
        "A host tool's handler answered with an error; the agent reads its message (the host's own code is `errorReason`).";
    TOOL_HOST_NO_ANSWER = "tool.host_no_answer", ToolRefusal,
        "The host did not answer a call of a host-answered tool within its answer timeout; it may have run.";
    TOOL_HOST_PANICKED = "tool.host_panicked", ToolRefusal,
        "A host tool's handler panicked; the call failed and the agent goes on.";
    TOOL_ID_INVALID = "tool.id_invalid", Configuration,
        "A tool id is neither a built-in's name, `host/<name>` nor `mcp/<server>:<tool>`, or names a host tool or MCP server or tool the runtime cannot use.";
    TOOL_OUTCOME_UNKNOWN = "tool.outcome_unknown", ToolRefusal,
        "A call of an outside tool was sent and never answered (a crash, a timeout): it may have run, and it is never sent again by itself.";
    TOOL_INVALID_ARGUMENTS = "tool.invalid_arguments", ToolRefusal,
        "A tool call's arguments miss a field or have one of the wrong type or value.";
    WORKSPACE_COMMIT_MODE_INVALID = "workspace.commit_mode_invalid", ToolRefusal,
        "`workspace.commit` was given a mode it does not know.";
    WORKSPACE_FILE_NOT_FOUND = "workspace.file_not_found", ToolRefusal,
        "The file named does not exist.";
    WORKSPACE_INVALID_CHAR_RANGE = "workspace.invalid_char_range", ToolRefusal,
        "A character range of `workspace.read_file` is negative or reversed.";
    WORKSPACE_INVALID_LINE_RANGE = "workspace.invalid_line_range", ToolRefusal,
        "A line range of `workspace.read_file` starts before line 1 or is reversed.";
    WORKSPACE_INVALID_PATH = "workspace.invalid_path", ModelSlip,
        "A path is no workspace path (absolute, `..`, empty segment, bad characters).";
    WORKSPACE_LIST_DEPTH_TOO_LARGE = "workspace.list_depth_too_large", ToolRefusal,
        "`workspace.list_files` was asked to go deeper than it lists.";
    WORKSPACE_MIXED_READ_RANGE = "workspace.mixed_read_range", ToolRefusal,
        "`workspace.read_file` was given both a line range and a character range.";
    WORKSPACE_PATCH_EMPTY_OLD_STRING = "workspace.patch_empty_old_string", ToolRefusal,
        "`workspace.apply_patch` was given an empty text to replace.";
    WORKSPACE_PATCH_NO_CHANGE = "workspace.patch_no_change", ToolRefusal,
        "`workspace.apply_patch` would replace a text with itself.";
    WORKSPACE_PATCH_OLD_STRING_NOT_FOUND = "workspace.patch_old_string_not_found", ToolRefusal,
        "The text `workspace.apply_patch` was to replace is not in the file.";
    WORKSPACE_PATCH_OLD_STRING_NOT_UNIQUE = "workspace.patch_old_string_not_unique", ToolRefusal,
        "The text `workspace.apply_patch` was to replace occurs more than once.";
    WORKSPACE_PATCH_REQUIRES_FULL_READ = "workspace.patch_requires_full_read", ToolRefusal,
        "The agent read only part of the file, and the patch touches text it has not seen; read the whole file first.";
    WORKSPACE_PATCH_REQUIRES_READ = "workspace.patch_requires_read", ToolRefusal,
        "The agent patches a file it has not read.";
    WORKSPACE_PATCH_STALE_FILE = "workspace.patch_stale_file", ToolRefusal,
        "The file changed since the agent read it; read it again before patching.";
    WORKSPACE_PATH_IS_DIRECTORY = "workspace.path_is_directory", ToolRefusal,
        "The path names a directory where a file is needed.";
    WORKSPACE_PATH_NOT_FOUND = "workspace.path_not_found", ToolRefusal,
        "The directory named does not exist.";
    WORKSPACE_PATH_NOT_VISIBLE = "workspace.path_not_visible", ToolRefusal,
        "The path is outside the agent's visible roots (for a host, outside the model-visible roots).";
    WORKSPACE_PATH_NOT_WRITABLE = "workspace.path_not_writable", ToolRefusal,
        "The path is outside the agent's writable roots.";
    WORKSPACE_READ_CHAR_COUNT_TOO_LARGE = "workspace.read_char_count_too_large", ToolRefusal,
        "`workspace.read_file` was asked for more characters than one read returns.";
    WORKSPACE_READ_LINE_COUNT_TOO_LARGE = "workspace.read_line_count_too_large", ToolRefusal,
        "`workspace.read_file` was asked for more lines than one read returns.";
    WORKSPACE_READ_TOO_LARGE = "workspace.read_too_large", ToolRefusal,
        "The file is too large to read whole; read it by line or character range.";
    WORKSPACE_REQUIRED_ARTIFACT_EMPTY = "workspace.required_artifact_empty", ToolRefusal,
        "`workspace.commit` named a required artifact whose file is empty.";
    WORKSPACE_SEARCH_CONTEXT_TOO_LARGE = "workspace.search_context_too_large", ToolRefusal,
        "`workspace.search_files` was asked for more context lines than it shows.";
    WORKSPACE_SEARCH_LIMIT_INVALID = "workspace.search_limit_invalid", ToolRefusal,
        "`workspace.search_files` was given a limit below 1.";
    WORKSPACE_SEARCH_LIMIT_TOO_LARGE = "workspace.search_limit_too_large", ToolRefusal,
        "`workspace.search_files` was given a limit above its maximum.";
    WORKSPACE_WRITE_MODE_INVALID = "workspace.write_mode_invalid", ToolRefusal,
        "`workspace.write_file` was given a mode it does not know.";
    WORKSPACE_WRITE_REQUIRES_READ = "workspace.write_requires_read", ToolRefusal,
        "The agent overwrites a file it has not read.";
    WORKSPACE_WRITE_STALE_FILE = "workspace.write_stale_file", ToolRefusal,
        "The file changed since the agent read it (or appeared since it looked); read it again.";
}
