//! The note an agent started in fork mode reads after the conversation it was forked from and
//! before its brief (docs/delegation.md, "Fork mode"): from here on it works on one task of its
//! own, which of the tools listed it may use, what it may read and write, and that a plain
//! answer (no tool call) is its result. Written to the agent in its own terms: no ids, no
//! storage paths, no word of who delegated to whom.

use std::fmt::Write as _;
use tt_domain::workspace::WorkspaceRoot;

/// What the note is made of.
#[derive(Debug)]
pub(crate) struct ForkNote<'a> {
    /// Model names of the tools it may use: those of the listed tools its own policy allows.
    pub tools: Vec<&'a str>,
    pub visible_roots: &'a [WorkspaceRoot],
    pub writable_roots: &'a [WorkspaceRoot],
    /// Its profile's own written instructions (`instructions.agentSystemPrompt`), if any.
    pub instructions: Option<&'a str>,
    /// The rendered task brief.
    pub brief: &'a str,
}

/// The note, then the brief: one user message.
pub(crate) fn render_fork_note(note: &ForkNote<'_>) -> String {
    let mut out = String::from(
        "# Your own task starts here\n\nEverything above is what you know so far. From here on you work on one task of your own, described below. Do only that task: do not carry on with the earlier work or answer earlier requests.\n\n",
    );
    if note.tools.is_empty() {
        out.push_str("- Tools: use none of the tools listed; work from what you know.\n");
    } else {
        let tools: Vec<String> = note.tools.iter().map(|name| format!("`{name}`")).collect();
        let _ = writeln!(
            out,
            "- Tools: of the tools listed, use only {}. The others are not yours for this task.",
            tools.join(", ")
        );
    }
    let writes = if note.writable_roots.is_empty() {
        "you cannot write files".to_owned()
    } else {
        format!("you can write in {}", roots(note.writable_roots))
    };
    let _ = writeln!(
        out,
        "- Files: you can read {}; {writes}.",
        roots(note.visible_roots)
    );
    out.push_str(
        "- To finish, answer in plain text without calling a tool. That answer is your result and ends your task, so make it complete: what you did, what you found, and which files you wrote.",
    );
    if !note.tools.is_empty() {
        out.push_str(" Until then, every reply is a tool call.");
    }
    out.push('\n');
    if let Some(instructions) = note
        .instructions
        .map(str::trim)
        .filter(|text| !text.is_empty())
    {
        let _ = write!(out, "\n## Your instructions\n\n{instructions}\n");
    }
    out.push('\n');
    out.push_str(note.brief);
    out
}

fn roots(roots: &[WorkspaceRoot]) -> String {
    crate::prompt::roots_or(roots, "no files")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brief() -> String {
        crate::delegation::rendering::render_fork_brief(&tt_domain::brief::StoredBrief::Task(
            serde_json::from_value(serde_json::json!({
                "title": "Check chapter 2",
                "objective": "Find continuity slips in output/chapter-02.md.",
            }))
            .expect("a task brief"),
        ))
    }

    #[test]
    fn fork_note_with_tools_roots_and_instructions() {
        let brief = brief();
        let note = render_fork_note(&ForkNote {
            tools: vec!["workspace_read_file", "workspace_write_file"],
            visible_roots: &[WorkspaceRoot::Output, WorkspaceRoot::Plan],
            writable_roots: &[WorkspaceRoot::Plan],
            instructions: Some("You are a careful continuity critic."),
            brief: &brief,
        });
        tt_testkit::leaks::assert_no_leaks("fork note", &note);
        insta::assert_snapshot!("fork_note", note);
    }

    #[test]
    fn fork_note_without_tools_or_writes() {
        let brief = brief();
        let note = render_fork_note(&ForkNote {
            tools: Vec::new(),
            visible_roots: &[WorkspaceRoot::Output],
            writable_roots: &[],
            instructions: None,
            brief: &brief,
        });
        tt_testkit::leaks::assert_no_leaks("fork note", &note);
        insta::assert_snapshot!("fork_note_read_only", note);
    }
}
