//! Contract cases for `ProfileRepository`: stored definitions load back, unknown ids are `None`,
//! and ids list sorted.

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
        let mut definition = default_writer_definition();
        definition.id = ProfileId::parse(id).unwrap();
        definition.display_name = name.to_owned();
        (s.seed_profile)(&definition);
        definitions.push(definition);
    }
    let ids: Vec<String> = s
        .profiles
        .list_profile_ids()
        .await
        .unwrap()
        .into_iter()
        .map(|id| id.to_string())
        .collect();
    assert_eq!(ids, ["a-planner", "critic", "default-writer"]);
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
