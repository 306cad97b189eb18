//! `tt-agent demo`: the bundled writers' room on the embedded defaults (userdata store,
//! scripted model, transcript commit bridge), shown live as an agent tree.
//!
//! A writer drafts a scene, asks a continuity critic and a style advisor for notes in one turn,
//! keeps working, waits for both, revises and hands off to a final editor, who polishes,
//! publishes and finishes. The critic hands one claim on to a fact checker first (a nested
//! delegation: the writer's profile allows depth 2), so the agent tree is three levels deep.
//! Mid-run the user sends one line of guidance, which the writer reads before its next step.

use anyhow::Context as _;
use std::sync::Arc;
use tt_runtime::{
    AgentProfileDefinition, PromptMessage, PromptRole, ScriptedProvider, StartRunRequest,
    SubmitGuidanceRequest,
};

const SCRIPT: &str = include_str!("../scenarios/writers-room/script.json");
/// A global skill the writer reads before drafting.
const SCENE_CRAFT_SKILL: &str = include_str!("../scenarios/writers-room/skill-scene-craft.md");
/// The style advisor's preset (`preset.mode = "ref"`): its prompt is assembled from this template.
const ADVISOR_PRESET: &str = include_str!("../scenarios/writers-room/preset-advisors.json");
/// The scripted user's guidance, sent while the writer is between its sixth and seventh model
/// requests (the writer's seventh answer, scripted, follows it).
pub(crate) const DEMO_GUIDANCE: &str = "End the scene on a sound from the sea.";
/// The writer's model round whose answer is held until the guidance is queued.
const GUIDANCE_AFTER_WRITER_ROUND: u32 = 6;

const PROFILES: [(&str, &str); 5] = [
    (
        "writer",
        include_str!("../scenarios/writers-room/writer.json"),
    ),
    (
        "continuity-critic",
        include_str!("../scenarios/writers-room/continuity-critic.json"),
    ),
    (
        "style-advisor",
        include_str!("../scenarios/writers-room/style-advisor.json"),
    ),
    (
        "final-editor",
        include_str!("../scenarios/writers-room/final-editor.json"),
    ),
    (
        "fact-checker",
        include_str!("../scenarios/writers-room/fact-checker.json"),
    ),
];

/// The bundled script with a `delayMs` of `pace_ms` on every answer (unchanged for 0).
fn paced_script(pace_ms: u64) -> anyhow::Result<String> {
    if pace_ms == 0 {
        return Ok(SCRIPT.to_owned());
    }
    let mut script: serde_json::Value =
        serde_json::from_str(SCRIPT).context("the bundled demo script is invalid")?;
    if let Some(agents) = script
        .get_mut("agents")
        .and_then(serde_json::Value::as_object_mut)
    {
        for entry in agents
            .values_mut()
            .filter_map(serde_json::Value::as_array_mut)
            .flatten()
        {
            if let Some(entry) = entry.as_object_mut() {
                entry.insert("delayMs".to_owned(), pace_ms.into());
            }
        }
    }
    Ok(script.to_string())
}

/// The scripted model playing the writers' room, each answer `pace_ms` late.
pub(crate) fn writers_room_provider(pace_ms: u64) -> anyhow::Result<ScriptedProvider> {
    ScriptedProvider::from_json_str(&paced_script(pace_ms)?)
        .context("the bundled demo script is invalid")
}

/// Installs the writers' room into a runtime's store: the advisors' preset, the scene-craft
/// skill and the five profiles.
pub(crate) async fn install_writers_room(runtime: &tt_runtime::AgentRuntime) -> anyhow::Result<()> {
    let advisors: serde_json::Value =
        serde_json::from_str(ADVISOR_PRESET).context("the bundled advisors preset is invalid")?;
    runtime
        .save_preset_template("writers-room", "advisors", &advisors)
        .await
        .context("installing the advisors preset")?;
    runtime
        .save_skill_file(
            &tt_runtime::SkillScope::Global,
            "scene-craft",
            "SKILL.md",
            SCENE_CRAFT_SKILL,
        )
        .await
        .context("installing the scene-craft skill")?;
    for (name, text) in PROFILES {
        let definition: AgentProfileDefinition = serde_json::from_str(text)
            .with_context(|| format!("the bundled profile `{name}` does not parse"))?;
        runtime
            .save_profile(definition)
            .await
            .with_context(|| format!("the bundled profile `{name}` is invalid"))?;
    }
    Ok(())
}

/// The demo's conversation: `tt-agent resume` recognises its runs by it.
pub(crate) const DEMO_CHAT_ID: &str = "demo-conversation";

/// The request the demo sends (also the inspector's prefilled request).
pub(crate) const DEMO_REQUEST: &str =
    "Write a short scene about a lighthouse keeper during a storm.";

pub(crate) async fn run_demo(
    storage: &crate::storage::Storage,
    pace_ms: u64,
    signals: &tt_runtime::StopSignals,
) -> anyhow::Result<()> {
    let provider = writers_room_provider(pace_ms)?;
    // The writer's sixth answer waits until the guidance is queued, so the writer reads it before
    // its seventh request in every run.
    let cue = provider.hold_after("writer", GUIDANCE_AFTER_WRITER_ROUND);
    let runtime = storage.running(Arc::new(provider)).build()?;
    install_writers_room(&runtime).await?;
    println!(
        "tt-agent demo: the writers' room (a writer, two reviewers, a fact checker and a final editor on a scripted model)"
    );
    println!("{}\n", storage.describe());
    if signals.is_requested() {
        anyhow::bail!("stopped by a signal before the run started");
    }
    let run = signals.shielded(runtime
        .start_run(StartRunRequest {
            stable_chat_id: DEMO_CHAT_ID.to_owned(),
            conversation_kind: tt_runtime::ConversationKind::Character,
            chat_ref: serde_json::json!({"kind": "character", "characterId": "narrator", "fileName": "demo"}),
            generation_type: serde_json::json!("normal"),
            profile_id: Some("writer".to_owned()),
            history: vec![PromptMessage { role: PromptRole::Assistant, content: "The storm is coming.".to_owned() }],
            user_request: Some(DEMO_REQUEST.to_owned()),
            persist_base_state_id: None,
            skill_scope_refs: Default::default(),
            connection_ref: None,
            generation: Default::default(),
        }))
        .await?;
    let guide = async {
        cue.reached().await;
        let sent = runtime
            .submit_guidance(
                run.id.as_str(),
                SubmitGuidanceRequest {
                    text: DEMO_GUIDANCE.to_owned(),
                    client_guidance_id: Some("demo-guidance".to_owned()),
                },
            )
            .await;
        cue.release();
        sent
    };
    let follow = crate::live::follow(&runtime, &run, signals, "started");
    tokio::pin!(guide, follow);
    let mut guided = false;
    let finished = loop {
        tokio::select! {
            finished = &mut follow => break finished?,
            sent = &mut guide, if !guided => {
                guided = true;
                // Refused only when the run is already stopping (a Ctrl-C): the run's own end
                // says what happened.
                if let Err(error) = sent {
                    println!("(the demo's guidance was refused [{}]: {})", error.code, error.message);
                }
            }
        }
    };
    crate::live::completed_or_why(&finished, "the demo run")
}
