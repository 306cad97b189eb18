//! Skills as agents use them: resolved per invocation (scope order and overrides, visibility),
//! recorded, and read through the three skill tools within budget.

use serde_json::json;
use tt_domain::ids::InvocationId;
use tt_domain::run::AgentRunStatus;
use tt_domain::skill::{SkillScope, SkillScopeRefs};
use tt_ports::RunDocument;

use crate::support::*;

/// The stored skill resolution of agent `invocation`.
fn resolved_skills(
    h: &Harness,
    run_id: &tt_domain::ids::RunId,
    invocation: InvocationId,
) -> serde_json::Value {
    h.store
        .document(run_id, &RunDocument::InvocationResolvedSkills(invocation))
        .unwrap()
}

fn skilled(id: &str) -> tt_domain::profile::AgentProfileDefinition {
    custom_profile(id, |p| {
        for (index, tool) in ["skill.list", "skill.search", "skill.read"]
            .into_iter()
            .enumerate()
        {
            p.tools.allow.insert(index, tool.to_owned());
        }
        p.skills.deny = vec!["secret-recipe".into()];
        p.skills.max_read_chars_per_call = 40;
        p.skills.max_read_chars_per_run = 60;
    })
}

#[tokio::test]
async fn skills_are_resolved_recorded_and_read_within_budget() {
    let mut turns = vec![turn(vec![
        call("l", "skill_list", json!({})),
        call("r1", "skill_read", json!({"skill": "scene-craft"})),
        call(
            "r2",
            "skill_read",
            json!({"skill": "scene-craft", "start_char": 40}),
        ),
        call(
            "r3",
            "skill_read",
            json!({"skill": "scene-craft", "start_char": 80}),
        ),
        call("hidden", "skill_read", json!({"skill": "secret-recipe"})),
    ])];
    turns.extend(happy_turns());
    let h = harness(by_turn(turns));
    h.put_profile(skilled("skilled"));
    let long_body = "x".repeat(200);
    h.skills.put_skill(
        &SkillScope::Global,
        "scene-craft",
        &format!("---\nname: Scene craft\ndescription: Global version.\n---\n{long_body}"),
        &[],
    );
    // The character scope comes later and overrides the global skill with the same id.
    h.skills.put_skill(
        &SkillScope::Character("c1".into()),
        "scene-craft",
        &format!("---\nname: Scene craft\ndescription: How this character's scenes are written.\n---\n{long_body}"),
        &[],
    );
    h.skills.put_skill(
        &SkillScope::Global,
        "secret-recipe",
        "---\nname: Secret\ndescription: Hidden.\n---\nno",
        &[],
    );
    let mut start = request(Some("skilled"));
    start.skill_scope_refs = SkillScopeRefs {
        preset: None,
        character_id: Some("c1".into()),
    };
    let run = h.run_to_end(start).await;
    assert_eq!(run.status, AgentRunStatus::Completed);

    let document = resolved_skills(&h, &run.id, InvocationId::root());
    let effective = document["effectiveSkills"].as_array().unwrap();
    assert_eq!(
        effective.len(),
        1,
        "the denied skill is not offered: {document}"
    );
    assert_eq!(effective[0]["id"], "scene-craft");
    assert_eq!(
        effective[0]["description"],
        "How this character's scenes are written."
    );
    let event = h.first_event(&run.id, "skill_scopes_resolved");
    assert_eq!(event.payload["eventScope"]["invocationId"], "inv_root");

    let results = tool_results(&h.model.requests()[1]);
    assert!(
        results[0].3.contains("scene-craft") && !results[0].3.contains("secret-recipe"),
        "{}",
        results[0].3
    );
    assert!(
        !results[1].1 && !results[2].1,
        "two reads within the run budget"
    );
    assert_eq!(results[3].2.as_deref(), Some("skill.read_budget_exhausted"));
    assert_eq!(
        results[4].2.as_deref(),
        Some("skill.not_found"),
        "a denied skill looks like an unknown one"
    );
}

#[tokio::test]
async fn a_delegated_agent_gets_its_own_skill_scope() {
    let model = writer_delegating_to_critic(
        "Use your skill.",
        vec![
            turn(vec![call("l", "skill_list", json!({}))]),
            task_return("r", "ok"),
        ],
    );
    let h = harness(model);
    h.put_profile(delegator("writer"));
    h.put_profile({
        let mut critic = reviewer("critic");
        critic.tools.allow.push("skill.list".into());
        critic
    });
    h.skills.put_skill(
        &SkillScope::Profile(tt_domain::ids::ProfileId::parse("critic").unwrap()),
        "review-checklist",
        "---\nname: Checklist\ndescription: What a review covers.\n---\n- motive",
        &[],
    );
    let run = h.run_completed(request(Some("writer"))).await;
    let child = h.store.tasks(&run.id)[0].child_invocation_id.clone();
    let document = resolved_skills(&h, &run.id, child);
    assert_eq!(document["effectiveSkills"][0]["id"], "review-checklist");
    // The writer's own scope does not include the critic's profile skills.
    let root = resolved_skills(&h, &run.id, InvocationId::root());
    assert!(root["effectiveSkills"].as_array().unwrap().is_empty());
    let critic = last_request_of(&h, "critic");
    assert!(tool_results(&critic)[0].3.contains("review-checklist"));
}
