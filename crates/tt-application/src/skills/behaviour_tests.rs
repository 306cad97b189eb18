//! Behaviour tests of the skill tools against `tt_testkit`'s in-memory skills: list, search and
//! read over resolved skills, visibility and deny, the per-call and per-invocation read budget,
//! error codes, and the model-facing texts.

use std::sync::Arc;

use serde_json::{Value, json};
use tt_domain::ids::ProfileId;
use tt_domain::profile::{
    PresetMode, PresetRef, ProfileSource, SkillsSection, default_writer_definition, resolve_profile,
};
use tt_domain::skill::{SkillId, SkillScope, SkillScopeRefs};
use tt_domain::tool::ToolName;
use tt_ports::StorageError;
use tt_testkit::fakes::{InMemorySkills, SkillOp};

use super::specs::tests::leak_scan;
use super::{ResolvedSkills, SkillReadBudget, SkillToolEnv, execute, resolve_invocation_skills};
use crate::error::ToolCallError;
use crate::tools::ToolSuccess;
use crate::tools::test_calls::CallsTools;

const LIST: ToolName = ToolName::SkillList;
const SEARCH: ToolName = ToolName::SkillSearch;
const READ: ToolName = ToolName::SkillRead;

fn character() -> SkillScope {
    SkillScope::Character("alice".into())
}

fn writer_scope() -> SkillScope {
    SkillScope::Profile(ProfileId::parse("writer").unwrap())
}

const PACING_MD: &str = "---\nname: Scene pacing\ndescription: Keep scenes moving; cut what does not change the stakes.\n---\n# Scene pacing\n\nEvery scene must turn: something changes before it ends.\nCut the scene when nothing changes.\n\n## Checklist\n- Open late, leave early.\n- End on a question.\n";

/// The skills every test starts from: three global ones (one of them denied), one of the
/// writer's own, one of the character's.
fn library() -> Arc<InMemorySkills> {
    let skills = InMemorySkills::new();
    skills.put_skill(
        &SkillScope::Global,
        "scene-pacing",
        PACING_MD,
        &[
            (
                "examples/tight.md",
                "She opened the door. The room was already empty.",
            ),
            ("checklist.md", "- Open late\n- Leave early\n"),
        ],
    );
    skills.put_skill(
        &SkillScope::Global,
        "dialogue",
        "---\ndescription: Write dialogue that sounds like people talking.\n---\nLet subtext carry the meaning; people rarely say what they want.\n",
        &[],
    );
    skills.put_skill(
        &SkillScope::Global,
        "secret-notes",
        "---\ndescription: Notes nobody may read.\n---\nThe hidden twist: the butler lied.\n",
        &[],
    );
    skills.put_skill(
        &writer_scope(),
        "critique-rubric",
        "# Critique rubric\n\nScore each draft for pacing, voice and clarity.\n",
        &[],
    );
    skills.put_skill(
        &character(),
        "alice-voice",
        "---\ndescription: How Alice speaks.\n---\nShort sentences. Dry humour. Never says sorry.\n",
        &[],
    );
    skills
}

fn policy(per_call: u32, per_run: u32) -> SkillsSection {
    SkillsSection {
        visible: vec!["*".into()],
        deny: vec!["secret-notes".into()],
        max_read_chars_per_call: per_call,
        max_read_chars_per_run: per_run,
    }
}

/// One agent (profile `writer`, ambient preset and character) with its resolved skills and
/// read budget.
struct Agent {
    skills: Arc<InMemorySkills>,
    resolved: ResolvedSkills,
    policy: SkillsSection,
    budget: SkillReadBudget,
}

impl Agent {
    async fn new() -> Self {
        Self::new_with(library()).await
    }

    async fn new_with(skills: Arc<InMemorySkills>) -> Self {
        Self::with(skills, policy(20_000, 80_000)).await
    }

    async fn with(skills: Arc<InMemorySkills>, policy: SkillsSection) -> Self {
        let mut definition = default_writer_definition();
        definition.id = ProfileId::parse("writer").unwrap();
        definition.preset.mode = PresetMode::CurrentPromptSnapshot;
        definition.skills = policy.clone();
        let profile = resolve_profile(definition, ProfileSource::built_in()).unwrap();
        let refs = SkillScopeRefs {
            preset: Some(PresetRef {
                api_id: "openai".into(),
                name: "Default".into(),
            }),
            character_id: Some("alice".into()),
        };
        let resolved = resolve_invocation_skills(skills.as_ref(), &refs, &profile)
            .await
            .unwrap();
        Self {
            skills,
            resolved,
            policy,
            budget: SkillReadBudget::new(),
        }
    }
}

impl CallsTools for Agent {
    async fn call(&mut self, tool: ToolName, args: Value) -> Result<ToolSuccess, ToolCallError> {
        let env = SkillToolEnv {
            repo: self.skills.as_ref(),
            resolved: &self.resolved,
            policy: &self.policy,
            budget: &mut self.budget,
        };
        execute(tool, &args, env).await
    }
}

fn ids(structured: &Value, key: &str) -> Vec<String> {
    structured[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

// ----- list ---------------------------------------------------------------------------------

#[tokio::test]
async fn list_shows_visible_skills_as_id_and_description_lines() {
    let mut agent = Agent::new().await;
    let listed = agent.ok(LIST, json!({})).await;
    insta::assert_snapshot!(listed.content, @r"
    Skills you can read (4):
    - alice-voice: How Alice speaks.
    - critique-rubric: Score each draft for pacing, voice and clarity.
    - dialogue: Write dialogue that sounds like people talking.
    - scene-pacing: Keep scenes moving; cut what does not change the stakes.
    Read a skill with `skill_read` (`skill` = its id) before doing work it covers; `skill_search` finds skills by topic.
    ");
    insta::assert_json_snapshot!(listed.structured);
    assert!(listed.resource_refs.is_empty());
}

#[tokio::test]
async fn list_filters_by_query_words_and_limit() {
    let mut agent = Agent::new().await;
    let found = agent.ok(LIST, json!({"query": "  PACING "})).await;
    assert_eq!(
        ids(&found.structured, "skills"),
        ["critique-rubric", "scene-pacing"]
    );
    assert!(found.content.starts_with("Skills matching `PACING` (2):\n"));
    let both = agent.ok(LIST, json!({"query": "scene stakes"})).await;
    assert_eq!(ids(&both.structured, "skills"), ["scene-pacing"]);

    let none = agent.ok(LIST, json!({"query": "zeppelin"})).await;
    assert_eq!(
        none.content,
        "No skills match `zeppelin`. Call `skill_list` without `query` to see all of them."
    );
    assert_eq!(none.structured["total"], json!(0));

    let limited = agent.ok(LIST, json!({"limit": 2, "query": ""})).await;
    assert_eq!(
        ids(&limited.structured, "skills"),
        ["alice-voice", "critique-rubric"]
    );
    assert_eq!(limited.structured["truncated"], json!(true));
    assert_eq!(limited.structured["total"], json!(4));
    assert!(
        limited
            .content
            .contains("(Showing the first 2 of 4; narrow the list with `query`.)")
    );

    for bad in [
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"limit": "3"}),
        json!({"query": 3}),
        json!({"skill": "x"}),
        json!([]),
    ] {
        agent.refuses(LIST, bad, "tool.invalid_arguments").await;
    }
    assert_eq!(
        agent.ok(LIST, json!({"limit": 100})).await.structured["total"],
        json!(4)
    );
}

#[tokio::test]
async fn list_without_skills_says_so() {
    let mut agent = Agent::with(InMemorySkills::new(), policy(100, 100)).await;
    for args in [json!({}), json!({"query": "anything"})] {
        let listed = agent.ok(LIST, args).await;
        assert_eq!(listed.content, "No skills are available to you.");
    }
}

// ----- visibility ---------------------------------------------------------------------------

#[tokio::test]
async fn hidden_skills_answer_like_unknown_ones() {
    let mut agent = Agent::new().await;
    assert!(
        !agent
            .ok(LIST, json!({}))
            .await
            .content
            .contains("secret-notes")
    );
    let (code, hidden) = agent.fail(READ, json!({"skill": "secret-notes"})).await;
    assert_eq!(code, "skill.not_found");
    let (_, unknown) = agent.fail(READ, json!({"skill": "no-such-skill"})).await;
    assert_eq!(
        hidden.replace("secret-notes", "X"),
        unknown.replace("no-such-skill", "X")
    );
    let search = agent.ok(SEARCH, json!({"query": "butler twist"})).await;
    assert_eq!(search.structured["total"], json!(0));
    assert!(
        agent
            .skills
            .reads()
            .iter()
            .all(|(_, id, _)| id.as_str() != "secret-notes")
    );

    // Only listed ids are visible; the policy is checked again on every call.
    agent.policy.visible = vec!["dialogue".into(), "scene-pacing".into()];
    agent.policy.deny = vec!["scene-pacing".into()];
    assert_eq!(
        ids(&agent.ok(LIST, json!({})).await.structured, "skills"),
        ["dialogue"]
    );
    agent
        .refuses(READ, json!({"skill": "scene-pacing"}), "skill.not_found")
        .await;
    let search = agent.ok(SEARCH, json!({"query": "scene"})).await;
    assert_eq!(search.structured["total"], json!(0));
    agent.policy.deny = vec!["*".into()];
    assert_eq!(
        agent.ok(LIST, json!({})).await.content,
        "No skills are available to you."
    );
}

#[tokio::test]
async fn skill_ids_match_trimmed_and_ignoring_case() {
    let mut agent = Agent::new().await;
    let read = agent.ok(READ, json!({"skill": "  Scene-Pacing "})).await;
    assert_eq!(read.structured["skill"], json!("scene-pacing"));
    agent
        .refuses(READ, json!({"skill": "../scene-pacing"}), "skill.not_found")
        .await;
    agent
        .refuses(READ, json!({"skill": ""}), "skill.not_found")
        .await;
}

// ----- search -------------------------------------------------------------------------------

#[tokio::test]
async fn search_ranks_matches_and_shows_passages() {
    let mut agent = Agent::new().await;
    let found = agent.ok(SEARCH, json!({"query": "scene pacing"})).await;
    insta::assert_snapshot!(found.content, @r"
    Skills matching `scene pacing` (2):
    - scene-pacing: Keep scenes moving; cut what does not change the stakes.
      SKILL.md line 5: # Scene pacing
    - critique-rubric: Score each draft for pacing, voice and clarity.
      SKILL.md line 3: Score each draft for pacing, voice and clarity.
    Read a skill with `skill_read` (`skill` = its id).
    ");
    insta::assert_json_snapshot!(found.structured);

    // Body text counts: `subtext` only appears below the frontmatter of `dialogue`.
    let body = agent.ok(SEARCH, json!({"query": "SUBTEXT"})).await;
    assert_eq!(ids(&body.structured, "hits"), ["dialogue"]);
    assert_eq!(body.structured["hits"][0]["line"], json!(4));

    // Frontmatter keys are not searched as text, only the name and description they set.
    let meta = agent.ok(SEARCH, json!({"query": "description"})).await;
    assert_eq!(meta.structured["total"], json!(0));

    let limited = agent
        .ok(SEARCH, json!({"query": "pacing", "limit": 1}))
        .await;
    assert_eq!(ids(&limited.structured, "hits"), ["scene-pacing"]);
    assert!(
        limited
            .content
            .contains("(Showing the best 1 of 2; use more specific words to narrow it.)")
    );
}

#[tokio::test]
async fn search_with_no_hits_is_a_success() {
    let mut agent = Agent::new().await;
    let none = agent.ok(SEARCH, json!({"query": "zeppelin"})).await;
    assert_eq!(
        none.content,
        "No skills match `zeppelin`. Call `skill_list` to see every skill you can read."
    );
    assert_eq!(
        none.structured,
        json!({"query": "zeppelin", "total": 0, "truncated": false, "hits": []})
    );
    for bad in [
        json!({}),
        json!({"query": "   "}),
        json!({"query": 1}),
        json!({"query": "x", "limit": 31}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "path": "SKILL.md"}),
    ] {
        agent.refuses(SEARCH, bad, "tool.invalid_arguments").await;
    }
}

#[tokio::test]
async fn search_uses_what_is_known_when_a_skill_went_away_and_fails_fast_on_io() {
    let mut agent = Agent::new().await;
    agent.skills.remove_skill(
        &SkillScope::Global,
        &SkillId::parse("scene-pacing").unwrap(),
    );
    let found = agent.ok(SEARCH, json!({"query": "stakes"})).await;
    assert_eq!(ids(&found.structured, "hits"), ["scene-pacing"]);
    assert_eq!(found.structured["hits"][0]["snippet"], Value::Null);

    agent.skills.fail_next(
        SkillOp::Read,
        StorageError::io("skills/global", "disk gone"),
    );
    let err = agent.fatal(SEARCH, json!({"query": "voice"})).await;
    assert_eq!(err.code(), "agent.storage_io");
}

// ----- read ---------------------------------------------------------------------------------

#[tokio::test]
async fn read_defaults_to_skill_md_and_names_the_other_files() {
    let mut agent = Agent::new().await;
    let read = agent.ok(READ, json!({"skill": "scene-pacing"})).await;
    insta::assert_snapshot!(read.content);
    insta::assert_json_snapshot!(read.structured);
    assert_eq!(read.resource_refs, ["skill:scene-pacing/SKILL.md"]);
    assert_eq!(agent.budget.used_chars(), PACING_MD.chars().count() as u64);

    let other = agent
        .ok(
            READ,
            json!({"skill": "scene-pacing", "path": "./examples/tight.md"}),
        )
        .await;
    assert!(
        other
            .content
            .ends_with("She opened the door. The room was already empty.")
    );
    assert!(!other.content.contains("Other files"));
    let alone = agent.ok(READ, json!({"skill": "dialogue"})).await;
    assert!(!alone.content.contains("Other files"));
}

#[tokio::test]
async fn read_path_errors() {
    let mut agent = Agent::new().await;
    for path in [
        "missing.md",
        "../dialogue/SKILL.md",
        "examples",
        "/SKILL.md",
        "skill.md",
    ] {
        let (code, message) = agent
            .fail(READ, json!({"skill": "scene-pacing", "path": path}))
            .await;
        assert_eq!(code, "skill.file_not_found", "{path}");
        assert!(message.contains("`examples/tight.md`"), "{message}");
    }
    for bad in [
        json!({}),
        json!({"skill": 1}),
        json!({"skill": "dialogue", "path": 2}),
        json!({"skill": "dialogue", "start_char": -1}),
        json!({"skill": "dialogue", "max_chars": 0}),
        json!({"skill": "dialogue", "start_line": 1}),
    ] {
        agent.refuses(READ, bad, "tool.invalid_arguments").await;
    }
    assert_eq!(agent.budget.used_chars(), 0, "failed reads cost nothing");
}

#[tokio::test]
async fn reads_are_capped_per_call_and_continue_with_start_char() {
    let skills = library();
    let long = long_guide();
    skills.put_skill(&SkillScope::Global, "long-guide", &long, &[]);
    let mut agent = Agent::with(skills, policy(100, 10_000)).await;

    let first = agent.ok(READ, json!({"skill": "long-guide"})).await;
    insta::assert_snapshot!(first.content);
    assert_eq!(first.structured["chars"], json!(100));
    assert_eq!(first.structured["nextStartChar"], json!(100));

    let second = agent
        .ok(
            READ,
            json!({"skill": "long-guide", "start_char": 100, "max_chars": 1000}),
        )
        .await;
    assert_eq!(
        second.structured["chars"],
        json!(100),
        "max_chars cannot pass the per-read cap"
    );
    assert_eq!(second.structured["startChar"], json!(100));
    let small = agent
        .ok(
            READ,
            json!({"skill": "long-guide", "start_char": 200, "max_chars": 24}),
        )
        .await;
    assert_eq!(small.structured["chars"], json!(24));
    assert!(
        small.content.contains(
            "\n\nne 09 of the guide.\nLine\n\n(The file continues: read on with start_char=224.)"
        ),
        "{}",
        small.content
    );

    let total = long.chars().count();
    let last = agent
        .ok(
            READ,
            json!({"skill": "long-guide", "start_char": total - 10}),
        )
        .await;
    assert!(
        last.content
            .ends_with("guide.\n\n\n(This is the end of the file.)"),
        "{}",
        last.content
    );
    assert_eq!(last.structured["nextStartChar"], Value::Null);
    let (code, message) = agent
        .fail(READ, json!({"skill": "long-guide", "start_char": total}))
        .await;
    assert_eq!(code, "tool.invalid_arguments");
    assert!(message.contains("past the end"), "{message}");
    assert_eq!(agent.budget.used_chars(), 100 + 100 + 24 + 10);
}

/// 30 lines of 22 chars: 660 chars.
fn long_guide() -> String {
    (0..30)
        .map(|n| format!("Line {n:02} of the guide.\n"))
        .collect()
}

#[tokio::test]
async fn the_per_invocation_budget_spans_reads_and_then_runs_out() {
    let skills = library();
    skills.put_skill(&SkillScope::Global, "long-guide", &long_guide(), &[]);
    let mut agent = Agent::with(skills, policy(200, 450)).await;
    let first = agent.ok(READ, json!({"skill": "long-guide"})).await;
    assert_eq!(first.structured["chars"], json!(200));
    assert_eq!(first.structured["readCharsLeft"], json!(250));
    let second = agent
        .ok(READ, json!({"skill": "long-guide", "start_char": 200}))
        .await;
    assert_eq!(second.structured["readCharsLeft"], json!(50));
    let third = agent
        .ok(READ, json!({"skill": "long-guide", "start_char": 400}))
        .await;
    assert_eq!(third.structured["chars"], json!(50), "cut to what is left");
    assert_eq!(third.structured["readCharsLeft"], json!(0));
    insta::assert_snapshot!(third.content);

    for skill in ["long-guide", "dialogue"] {
        let (code, message) = agent.fail(READ, json!({"skill": skill})).await;
        assert_eq!(code, "skill.read_budget_exhausted");
        assert!(message.contains("450"), "{message}");
    }
    assert_eq!(agent.budget.used_chars(), 450);
    // Listing and searching do not spend the reading budget.
    agent.ok(LIST, json!({})).await;
    agent.ok(SEARCH, json!({"query": "guide"})).await;

    // A new invocation starts with a fresh budget.
    agent.budget = SkillReadBudget::new();
    agent.ok(READ, json!({"skill": "dialogue"})).await;
}

#[tokio::test]
async fn empty_files_read_as_empty() {
    let skills = library();
    skills.put_skill(&SkillScope::Global, "blank", "", &[("empty.md", "")]);
    let mut agent = Agent::new_with(skills).await;
    let read = agent
        .ok(READ, json!({"skill": "blank", "path": "empty.md"}))
        .await;
    assert!(
        read.content.ends_with("(The file is empty.)"),
        "{}",
        read.content
    );
    assert_eq!(read.structured["wholeFile"], json!(true));
    agent
        .refuses(
            READ,
            json!({"skill": "blank", "path": "empty.md", "start_char": 1}),
            "tool.invalid_arguments",
        )
        .await;
}

#[tokio::test]
async fn read_failures_map_to_recoverable_codes_or_fail_fast() {
    let skills = library();
    skills.put_file_bytes(
        &SkillScope::Global,
        &SkillId::parse("dialogue").unwrap(),
        &tt_domain::skill::SkillFilePath::parse("image.bin").unwrap(),
        vec![0xff, 0x00],
    );
    let mut agent = Agent::new_with(skills).await;
    agent
        .refuses(
            READ,
            json!({"skill": "dialogue", "path": "image.bin"}),
            "skill.file_unreadable",
        )
        .await;

    agent
        .skills
        .remove_skill(&SkillScope::Global, &SkillId::parse("dialogue").unwrap());
    agent
        .refuses(READ, json!({"skill": "dialogue"}), "skill.file_not_found")
        .await;

    for error in [
        StorageError::io("skills/global/scene-pacing/SKILL.md", "disk gone"),
        StorageError::SymlinkEscape {
            path: "skills/global/scene-pacing".into(),
        },
    ] {
        let code = error.code();
        agent.skills.fail_next(SkillOp::Read, error);
        let err = agent.fatal(READ, json!({"skill": "scene-pacing"})).await;
        assert_eq!(err.code(), code);
    }
    assert_eq!(agent.budget.used_chars(), 0);
}

#[tokio::test]
async fn reads_use_the_winning_copy() {
    let skills = library();
    skills.put_skill(
        &character(),
        "dialogue",
        "---\ndescription: Alice's way of talking.\n---\nAlice answers questions with questions.\n",
        &[],
    );
    let mut agent = Agent::new_with(skills).await;
    let read = agent.ok(READ, json!({"skill": "dialogue"})).await;
    assert!(
        read.content
            .contains("Alice answers questions with questions.")
    );
    let (scope, _, _) = agent.skills.reads().pop().unwrap();
    assert_eq!(scope, character());
    let listed = agent.ok(LIST, json!({"query": "dialogue"})).await;
    assert!(
        listed
            .content
            .contains("- dialogue: Alice's way of talking.")
    );
}

#[tokio::test]
async fn other_tools_are_not_executed_here() {
    let mut agent = Agent::new().await;
    for tool in ToolName::ALL {
        if matches!(tool, LIST | SEARCH | READ) {
            continue;
        }
        let err = agent.fatal(tool, json!({})).await;
        assert_eq!(err.code(), "agent.internal_error", "{tool}");
    }
}

/// Every recoverable message an agent can get from these tools, reviewed as one snapshot.
#[tokio::test]
async fn error_messages_snapshot() {
    let skills = library();
    skills.put_file_bytes(
        &SkillScope::Global,
        &SkillId::parse("dialogue").unwrap(),
        &tt_domain::skill::SkillFilePath::parse("image.bin").unwrap(),
        vec![0xff],
    );
    let mut agent = Agent::with(skills, policy(10, 10)).await;
    let cases: Vec<(ToolName, Value)> = vec![
        (LIST, json!({"limit": 0})),
        (LIST, json!({"extra": true})),
        (LIST, json!("not an object")),
        (SEARCH, json!({"query": " "})),
        (SEARCH, json!({})),
        (READ, json!({"skill": "secret-notes"})),
        (READ, json!({"skill": "scene-pacing", "path": "nope.md"})),
        (READ, json!({"skill": "dialogue", "path": "image.bin"})),
        (READ, json!({"skill": "dialogue", "start_char": -3})),
        (READ, json!({"skill": "dialogue", "max_chars": 0})),
        (READ, json!({"skill": "dialogue", "start_char": 5000})),
    ];
    let mut lines = Vec::new();
    for (tool, args) in cases {
        let (code, message) = agent.fail(tool, args.clone()).await;
        lines.push(format!(
            "{} {args}\n  {code}: {message}",
            tool.model_alias()
        ));
    }
    // Spend the whole budget, then ask for more.
    agent.ok(READ, json!({"skill": "dialogue"})).await;
    let args = json!({"skill": "dialogue", "start_char": 10});
    let (code, message) = agent.fail(READ, args.clone()).await;
    lines.push(format!("skill_read {args}\n  {code}: {message}"));
    insta::assert_snapshot!(lines.join("\n"));
}

#[tokio::test]
async fn model_facing_texts_avoid_runtime_terms() {
    let mut agent = Agent::with(library(), policy(120, 10_000)).await;
    let mut texts = vec![
        agent.ok(LIST, json!({})).await.content,
        agent.ok(LIST, json!({"limit": 1})).await.content,
        agent.ok(LIST, json!({"query": "zeppelin"})).await.content,
        agent
            .ok(SEARCH, json!({"query": "pacing voice"}))
            .await
            .content,
        agent.ok(SEARCH, json!({"query": "zeppelin"})).await.content,
        agent
            .ok(READ, json!({"skill": "scene-pacing"}))
            .await
            .content,
        agent
            .ok(READ, json!({"skill": "scene-pacing", "start_char": 120}))
            .await
            .content,
    ];
    for (tool, args) in [
        (READ, json!({"skill": "secret-notes"})),
        (READ, json!({"skill": "scene-pacing", "path": "x.md"})),
        (READ, json!({"skill": "dialogue", "start_char": 999})),
        (SEARCH, json!({"query": ""})),
        (LIST, json!({"limit": 500})),
    ] {
        texts.push(agent.fail(tool, args).await.1);
    }
    for text in texts {
        let found = leak_scan(&text);
        assert!(found.is_empty(), "{found:?} in {text:?}");
    }
    let structured = [
        agent.ok(LIST, json!({})).await.structured,
        agent.ok(SEARCH, json!({"query": "alice"})).await.structured,
        agent
            .ok(READ, json!({"skill": "alice-voice"}))
            .await
            .structured,
    ];
    for value in structured {
        let text = value.to_string();
        for leak in ["scope", "character", "preset", "profile", "global"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
    }
}
