//! The skills area on disk: where `put_skill_file` puts skills, what a listing skips (hidden,
//! temp, badly named, too deep), and that links leaving the skills root are refused while links
//! inside it work.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use tt_domain::ids::ProfileId;
use tt_domain::skill::{SkillFilePath, SkillId, SkillScope, skill_storage_segment};
use tt_ports::{SkillFileRef, SkillRepository, StorageError};

use super::{Fixture, assert_escape, files_under};

fn sid(raw: &str) -> SkillId {
    SkillId::parse(raw).unwrap()
}

fn sfp(raw: &str) -> SkillFilePath {
    SkillFilePath::parse(raw).unwrap()
}

fn skills_root(fx: &Fixture) -> PathBuf {
    fx.data_root().join("skills")
}

fn put(fx: &Fixture, scope: &SkillScope, id: &str, path: &str, text: &str) {
    fx.store
        .put_skill_file(SkillFileRef::new(scope, &sid(id), &sfp(path)), text)
        .unwrap();
}

async fn ids(fx: &Fixture, scope: &SkillScope) -> Vec<String> {
    fx.store
        .list_skills(scope)
        .await
        .unwrap()
        .into_iter()
        .map(|skill| skill.id.to_string())
        .collect()
}

#[tokio::test]
async fn skills_land_where_the_layout_says() {
    let fx = Fixture::new();
    put(&fx, &SkillScope::Global, "pacing", "SKILL.md", "# Pacing\n");
    put(&fx, &SkillScope::Global, "pacing", "refs/beats.md", "beats");
    put(
        &fx,
        &SkillScope::Preset {
            api_id: "openai".into(),
            name: "Default".into(),
        },
        "voice",
        "SKILL.md",
        "v",
    );
    let mapped = skill_storage_segment("My Preset").unwrap();
    put(
        &fx,
        &SkillScope::Preset {
            api_id: "openai".into(),
            name: "My Preset".into(),
        },
        "voice",
        "SKILL.md",
        "v",
    );
    put(
        &fx,
        &SkillScope::Profile(ProfileId::parse("critic").unwrap()),
        "rubric",
        "SKILL.md",
        "r",
    );
    put(
        &fx,
        &SkillScope::Character("alice".into()),
        "accent",
        "SKILL.md",
        "a",
    );
    let mut expected = vec![
        "characters/alice/accent/SKILL.md".to_owned(),
        "global/pacing/SKILL.md".to_owned(),
        "global/pacing/refs/beats.md".to_owned(),
        "presets/openai/Default/voice/SKILL.md".to_owned(),
        format!("presets/openai/{mapped}/voice/SKILL.md"),
        "profiles/critic/rubric/SKILL.md".to_owned(),
    ];
    expected.sort();
    assert_eq!(files_under(&skills_root(&fx)), expected);
    assert!(mapped.starts_with("My_Preset-"), "{mapped}");
}

#[tokio::test]
async fn listings_skip_hidden_temp_badly_named_and_too_deep_entries() {
    let fx = Fixture::new();
    let global = SkillScope::Global;
    put(&fx, &global, "voice", "SKILL.md", "# Voice\n");
    put(&fx, &global, "voice", "a/b/c/three-deep.md", "ok");
    let dir = skills_root(&fx).join("global");
    let voice = dir.join("voice");
    std::fs::create_dir_all(voice.join("a/b/c/d")).unwrap();
    std::fs::write(voice.join("a/b/c/d/four-deep.md"), "too deep").unwrap();
    std::fs::write(voice.join(".hidden.md"), "hidden").unwrap();
    std::fs::write(voice.join(".tt-tmp-1-2"), "temp").unwrap();
    std::fs::create_dir_all(voice.join(".git")).unwrap();
    std::fs::write(voice.join(".git/config"), "git").unwrap();
    std::fs::write(voice.join("back\\slash.md"), "odd name").unwrap();
    // Folders that are not skill ids, and files at the scope level, are not skills.
    std::fs::create_dir_all(dir.join("Upper")).unwrap();
    std::fs::write(dir.join("Upper/SKILL.md"), "x").unwrap();
    std::fs::create_dir_all(dir.join(".hidden-skill")).unwrap();
    std::fs::write(dir.join(".hidden-skill/SKILL.md"), "x").unwrap();
    std::fs::write(dir.join("loose.md"), "x").unwrap();
    // A SKILL.md that is a folder does not make a skill.
    std::fs::create_dir_all(dir.join("odd/SKILL.md")).unwrap();

    let skills = fx.store.list_skills(&global).await.unwrap();
    assert_eq!(skills.len(), 1);
    let files: Vec<&str> = skills[0].files.iter().map(SkillFilePath::as_str).collect();
    assert_eq!(files, ["SKILL.md", "a/b/c/three-deep.md"]);
}

/// Both reads of skill `id` in `scope`, the listing and its file at `path`, are refused as
/// escapes.
async fn assert_skill_escapes(fx: &Fixture, scope: &SkillScope, id: &str, path: &str) {
    assert_escape(fx.store.list_skills(scope).await);
    assert_escape(
        fx.store
            .read_skill_file(SkillFileRef::new(scope, &sid(id), &sfp(path)))
            .await,
    );
}

#[tokio::test]
async fn links_leaving_the_skills_root_are_refused() {
    let fx = Fixture::new();
    let global = SkillScope::Global;
    put(&fx, &global, "voice", "SKILL.md", "# Voice\n");
    let outside = fx.dir.path().join("outside");
    std::fs::create_dir_all(outside.join("evil")).unwrap();
    std::fs::write(outside.join("evil/SKILL.md"), "secret skill").unwrap();
    std::fs::write(outside.join("secret.md"), "secret").unwrap();
    let root = skills_root(&fx);

    // A file link inside a skill.
    symlink(outside.join("secret.md"), root.join("global/voice/leak.md")).unwrap();
    assert_skill_escapes(&fx, &global, "voice", "leak.md").await;
    std::fs::remove_file(root.join("global/voice/leak.md")).unwrap();

    // A skill folder link.
    symlink(outside.join("evil"), root.join("global/evil")).unwrap();
    assert_skill_escapes(&fx, &global, "evil", "SKILL.md").await;
    std::fs::remove_file(root.join("global/evil")).unwrap();
    assert_eq!(ids(&fx, &global).await, ["voice"]);

    // A scope folder link, and a link further up the scope's path.
    let alice = SkillScope::Character("alice".into());
    std::fs::create_dir_all(root.join("characters")).unwrap();
    symlink(&outside, root.join("characters/alice")).unwrap();
    assert_skill_escapes(&fx, &alice, "evil", "SKILL.md").await;
    std::fs::remove_file(root.join("characters/alice")).unwrap();
    std::fs::remove_dir(root.join("characters")).unwrap();
    std::fs::create_dir_all(outside.join("bob/evil")).unwrap();
    std::fs::write(outside.join("bob/evil/SKILL.md"), "x").unwrap();
    symlink(&outside, root.join("characters")).unwrap();
    let bob = SkillScope::Character("bob".into());
    assert_skill_escapes(&fx, &bob, "evil", "SKILL.md").await;

    // Writing through a link that leaves the root is refused too.
    assert_escape(fx.store.put_skill_file(
        SkillFileRef::new(&bob, &sid("planted"), &sfp("SKILL.md")),
        "x",
    ));
    assert!(!outside.join("bob/planted").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.md")).unwrap(),
        "secret"
    );
}

#[tokio::test]
async fn links_inside_the_skills_root_work_and_dangling_ones_are_ignored() {
    let fx = Fixture::new();
    let global = SkillScope::Global;
    let critic = SkillScope::Profile(ProfileId::parse("critic").unwrap());
    put(&fx, &global, "shared", "SKILL.md", "# Shared\n");
    put(&fx, &global, "shared", "refs/a.md", "a");
    put(&fx, &critic, "own", "SKILL.md", "# Own\n");
    let root = skills_root(&fx);
    symlink(
        root.join("global/shared"),
        root.join("profiles/critic/shared"),
    )
    .unwrap();
    symlink(
        root.join("global/shared/refs/a.md"),
        root.join("profiles/critic/own/a.md"),
    )
    .unwrap();
    symlink(
        root.join("global/nothing.md"),
        root.join("profiles/critic/own/gone.md"),
    )
    .unwrap();

    assert_eq!(ids(&fx, &critic).await, ["own", "shared"]);
    let skills = fx.store.list_skills(&critic).await.unwrap();
    let own: Vec<&str> = skills[0].files.iter().map(SkillFilePath::as_str).collect();
    assert_eq!(own, ["SKILL.md", "a.md"]);
    assert_eq!(
        fx.store
            .read_skill_file(SkillFileRef::new(
                &critic,
                &sid("shared"),
                &sfp("refs/a.md")
            ))
            .await
            .unwrap(),
        "a"
    );
    assert!(matches!(
        fx.store
            .read_skill_file(SkillFileRef::new(&critic, &sid("own"), &sfp("gone.md")))
            .await,
        Err(StorageError::NotFound { .. })
    ));
}

#[tokio::test]
async fn the_skills_root_itself_may_be_a_link() {
    let fx = Fixture::new();
    let library = fx.dir.path().join("library");
    std::fs::create_dir_all(library.join("global/pacing")).unwrap();
    std::fs::write(library.join("global/pacing/SKILL.md"), "# Pacing\n").unwrap();
    symlink(&library, skills_root(&fx)).unwrap();
    assert_eq!(ids(&fx, &SkillScope::Global).await, ["pacing"]);
    put(&fx, &SkillScope::Global, "voice", "SKILL.md", "# Voice\n");
    assert!(library.join("global/voice/SKILL.md").exists());
}

#[tokio::test]
async fn a_scope_without_a_folder_lists_nothing_and_a_blank_scope_is_still_refused() {
    let fx = Fixture::new();
    let critic = SkillScope::Profile(ProfileId::parse("critic").unwrap());
    // No `skills/` at all, then a skills root without the scope's folder.
    assert!(ids(&fx, &SkillScope::Global).await.is_empty());
    put(&fx, &SkillScope::Global, "pacing", "SKILL.md", "# Pacing\n");
    assert!(ids(&fx, &critic).await.is_empty());
    assert_eq!(ids(&fx, &SkillScope::Global).await, ["pacing"]);
    assert!(
        fx.store
            .list_skills(&SkillScope::Character("  ".into()))
            .await
            .is_err()
    );
}
