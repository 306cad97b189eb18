//! Contract cases for `SkillRepository`: skills are folders with a `SKILL.md`, listed sorted
//! with their summaries and files, kept apart per scope (host names mapped safely), with the
//! same limits and error kinds in every implementation. Run with `skills_contract_tests!`.

use std::sync::Arc;
use tt_domain::error_codes;

use tt_domain::ids::ProfileId;
use tt_domain::skill::{
    MAX_SKILL_FILE_BYTES, MAX_SKILL_FILES, SkillFilePath, SkillId, SkillScope, SkillSummary,
};
use tt_ports::{SkillFileRef, SkillRepository, StorageError};

use super::{assert_code, assert_not_found};

/// Stores one file (any bytes) of a skill.
pub type SkillSeeder = dyn Fn(&SkillScope, &SkillId, &SkillFilePath, &[u8]) + Send + Sync;

/// One skill store under test, with a way to seed files into it.
pub struct SkillsUnderTest {
    pub repo: Arc<dyn SkillRepository>,
    pub seed: Arc<SkillSeeder>,
    /// Anything that must outlive the case, e.g. the `TempDir` holding the data root.
    pub _guard: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl SkillsUnderTest {
    pub fn new(
        repo: Arc<dyn SkillRepository>,
        seed: impl Fn(&SkillScope, &SkillId, &SkillFilePath, &[u8]) + Send + Sync + 'static,
        guard: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Self {
        Self {
            repo,
            seed: Arc::new(seed),
            _guard: guard,
        }
    }

    fn put(&self, scope: &SkillScope, id: &str, path: &str, text: &str) {
        self.put_bytes(scope, id, path, text.as_bytes());
    }

    fn put_bytes(&self, scope: &SkillScope, id: &str, path: &str, bytes: &[u8]) {
        (self.seed)(scope, &sid(id), &sfp(path), bytes);
    }

    async fn list(&self, scope: &SkillScope) -> Vec<SkillSummary> {
        self.repo.list_skills(scope).await.unwrap()
    }

    async fn ids(&self, scope: &SkillScope) -> Vec<String> {
        self.list(scope)
            .await
            .into_iter()
            .map(|skill| skill.id.to_string())
            .collect()
    }

    async fn read(&self, scope: &SkillScope, id: &str, path: &str) -> Result<String, StorageError> {
        let (id, path) = (sid(id), sfp(path));
        self.repo
            .read_skill_file(SkillFileRef::new(scope, &id, &path))
            .await
    }
}

contract_suite_macro! {
    /// Expands to one `#[tokio::test]` per skills contract case, inside `mod skills_contract`.
    /// `$factory` is evaluated afresh for every case and yields a `SkillsUnderTest`.
    ///
    /// ```ignore
    /// fn skills() -> SkillsUnderTest { /* a fresh store */ }
    /// tt_testkit::skills_contract_tests!(skills());
    /// ```
    skills_contract_tests => skills_contract, skills {
        empty_scopes_have_no_skills,
        skills_list_sorted_with_summaries_and_files,
        scopes_are_separate_and_host_names_are_mapped,
        folders_without_skill_md_are_not_skills,
        read_errors_have_their_kinds,
        oversized_and_non_text_files,
        file_lists_are_capped,
        blank_scope_names_are_refused,
    }
}

fn sid(raw: &str) -> SkillId {
    SkillId::parse(raw).unwrap()
}

fn sfp(raw: &str) -> SkillFilePath {
    SkillFilePath::parse(raw).unwrap()
}

fn all_scopes() -> Vec<SkillScope> {
    vec![
        SkillScope::Global,
        SkillScope::Preset {
            api_id: "openai".into(),
            name: "Default".into(),
        },
        SkillScope::Profile(ProfileId::parse("critic").unwrap()),
        SkillScope::Character("alice".into()),
    ]
}

fn file_names(summary: &SkillSummary) -> Vec<&str> {
    summary.files.iter().map(SkillFilePath::as_str).collect()
}

pub async fn empty_scopes_have_no_skills(s: SkillsUnderTest) {
    for scope in all_scopes() {
        assert!(s.list(&scope).await.is_empty(), "{scope}");
        assert_not_found(s.read(&scope, "anything", "SKILL.md").await);
    }
    // Another scope holding skills does not make these appear.
    s.put(&SkillScope::Global, "pacing", "SKILL.md", "# Pacing\n");
    for scope in all_scopes().into_iter().skip(1) {
        assert!(s.list(&scope).await.is_empty(), "{scope}");
        assert_not_found(s.read(&scope, "pacing", "SKILL.md").await);
    }
}

pub async fn skills_list_sorted_with_summaries_and_files(s: SkillsUnderTest) {
    let global = SkillScope::Global;
    s.put(
        &global,
        "voice",
        "SKILL.md",
        "---\nname: Character voice\ndescription: Keep each character's speech distinct.\n---\n# Voice\n\nBody text.\n",
    );
    s.put(&global, "voice", "examples/good.md", "good");
    s.put(&global, "voice", "examples/deep/er/most.md", "deep");
    s.put(&global, "voice", "a-notes.md", "notes");
    s.put(
        &global,
        "pacing",
        "SKILL.md",
        "# Scene pacing\n\nCut scenes that do not change the stakes.\n",
    );

    let skills = s.list(&global).await;
    let ids: Vec<&str> = skills.iter().map(|skill| skill.id.as_str()).collect();
    assert_eq!(ids, ["pacing", "voice"]);

    let pacing = &skills[0];
    assert_eq!(pacing.name, "Scene pacing");
    assert_eq!(
        pacing.description,
        "Cut scenes that do not change the stakes."
    );
    assert_eq!(file_names(pacing), ["SKILL.md"]);

    let voice = &skills[1];
    assert_eq!(voice.name, "Character voice");
    assert_eq!(voice.description, "Keep each character's speech distinct.");
    assert_eq!(
        file_names(voice),
        [
            "SKILL.md",
            "a-notes.md",
            "examples/deep/er/most.md",
            "examples/good.md"
        ]
    );

    assert_eq!(
        s.read(&global, "voice", "examples/deep/er/most.md")
            .await
            .unwrap(),
        "deep"
    );
    assert!(
        s.read(&global, "voice", "SKILL.md")
            .await
            .unwrap()
            .starts_with("---\nname: Character voice\n")
    );

    // Replacing a file is seen by the next read and listing.
    s.put(
        &global,
        "pacing",
        "SKILL.md",
        "---\ndescription: Shorter.\n---\n",
    );
    let skills = s.list(&global).await;
    assert_eq!(skills[0].name, "pacing");
    assert_eq!(skills[0].description, "Shorter.");
}

pub async fn scopes_are_separate_and_host_names_are_mapped(s: SkillsUnderTest) {
    let scopes = [
        SkillScope::Global,
        SkillScope::Preset {
            api_id: "openai".into(),
            name: "My Preset (v2)".into(),
        },
        SkillScope::Preset {
            api_id: "openai".into(),
            name: "My_Preset_v2".into(),
        },
        SkillScope::Preset {
            api_id: "../..".into(),
            name: "..".into(),
        },
        SkillScope::Profile(ProfileId::parse("critic").unwrap()),
        SkillScope::Character("小红".into()),
        SkillScope::Character("a/b".into()),
        SkillScope::Character("a b".into()),
    ];
    for (n, scope) in scopes.iter().enumerate() {
        s.put(scope, "shared", "SKILL.md", &format!("# Shared {n}\n"));
        s.put(
            scope,
            &format!("only-{n}"),
            "SKILL.md",
            &format!("only in {n}"),
        );
    }
    for (n, scope) in scopes.iter().enumerate() {
        assert_eq!(
            s.ids(scope).await,
            [format!("only-{n}"), "shared".to_owned()],
            "{scope}"
        );
        assert_eq!(
            s.read(scope, "shared", "SKILL.md").await.unwrap(),
            format!("# Shared {n}\n"),
            "{scope}"
        );
        assert_eq!(s.list(scope).await[1].name, format!("Shared {n}"));
    }
    // A scope that holds nothing stays empty even when its names look alike.
    assert!(
        s.list(&SkillScope::Character("a_b".into()))
            .await
            .is_empty()
    );
}

pub async fn folders_without_skill_md_are_not_skills(s: SkillsUnderTest) {
    let global = SkillScope::Global;
    s.put(&global, "draft", "notes.md", "no SKILL.md here");
    s.put(&global, "draft", "refs/skill.md", "lowercase is not it");
    s.put(&global, "real", "SKILL.md", "yes");
    assert_eq!(s.ids(&global).await, ["real"]);
    assert_not_found(s.read(&global, "draft", "notes.md").await);
    assert_not_found(s.read(&global, "draft", "SKILL.md").await);
}

pub async fn read_errors_have_their_kinds(s: SkillsUnderTest) {
    let global = SkillScope::Global;
    s.put(&global, "voice", "SKILL.md", "# Voice\n");
    s.put(&global, "voice", "refs/a.md", "a");
    assert_not_found(s.read(&global, "voice", "missing.md").await);
    assert_not_found(s.read(&global, "voice", "refs/missing.md").await);
    assert_not_found(s.read(&global, "nobody", "SKILL.md").await);
    match s.read(&global, "voice", "refs").await {
        Err(StorageError::IsDirectory { .. }) => {}
        other => panic!("expected IsDirectory, got {other:?}"),
    }
    // The same skill in another scope is a different skill.
    assert_not_found(
        s.read(&SkillScope::Character("alice".into()), "voice", "SKILL.md")
            .await,
    );
    assert_eq!(s.read(&global, "voice", "refs/a.md").await.unwrap(), "a");
}

pub async fn oversized_and_non_text_files(s: SkillsUnderTest) {
    let global = SkillScope::Global;
    let limit = usize::try_from(MAX_SKILL_FILE_BYTES).unwrap();
    s.put(&global, "mixed", "SKILL.md", "# Mixed\n");
    s.put_bytes(&global, "mixed", "image.bin", &[0xff, 0xfe, 0x00, 0x81]);
    s.put(&global, "mixed", "big.md", &"x".repeat(limit + 1));
    s.put(&global, "mixed", "at-limit.md", &"y".repeat(limit));
    // A skill whose SKILL.md is not text is not a skill.
    s.put_bytes(&global, "broken", "SKILL.md", &[0xc3, 0x28]);
    s.put(&global, "broken", "ok.md", "fine");

    let skills = s.list(&global).await;
    assert_eq!(skills.len(), 1);
    assert_eq!(
        file_names(&skills[0]),
        ["SKILL.md", "at-limit.md", "image.bin"],
        "files over the size limit are not listed"
    );
    assert_code(
        s.read(&global, "mixed", "image.bin").await,
        error_codes::AGENT_STORAGE_CORRUPT,
    );
    assert_code(
        s.read(&global, "mixed", "big.md").await,
        error_codes::AGENT_STORAGE_CORRUPT,
    );
    assert_eq!(
        s.read(&global, "mixed", "at-limit.md").await.unwrap().len(),
        limit
    );
}

pub async fn file_lists_are_capped(s: SkillsUnderTest) {
    let global = SkillScope::Global;
    s.put(&global, "many", "SKILL.md", "# Many\n");
    for n in (0..MAX_SKILL_FILES + 5).rev() {
        s.put(&global, "many", &format!("A{n:04}.md"), "x");
    }
    let skills = s.list(&global).await;
    let files = file_names(&skills[0]);
    assert_eq!(files.len(), MAX_SKILL_FILES);
    assert_eq!(files[0], "A0000.md");
    assert_eq!(
        files[MAX_SKILL_FILES - 2],
        format!("A{:04}.md", MAX_SKILL_FILES - 2)
    );
    assert_eq!(
        files[MAX_SKILL_FILES - 1],
        "SKILL.md",
        "SKILL.md is always listed"
    );
    // Files past the cap can still be read directly; the cap only bounds listings.
    assert_eq!(
        s.read(&global, "many", &format!("A{:04}.md", MAX_SKILL_FILES + 4))
            .await
            .unwrap(),
        "x"
    );
}

pub async fn blank_scope_names_are_refused(s: SkillsUnderTest) {
    for scope in [
        SkillScope::Character(" ".into()),
        SkillScope::Preset {
            api_id: String::new(),
            name: "Default".into(),
        },
        SkillScope::Preset {
            api_id: "openai".into(),
            name: "\t".into(),
        },
    ] {
        assert_code(
            s.repo.list_skills(&scope).await,
            error_codes::SKILL_SCOPE_INVALID,
        );
        assert_code(
            s.read(&scope, "voice", "SKILL.md").await,
            error_codes::SKILL_SCOPE_INVALID,
        );
    }
}
