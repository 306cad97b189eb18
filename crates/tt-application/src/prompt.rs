//! The default agent system prompt (reference §5.6), generated from the invocation's tool
//! snapshot unless the profile's `instructions.agentSystemPrompt` replaces it. A profile of the
//! `compact` spec style (`tools.specStyle`) gets the short form: no line per tool beyond the
//! front matter's list, except the rules of `agent_await` and `agent_handoff`, and the
//! commit-before-finish rule and the basic flow in one line.
//!
//! Written to the agent, in its own terms: tool names as it calls them, workspace paths as it
//! uses them, no runtime ids or storage details.

use std::fmt::Write as _;
use tt_domain::profile::{ResolvedProfile, ToolSpecStyle};
use tt_domain::run::Presentation;
use tt_domain::tool::{InvocationToolSnapshot, ToolName};
use tt_domain::workspace::WorkspaceRoot;

/// The system prompt for one invocation.
pub fn agent_system_prompt(profile: &ResolvedProfile, snapshot: &InvocationToolSnapshot) -> String {
    match profile
        .definition
        .instructions
        .agent_system_prompt
        .as_deref()
    {
        Some(custom) if !custom.trim().is_empty() => custom.to_owned(),
        _ => default_system_prompt_in(snapshot, profile.definition.tools.spec_style()),
    }
}

/// An outside tool's line in the tool list: its title, or else the first sentence of its
/// description (at most 120 characters), as its source wrote it.
fn external_line(spec: &tt_domain::tool::AgentToolSpec) -> String {
    let title = spec.title.trim();
    let text = if !title.is_empty() && title != spec.model_name {
        title
    } else {
        let description = spec.description.trim();
        description
            .split_once(". ")
            .map_or(description, |(first, _)| first)
    };
    let text = text.trim_end_matches('.');
    let cut: String = text.chars().take(120).collect();
    if cut.is_empty() {
        "a tool of this app.".to_owned()
    } else {
        format!("{cut}.")
    }
}

/// "Your tools:" and one line per tool.
fn tool_lines(out: &mut String, snapshot: &InvocationToolSnapshot) {
    out.push_str("Your tools:\n");
    for spec in snapshot.tools.iter() {
        let Some(tool) = spec.name.builtin() else {
            line(out, &["- `", &spec.model_name, "`: ", &external_line(spec)]);
            continue;
        };
        let line_text = match tool {
            ToolName::WorkspaceListFiles => "see which files exist.",
            ToolName::WorkspaceSearchFiles => "find text in files.",
            ToolName::WorkspaceReadFile => "read a file before you change it.",
            ToolName::WorkspaceWriteFile => "create, replace or append to a file.",
            ToolName::WorkspaceApplyPatch => "replace exact text in a file you have read.",
            ToolName::WorkspaceCommit => "publish a file as the reply the user sees.",
            ToolName::WorkspaceFinish => "end your work once everything is done.",
            ToolName::AgentList => "find agents to call on.",
            ToolName::AgentDelegate => "give an agent a focused task that runs in the background.",
            ToolName::AgentAwait => "optional; wait only when your next step depends on a result.",
            ToolName::AgentCancelTask => "stop a task you delegated and no longer need.",
            ToolName::AgentHandoff => {
                "hand the rest of the job to another agent; once it succeeds, stop calling tools."
            }
            ToolName::TaskReturn => "hand your result back; this ends your task.",
            ToolName::SkillList => "see your skills.",
            ToolName::SkillSearch => "find skills by topic.",
            ToolName::SkillRead => "read a skill.",
        };
        line(out, &["- `", &spec.model_name, "`: ", line_text]);
    }
}

/// `parts` one after the other, then a line break: what `writeln!` would write, without going
/// through the formatter (a prompt is built for every agent).
fn line(out: &mut String, parts: &[&str]) {
    for part in parts {
        out.push_str(part);
    }
    out.push('\n');
}

/// `- {lead}{the roots}.` and a line break, the roots as [`roots_or`] writes them (`none`
/// when there are none).
fn roots_line(out: &mut String, lead: &str, roots: &[WorkspaceRoot]) {
    out.push_str(lead);
    push_roots(out, roots, "none");
    out.push_str(".\n");
}

/// The roots as `` `output/`, `scratch/` ``; `none` when there are none.
pub(crate) fn roots_or(roots: &[WorkspaceRoot], none: &str) -> String {
    let mut out = String::new();
    push_roots(&mut out, roots, none);
    out
}

/// [`roots_or`], appended to `out`.
fn push_roots(out: &mut String, roots: &[WorkspaceRoot], none: &str) {
    if roots.is_empty() {
        out.push_str(none);
        return;
    }
    for (i, root) in roots.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('`');
        out.push_str(root.name());
        out.push_str("/`");
    }
}

/// The generated default, with every tool's line (the `full` spec style).
pub fn default_system_prompt(snapshot: &InvocationToolSnapshot) -> String {
    default_system_prompt_in(snapshot, ToolSpecStyle::Full)
}

/// The generated default for a profile of spec style `style`: in the `compact` style the tool
/// list is the front matter's alone (each spec describes its tool), and only the tools that
/// come with a rule get a line.
pub fn default_system_prompt_in(snapshot: &InvocationToolSnapshot, style: ToolSpecStyle) -> String {
    // Room for the longest form (a writer's full prompt is about 1.5 KiB): written without
    // growing.
    let mut out = String::with_capacity(2048);
    tools_section(&mut out, snapshot, style);
    workspace_section(&mut out, snapshot);
    out.push('\n');
    rules_section(&mut out, snapshot, style);
    out
}

/// The front matter listing the tools, the mode line, and the tools' lines (in the compact
/// style, only those of the tools that come with a rule).
fn tools_section(out: &mut String, snapshot: &InvocationToolSnapshot, style: ToolSpecStyle) {
    let has = |tool: ToolName| snapshot.offers(tool);
    let name = |tool: ToolName| tool.model_alias();
    out.push_str("---\ntool_choice: required\ntools:\n");
    for model_name in snapshot.model_names() {
        line(out, &["  - ", model_name]);
    }
    out.push_str("---\n\n# Agent Mode is active.\n\n");
    match style {
        ToolSpecStyle::Full => {
            out.push_str("Every reply must be a tool call; plain text reaches no one.\n\n");
            tool_lines(out, snapshot);
        }
        ToolSpecStyle::Compact => {
            out.push_str(
                "Every reply must be a tool call; plain text reaches no one. Your tools are listed above.\n",
            );
            if has(ToolName::AgentAwait) {
                let _ = writeln!(
                    out,
                    "- `{}` is optional: wait only when your next step depends on a result.",
                    name(ToolName::AgentAwait)
                );
            }
            if has(ToolName::AgentHandoff) {
                let _ = writeln!(
                    out,
                    "- Once `{}` succeeds, stop calling tools.",
                    name(ToolName::AgentHandoff)
                );
            }
        }
    }
}

/// What the agent can see and write, and where its reply belongs.
fn workspace_section(out: &mut String, snapshot: &InvocationToolSnapshot) {
    let has = |tool: ToolName| snapshot.offers(tool);
    let visible = &snapshot.visible_roots;
    let writable = &snapshot.writable_roots;
    let delegated = has(ToolName::TaskReturn);
    out.push_str("\n## Workspace\n\n");
    if delegated {
        out.push_str("You share one workspace with the other agents on this job; the paths you see are the same paths they use.\n");
        roots_line(out, "- You can see these areas for this task: ", visible);
        roots_line(out, "- You can write inside: ", writable);
    } else {
        if visible == writable {
            roots_line(out, "- You can see and write: ", visible);
        } else {
            roots_line(out, "- You can see: ", visible);
            roots_line(out, "- You can write inside: ", writable);
        }
        let _ = writeln!(
            out,
            "- Your reply belongs in `{}`.",
            snapshot.message_body_path
        );
    }
    if visible.contains(&WorkspaceRoot::Persist) && writable.contains(&WorkspaceRoot::Persist) {
        out.push_str(
            "- `persist/` is memory for your later replies in this conversation: lasting facts only; it is saved when the job succeeds.\n",
        );
    }
}

/// The rule that ends the agent's work, and the basic flow of a foreground writer.
fn rules_section(out: &mut String, snapshot: &InvocationToolSnapshot, style: ToolSpecStyle) {
    let has = |tool: ToolName| snapshot.offers(tool);
    let name = |tool: ToolName| tool.model_alias();
    let delegated = has(ToolName::TaskReturn);
    if delegated {
        line(
            out,
            &[
                "# **Important**: Return your result only by calling `",
                name(ToolName::TaskReturn),
                "`; it ends your task.",
            ],
        );
        return;
    }
    let has_commit = has(ToolName::WorkspaceCommit);
    let has_finish = has(ToolName::WorkspaceFinish);
    let foreground = snapshot.presentation == Presentation::Foreground;
    if style == ToolSpecStyle::Compact && has_finish && has_commit && foreground {
        // The rule and the basic flow in one line.
        let _ = writeln!(
            out,
            "# **Important**: Write your reply to `{}`, publish it with `{}`, and once it is published end with `{}`.",
            snapshot.message_body_path,
            name(ToolName::WorkspaceCommit),
            name(ToolName::WorkspaceFinish)
        );
        return;
    }
    if has_finish && has_commit && foreground {
        let _ = writeln!(
            out,
            "# **Important**: Call `{}` successfully at least once before you call `{}`.",
            name(ToolName::WorkspaceCommit),
            name(ToolName::WorkspaceFinish)
        );
    } else if has_finish {
        let _ = writeln!(
            out,
            "# **Important**: This job runs in the background: you may call `{}` without publishing anything.",
            name(ToolName::WorkspaceFinish)
        );
    } else if has(ToolName::AgentHandoff) {
        let _ = writeln!(
            out,
            "# **Important**: You cannot end the job yourself: when your part is done, call `{}` so the next agent continues.",
            name(ToolName::AgentHandoff)
        );
    }
    if has_commit && has_finish {
        out.push_str("\n## Basic flow\n\n");
        let _ = writeln!(
            out,
            "1. Write the reply to `{}` with `{}`.",
            snapshot.message_body_path,
            name(ToolName::WorkspaceWriteFile)
        );
        let _ = writeln!(
            out,
            "2. Publish it with `{}`.",
            name(ToolName::WorkspaceCommit)
        );
        let _ = writeln!(out, "3. End with `{}`.", name(ToolName::WorkspaceFinish));
    }
}
