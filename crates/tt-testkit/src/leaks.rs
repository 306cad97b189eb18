//! One leak scanner, with one word list, for every test of model-facing text (tool specs,
//! system prompts, briefs, capsules, error texts): an agent must never read runtime structure,
//! where its configuration comes from, profile field names, ids or physical paths.

/// Lowercase fragments, matched case-insensitively anywhere: relationship and runtime words,
/// where skills and settings come from, and physical paths.
pub const LEAK_FRAGMENTS: &[&str] = &[
    "parent",
    "child",
    "invocation",
    "subagent",
    "runtime",
    "scope",
    "preset",
    "profile",
    "global",
    "maxreadchars",
    "per run",
    "/tmp",
    "/home",
    ".tt-agent",
    "skills/",
    "\\",
];

/// Whole words (split on anything but ASCII letters and digits), matched case-insensitively:
/// storage internals in prose. A label or JSON key (`sha256:`, `"sha256":`) is not prose: tool
/// results hand the model the hash it may pass back as a guard.
pub const LEAK_TOKENS: &[&str] = &["cas", "sha", "sha1", "sha256"];

/// Profile and contract field names, matched exactly (they are camelCase on purpose).
pub const LEAK_FIELDS: &[&str] = &[
    "canDelegate",
    "canHandoff",
    "callable",
    "allowAsSubagent",
    "allowAsHandoffTarget",
    "allowNestedDelegation",
    "allowedCallers",
    "descriptionForAgents",
    "maxConcurrentInvocations",
    "maxInvocationsPerRun",
    "maxHandoffDepth",
    "resultBudgetTokens",
    "maxRounds",
    "maxCallsPerRun",
    "maxCallsPerTool",
    "visibleRoots",
    "writableRoots",
    "directRunnable",
    "presentation",
    "messageBody",
    "exitPolicy",
    "profileId",
    "workspaceKey",
];

/// Id prefixes: `<prefix><digit…>`, `<prefix><8+ hex digits>` or `<prefix>root` is an id (so
/// `inv_root`, `run_0000…01` and `call_3f9a…` leak, while the tool alias `task_return` does not).
pub const ID_PREFIXES: &[&str] = &["inv_", "run_", "task_", "call_", "handoff_", "evt_"];

/// Every leak in `text`, in list order (fragments, tokens, fields, id prefixes), each once.
pub fn leaks_in(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut found: Vec<String> = Vec::new();
    let mut note = |leak: &str| {
        if !found.iter().any(|seen| seen == leak) {
            found.push(leak.to_owned());
        }
    };
    for fragment in LEAK_FRAGMENTS {
        if lower.contains(fragment) {
            note(fragment);
        }
    }
    let prose = LEAK_TOKENS.iter().fold(lower.clone(), |text, token| {
        text.replace(&format!("\"{token}\":"), " ")
            .replace(&format!("{token}:"), " ")
    });
    let words: Vec<&str> = prose.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    for token in LEAK_TOKENS {
        if words.contains(token) {
            note(token);
        }
    }
    for field in LEAK_FIELDS {
        if text.contains(field) {
            note(field);
        }
    }
    for word in lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        for prefix in ID_PREFIXES {
            if word.strip_prefix(prefix).is_some_and(looks_like_id) {
                note(prefix);
            }
        }
    }
    found
}

/// Like [`leaks_in`], for the texts that hand the agent task ids as the handles it passes back
/// (delegation results, capsules, task lists): a `task_…` id is allowed there, nothing else is.
pub fn leaks_in_with_task_handles(text: &str) -> Vec<String> {
    let mut found = leaks_in(text);
    found.retain(|leak| leak != "task_");
    found
}

fn looks_like_id(rest: &str) -> bool {
    rest == "root"
        || rest.starts_with(|c: char| c.is_ascii_digit())
        || (rest.len() >= 8 && rest.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Fails the test when `text` (from `origin`) leaks anything [`leaks_in`] finds.
#[track_caller]
pub fn assert_no_leaks(origin: &str, text: &str) {
    let found = leaks_in(text);
    assert!(found.is_empty(), "{origin} leaks {found:?}:\n{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scanner_catches_what_it_should_and_nothing_else() {
        assert_eq!(leaks_in("the parent agent"), ["parent"]);
        assert_eq!(leaks_in("from the global scope"), ["scope", "global"]);
        assert_eq!(leaks_in("guarded by sha"), ["sha"]);
        assert_eq!(leaks_in("see inv_123 and inv_root"), ["inv_"]);
        assert_eq!(leaks_in("task_00000000000000000000000000000003"), ["task_"]);
        assert_eq!(leaks_in("set maxRounds"), ["maxRounds"]);
        assert_eq!(leaks_in("C:\\Users"), ["\\"]);
        assert!(leaks_in("a shared shape").is_empty());
        assert!(leaks_in(r#"{"path":"output/main.md","sha256":"c6a6"}"#).is_empty());
        assert!(leaks_in("File: output/main.md\nsha256: c6a6").is_empty());
        assert!(leaks_in("Call task_return with your result.").is_empty());
        assert!(leaks_in("Read a skill's instructions").is_empty());
        assert!(leaks_in_with_task_handles("Task id: task_0001").is_empty());
        assert_eq!(
            leaks_in_with_task_handles("task_0001 of inv_root"),
            ["inv_"]
        );
    }
}
