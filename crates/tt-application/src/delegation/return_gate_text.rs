//! What the return gate (docs/delegation.md, "The return gate") writes to models: the grader's
//! request (its instructions, the rubric, the task and the result it grades), reading its
//! answer, and the notes a result sent back carries to the agent that returned it. Written to
//! each reader in its own terms: no ids, paths of the runtime, or "parent/child" wording.

use serde_json::Value;

/// A grader's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// `accept`, `revise` or `reject`.
    pub verdict: &'static str,
    pub notes: String,
}

/// The grader's system message: its profile's own instructions, if it has them, then how to
/// answer.
pub(crate) fn grader_system(instructions: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(instructions) = instructions.map(str::trim).filter(|text| !text.is_empty()) {
        out.push_str(instructions);
        out.push_str("\n\n");
    }
    out.push_str(
        "You review the result another agent handed back for a task, against a rubric. Answer with one JSON object and nothing else: {\"verdict\": \"accept\" | \"revise\" | \"reject\", \"notes\": \"...\"}.\n- `accept`: the result meets the rubric.\n- `revise`: it could meet the rubric with more work; say in `notes` exactly what to change.\n- `reject`: it cannot be fixed by revising; say why in `notes`.",
    );
    out
}

/// The grader's user message: the rubric, the task as it was briefed, and the result.
pub(crate) fn grader_request(rubric: &str, brief: &str, result: &Value) -> String {
    let result = serde_json::to_string_pretty(result).unwrap_or_default();
    format!(
        "## Rubric\n\n{}\n\n## The task\n\n{brief}\n\n## The result handed back\n\n```json\n{result}\n```",
        rubric.trim()
    )
}

/// Reads the grader's answer: the first JSON object in its text with a known `verdict`.
pub(crate) fn read_verdict(text: &str) -> Option<Verdict> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    let value: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    let verdict = match value.get("verdict")?.as_str()?.trim() {
        "accept" => "accept",
        "revise" => "revise",
        "reject" => "reject",
        _ => return None,
    };
    let notes = value
        .get("notes")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    Some(Verdict { verdict, notes })
}

/// What the agent reads when its result is sent back: the reviewer's notes and how many more
/// times it may be sent back.
pub(crate) fn sent_back(notes: &str, revisions_left: u32) -> String {
    let notes = if notes.trim().is_empty() {
        "(no notes given)"
    } else {
        notes.trim()
    };
    let left = match revisions_left {
        0 => "This was the last revision you get: your next result is final.".to_owned(),
        1 => "It can be sent back once more.".to_owned(),
        n => format!("It can be sent back {n} more times."),
    };
    format!(
        "Your result was reviewed and sent back for revision. Reviewer's notes: {notes}\n\nRevise your work, then hand your result back again. {left}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_grader_reads_its_instructions_the_rubric_the_task_and_the_result() {
        let system = grader_system(Some("You are a strict editor."));
        let request = grader_request(
            "Every slip names its scene.",
            "- **objective**: Find continuity slips.\n- **title**: Review",
            &json!({"status": "completed", "summary": "One slip: the storm starts twice."}),
        );
        let text = format!("{system}\n\n---\n\n{request}");
        tt_testkit::leaks::assert_no_leaks("the grader's request", &text);
        insta::assert_snapshot!("grader_request", text);
    }

    #[test]
    fn a_result_sent_back_reads_the_notes_and_what_is_left() {
        let text = [
            sent_back("Name the scene of each slip.", 2),
            sent_back("Say which storm.", 1),
            sent_back("", 0),
        ]
        .join("\n\n---\n\n");
        tt_testkit::leaks::assert_no_leaks("a result sent back", &text);
        insta::assert_snapshot!("sent_back", text);
    }

    #[test]
    fn a_verdict_is_read_from_the_first_json_object_with_a_known_verdict() {
        assert_eq!(
            read_verdict("Here: {\"verdict\": \"revise\", \"notes\": \" More. \"}"),
            Some(Verdict {
                verdict: "revise",
                notes: "More.".into()
            })
        );
        assert_eq!(
            read_verdict("{\"verdict\": \"accept\"}").map(|v| v.verdict),
            Some("accept")
        );
        assert_eq!(read_verdict("{\"verdict\": \"maybe\"}"), None);
        assert_eq!(read_verdict("looks fine"), None);
    }
}
