//! Managing profiles through the host API on the file store: list (stored and built in), get,
//! delete; a built-in profile is not deleted, an unknown one is not found, and a stored one
//! that replaced a built-in gives way to it again.

use tempfile::TempDir;
use tt_runtime::{ProfileId, ProfileSummary};

use super::{committing_writer, runtime};

fn listed(profiles: &[ProfileSummary]) -> Vec<(String, bool, bool, bool)> {
    profiles
        .iter()
        .map(|p| {
            (
                p.id.to_string(),
                p.built_in,
                p.replaces_built_in,
                p.problem.is_some(),
            )
        })
        .collect()
}

#[tokio::test]
async fn profiles_are_listed_read_and_deleted_and_built_in_ones_stay() {
    let dir = TempDir::new().unwrap();
    let runtime = runtime(dir.path(), committing_writer());
    let row = |id: &str, built_in, replaces, problem| (id.to_owned(), built_in, replaces, problem);
    assert_eq!(
        listed(&runtime.list_profiles().await.unwrap()),
        [row("default-writer", true, false, false)]
    );
    // A profile of its own, saved from the built-in one.
    let mut critic = runtime.get_profile("default-writer").await.unwrap();
    critic.id = ProfileId::parse("critic").unwrap();
    critic.display_name = "Critic".to_owned();
    runtime.save_profile(critic.clone()).await.unwrap();
    assert_eq!(runtime.get_profile("critic").await.unwrap(), critic);
    // One that replaces the built-in, and one that does not parse.
    let mut writer = runtime.get_profile("default-writer").await.unwrap();
    writer.display_name = "House Writer".to_owned();
    runtime.save_profile(writer).await.unwrap();
    std::fs::write(dir.path().join("profiles/broken.json"), "{not json").unwrap();
    let profiles = runtime.list_profiles().await.unwrap();
    assert_eq!(
        listed(&profiles),
        [
            row("broken", false, false, true),
            row("critic", false, false, false),
            row("default-writer", false, true, false),
        ]
    );
    assert_eq!(profiles[1].display_name, "Critic");
    assert!(
        profiles[0]
            .problem
            .as_deref()
            .unwrap()
            .starts_with("agent.storage_corrupt"),
        "{profiles:?}"
    );
    // Deleting: the broken one, the override (the built-in is back), then not again.
    assert!(
        !runtime
            .delete_profile("broken")
            .await
            .unwrap()
            .built_in_restored
    );
    assert!(
        runtime
            .delete_profile("default-writer")
            .await
            .unwrap()
            .built_in_restored
    );
    assert_eq!(
        runtime
            .get_profile("default-writer")
            .await
            .unwrap()
            .display_name,
        "Default Writer"
    );
    let refused = runtime.delete_profile("default-writer").await.unwrap_err();
    assert_eq!(refused.code, "agent.profile_built_in");
    runtime.delete_profile("critic").await.unwrap();
    for unknown in ["critic", "nobody", "../etc"] {
        assert_eq!(
            runtime.delete_profile(unknown).await.unwrap_err().code,
            "agent.profile_not_found",
            "{unknown}"
        );
        assert_eq!(
            runtime.get_profile(unknown).await.unwrap_err().code,
            "agent.profile_not_found",
            "{unknown}"
        );
    }
    assert_eq!(
        listed(&runtime.list_profiles().await.unwrap()),
        [row("default-writer", true, false, false)]
    );
}
