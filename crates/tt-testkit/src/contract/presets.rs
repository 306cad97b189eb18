//! Contract cases for `PresetTemplateRepository`: a template reads back as written, from a
//! fresh handle too, per api id and name, and its replacement likewise; an api id or name that
//! is not a storage segment is refused on write and never found. Run with
//! `preset_templates_contract_tests!`.

use tt_domain::error_codes;

use tt_ports::{PresetKey, PresetTemplateRepository};

/// One preset template store under test.
pub type PresetTemplatesUnderTest = super::RepositoryUnderTest<dyn PresetTemplateRepository>;

contract_suite_macro! {
    /// Runs every `PresetTemplateRepository` contract case against `$factory`, an expression that
    /// yields a fresh [`PresetTemplatesUnderTest`] (it may `.await`).
    preset_templates_contract_tests => preset_templates_contract, presets {
        templates_read_back_per_api_and_name_and_are_replaced,
        api_ids_and_names_that_are_no_storage_segment_are_refused,
    }
}

const CRITICS: &str = r#"{"schemaVersion": 1, "messages": [{"insert": "history"}]}"#;
const CRITICS_2: &str = r#"{"schemaVersion": 1, "messages": []}"#;

/// The template stored under `api_id`/`name`, if any.
async fn template(repo: &dyn PresetTemplateRepository, api_id: &str, name: &str) -> Option<String> {
    repo.read_preset_template(PresetKey::new(api_id, name))
        .await
        .unwrap()
}

pub async fn templates_read_back_per_api_and_name_and_are_replaced(s: PresetTemplatesUnderTest) {
    assert_eq!(template(&*s.repo, "local", "critics").await, None);
    s.repo
        .put_preset_template(PresetKey::new("local", "critics"), CRITICS)
        .await
        .unwrap();
    let other = (s.reopen)();
    assert_eq!(
        template(&*other, "local", "critics").await.as_deref(),
        Some(CRITICS)
    );
    assert_eq!(template(&*other, "remote", "critics").await, None);
    assert_eq!(template(&*other, "local", "writers").await, None);
    s.repo
        .put_preset_template(PresetKey::new("local", "critics"), CRITICS_2)
        .await
        .unwrap();
    assert_eq!(
        template(&*other, "local", "critics").await.as_deref(),
        Some(CRITICS_2)
    );
}

pub async fn api_ids_and_names_that_are_no_storage_segment_are_refused(
    s: PresetTemplatesUnderTest,
) {
    for (api_id, name) in [
        ("..", "critics"),
        ("local", "../x"),
        ("", "a"),
        ("local", "a.b"),
    ] {
        let err = s
            .repo
            .put_preset_template(PresetKey::new(api_id, name), CRITICS)
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            error_codes::AGENT_STORAGE_SEGMENT_INVALID,
            "{api_id}/{name}"
        );
        assert_eq!(
            template(&*s.repo, api_id, name).await,
            None,
            "{api_id}/{name}"
        );
    }
}
