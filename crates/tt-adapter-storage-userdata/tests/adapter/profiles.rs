//! Loaded profiles are reused only while their file is unchanged: a profile replaced or edited
//! by another writer (another process, a user's editor) is read again at the next load.

use tt_domain::ids::ProfileId;
use tt_domain::profile::default_writer_definition;
use tt_ports::ProfileRepository;

use super::Fixture;

#[tokio::test]
async fn a_replaced_or_edited_profile_file_is_read_again() {
    let fx = Fixture::new();
    let id = ProfileId::parse("critic").unwrap();
    let mut definition = default_writer_definition();
    definition.id = id.clone();
    definition.display_name = "Critic".to_owned();
    fx.store.put_profile(&definition).unwrap();
    assert_eq!(
        fx.store.load_profile(&id).await.unwrap(),
        Some(definition.clone())
    );
    // The same file again: the same definition.
    assert_eq!(
        fx.store.load_profile(&id).await.unwrap(),
        Some(definition.clone())
    );

    // Replaced through a temp file and a rename (a new file).
    definition.display_name = "Sharp critic".to_owned();
    fx.store.put_profile(&definition).unwrap();
    assert_eq!(
        fx.store.load_profile(&id).await.unwrap(),
        Some(definition.clone())
    );

    // Edited in place, as an editor may: the same file, other bytes.
    let path = fx.data_root().join("profiles").join("critic.json");
    definition.display_name = "Gentle critic, edited in place".to_owned();
    std::fs::write(&path, serde_json::to_vec_pretty(&definition).unwrap()).unwrap();
    assert_eq!(
        fx.store.load_profile(&id).await.unwrap(),
        Some(definition.clone())
    );

    // Removed: gone, not served from memory.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(fx.store.load_profile(&id).await.unwrap(), None);
}
