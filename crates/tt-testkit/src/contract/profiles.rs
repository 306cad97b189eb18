//! Contract cases for `ProfileRepository`: stored definitions load back, unknown ids are `None`,
//! ids list sorted, and a deleted profile is gone (deleting one that is not stored says so).

use tt_domain::ids::ProfileId;
use tt_domain::profile::default_writer_definition;

use super::StorageUnderTest;

pub async fn load_list_and_missing_profiles(s: StorageUnderTest) {
    assert!(s.profiles.list_profile_ids().await.unwrap().is_empty());
    let critic_id = ProfileId::parse("critic").unwrap();
    assert_eq!(s.profiles.load_profile(&critic_id).await.unwrap(), None);

    let mut definitions = Vec::new();
    for (id, name) in [
        ("critic", "Critic"),
        ("a-planner", "Planner"),
        ("default-writer", "Writer"),
    ] {
        let mut definition = writer_with_id(id);
        definition.display_name = name.to_owned();
        (s.seed_profile)(&definition);
        definitions.push(definition);
    }
    assert_eq!(
        profile_ids(&s).await,
        ["a-planner", "critic", "default-writer"]
    );
    assert_eq!(
        s.profiles.load_profile(&critic_id).await.unwrap(),
        Some(definitions[0].clone())
    );
    assert_eq!(
        s.profiles
            .load_profile(&ProfileId::parse("nobody").unwrap())
            .await
            .unwrap(),
        None
    );
}

pub async fn deleted_profiles_are_gone(s: StorageUnderTest) {
    let critic_id = ProfileId::parse("critic").unwrap();
    assert!(!s.profiles.delete_profile(&critic_id).await.unwrap());
    for id in ["critic", "editor"] {
        (s.seed_profile)(&writer_with_id(id));
    }
    // Loaded once before, so that a cache of it cannot keep it alive.
    assert!(s.profiles.load_profile(&critic_id).await.unwrap().is_some());
    assert!(s.profiles.delete_profile(&critic_id).await.unwrap());
    assert_eq!(s.profiles.load_profile(&critic_id).await.unwrap(), None);
    assert!(!s.profiles.delete_profile(&critic_id).await.unwrap());
    assert_eq!(profile_ids(&s).await, ["editor"]);
    // Saved again after the delete, it is back.
    let mut again = default_writer_definition();
    again.id = critic_id.clone();
    again.display_name = "Critic again".to_owned();
    s.profiles.save_profile(&again).await.unwrap();
    assert_eq!(
        s.profiles.load_profile(&critic_id).await.unwrap(),
        Some(again)
    );
}

/// The ids the repository lists.
async fn profile_ids(s: &StorageUnderTest) -> Vec<String> {
    s.profiles
        .list_profile_ids()
        .await
        .unwrap()
        .into_iter()
        .map(|id| id.to_string())
        .collect()
}

/// The default writer under another id.
fn writer_with_id(id: &str) -> tt_domain::profile::AgentProfileDefinition {
    let mut definition = default_writer_definition();
    definition.id = ProfileId::parse(id).unwrap();
    definition
}
