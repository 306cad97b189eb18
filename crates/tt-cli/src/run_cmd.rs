//! `tt-agent run`: one real run against a model endpoint (`openai:<baseUrl>` or
//! `anthropic:<baseUrl>`), shown live, with the committed message printed at the end; or the
//! same run answered offline from a model cassette (`--replay`), or recorded to one (`--record`).

use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tt_runtime::{
    AgentProfileDefinition, AgentRuntime, ConnectionSpec, ConversationKind, GenerationSettings,
    ModelProvider, RecordingProvider, ReplayProvider, StartRunRequest, build_provider,
};

/// The `kind` every agent profile file declares; other JSON files in `--profiles` are skipped.
const PROFILE_KIND: &str = "tauritavern.agentProfile";

/// What `tt-agent run` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct RunOptions {
    pub profile: Option<String>,
    pub profiles_dir: Option<PathBuf>,
    pub model: ModelArgs,
    /// Settings of every request of the run (over the profiles' own).
    pub generation: GenerationSettings,
    pub chat_id: String,
    pub request: String,
}

/// Generation settings for every agent of a run (docs/providers.md has which provider takes
/// which); they win over the profiles' `model.generation`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct GenerationArgs {
    /// Sampling temperature, 0 to 2.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Nucleus sampling: above 0, at most 1.
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Seed for repeatable sampling, where the server supports one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Any other setting as key=value, repeatable: a known one by its camelCase name
    /// (`topK=40`, `minP=0.05`, `stop=END`, `reasoningEffort=low`), anything else passed to the
    /// server unchanged (`mirostat=2`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl GenerationArgs {
    /// The flags as one validated layer; `--temperature`, `--top-p` and `--seed` win over the
    /// same key given with `--set`.
    pub(crate) fn settings(&self) -> anyhow::Result<GenerationSettings> {
        let mut settings = GenerationSettings::default();
        for assignment in &self.set {
            settings = settings.overlay(&tt_runtime::parse_generation_assignment(assignment)?);
        }
        let flags = GenerationSettings {
            temperature: self.temperature,
            top_p: self.top_p,
            seed: self.seed,
            ..GenerationSettings::default()
        };
        let settings = settings.overlay(&flags);
        settings.validate("the command line")?;
        Ok(settings)
    }
}

/// The model a run or a resumed run talks to: a connection and model id, or a cassette.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ModelArgs {
    /// `openai:<baseUrl>` (e.g. openai:http://127.0.0.1:8080/v1) or `anthropic:<baseUrl>`
    /// (e.g. anthropic:https://api.anthropic.com).
    #[arg(long)]
    pub connection: Option<String>,
    /// The model id (used unless a profile names its own).
    #[arg(long)]
    pub model: Option<String>,
    /// Record every model request and response (streamed pieces included) to this cassette
    /// file (docs/cassettes.md).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer every model request from this cassette, offline: no connection is made. A
    /// request that differs from the recording fails with `model.cassette_mismatch`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["connection", "model"])]
    pub replay: Option<PathBuf>,
    /// The environment variable holding the API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Stream responses (live model output in the journal).
    #[arg(long)]
    pub stream: bool,
    /// Longest one model request (one attempt) may take, streamed or not, in seconds
    /// (default 300); streamed, it also caps the idle timeout.
    #[arg(long)]
    pub timeout_secs: Option<u64>,
    /// Longest wait for a response's status and headers, in seconds (default 120). A
    /// non-streaming server sends them only with its whole answer: raise it for slow local
    /// models, or stream.
    #[arg(long)]
    pub header_timeout_secs: Option<u64>,
    /// Longest silence between two pieces of a response, in seconds (default 120).
    #[arg(long)]
    pub idle_timeout_secs: Option<u64>,
    /// Longest one model call may take, its retries and the waits between them included, in
    /// seconds (default 300); a profile's run.modelRetry.deadlineSeconds wins over it.
    #[arg(long)]
    pub call_deadline_secs: Option<u64>,
    /// Longest wait for the connection to the model server, in seconds (default 10).
    #[arg(long)]
    pub connect_timeout_secs: Option<u64>,
    /// The most tokens one model call may generate (default 8192; a profile's
    /// model.maxOutputTokens can lower it).
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens (default: what the server says, else the known
    /// window of the model id; docs/providers.md). Give a replay the window its recording ran
    /// with.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// Leave generation settings the provider does not take (e.g. --seed on Anthropic) out of
    /// every request, with a warning in the journal, instead of refusing the run.
    #[arg(long)]
    pub drop_unsupported_settings: bool,
}

pub(crate) async fn run(
    storage: &crate::storage::Storage,
    options: RunOptions,
    signals: &tt_runtime::StopSignals,
) -> anyhow::Result<()> {
    let (runtime, description) = runtime_for(storage, &options.model)?;
    if let Some(dir) = &options.profiles_dir {
        install_profiles(&runtime, dir).await?;
    }
    println!("tt-agent run: {description}");
    if let Some(path) = &options.model.record {
        println!("recording model calls to {}", path.display());
    }
    println!("{}\n", storage.describe());
    // Runs of one conversation share persist/: start from the last promoted state.
    let persist_base_state_id = runtime.latest_persist_state(&options.chat_id).await?;
    if let Some(state) = &persist_base_state_id {
        println!(
            "persist/ starts from state {state} (conversation {})",
            options.chat_id
        );
    }
    if signals.is_requested() {
        anyhow::bail!("stopped by a signal before the run started");
    }
    let run = signals
        .shielded(runtime.start_run(StartRunRequest {
            stable_chat_id: options.chat_id.clone(),
            conversation_kind: ConversationKind::Character,
            chat_ref: serde_json::json!({"kind": "cli", "chatId": options.chat_id}),
            generation_type: serde_json::json!("normal"),
            profile_id: options.profile.clone(),
            history: Vec::new(),
            user_request: Some(options.request.clone()),
            persist_base_state_id,
            skill_scope_refs: Default::default(),
            connection_ref: None,
            generation: options.generation.clone(),
        }))
        .await?;
    let finished = crate::live::follow(&runtime, &run, signals, "started").await?;
    crate::live::completed_or_why(&finished, "the run")
}

/// `tt-agent resume <runId>`: continues an interrupted, failed or cancelled run (docs/resume.md) against the model
/// `model` names (`--connection`/`--model`, or a cassette), shown live like `run` from the
/// journal's start, with the committed message printed at the end.
pub(crate) async fn resume(
    storage: &crate::storage::Storage,
    run_id: &str,
    model: &ModelArgs,
    demo: bool,
    signals: &tt_runtime::StopSignals,
) -> anyhow::Result<()> {
    let (runtime, description) = runtime_continuing(
        storage,
        run_id,
        model,
        demo,
        &format!("run {run_id} continues on"),
    )
    .await?;
    println!("tt-agent resume: {description}");
    println!("{}\n", storage.describe());
    if signals.is_requested() {
        anyhow::bail!("stopped by a signal before the run resumed");
    }
    let run = signals.shielded(runtime.resume_run(run_id)).await?;
    let finished = crate::live::follow(&runtime, &run, signals, "resumed").await?;
    crate::live::completed_or_why(&finished, "the run")
}

/// The runtime a run goes on in (`resume`, `fork`) and its description: the demo's scripted
/// model for a run of `tt-agent demo` (asked for with `demo`, or recognised when no model is
/// given), else the model `model` names. `what` completes "say which model …" when neither is.
pub(crate) async fn runtime_continuing(
    storage: &crate::storage::Storage,
    run_id: &str,
    model: &ModelArgs,
    demo: bool,
    what: &str,
) -> anyhow::Result<(AgentRuntime, String)> {
    let given = model.connection.is_some() || model.model.is_some() || model.replay.is_some();
    let demo = demo || (!given && is_demo_run(storage, run_id).await?);
    if demo {
        anyhow::ensure!(
            !given,
            "--demo goes on with the demo's scripted model; leave out --connection, --model and --replay"
        );
        let runtime = storage
            .running(Arc::new(crate::demo::writers_room_provider(0)?))
            .build()?;
        return Ok((
            runtime,
            "the writers' room's scripted model (tt-agent demo)".to_owned(),
        ));
    }
    anyhow::ensure!(
        given,
        "say which model {what}: --connection KIND:BASEURL and --model ID as it was started with, --replay FILE for a cassette, or --demo for a run of `tt-agent demo`"
    );
    runtime_for(storage, model)
}

/// Whether `run_id` is a run of `tt-agent demo` (its conversation is the demo's).
pub(crate) async fn is_demo_run(
    storage: &crate::storage::Storage,
    run_id: &str,
) -> anyhow::Result<bool> {
    let run = storage.inspect_runtime()?.get_run(run_id).await?;
    Ok(run.stable_chat_id == crate::demo::DEMO_CHAT_ID)
}

/// The runtime of `run` and `resume`: the model of `options` (recorded to a cassette with
/// `--record`), commits published to the transcript, and a line describing the model.
pub(crate) fn runtime_for(
    storage: &crate::storage::Storage,
    options: &ModelArgs,
) -> anyhow::Result<(AgentRuntime, String)> {
    let (provider, description, mut info) = match &options.replay {
        Some(path) => {
            let replay = ReplayProvider::open(path)?;
            let description = format!(
                "replaying {} ({} recorded model calls, offline)",
                path.display(),
                replay.remaining()
            );
            (
                Arc::new(replay) as Arc<dyn ModelProvider>,
                description,
                tt_runtime::ConnectionModelInfo::default(),
            )
        }
        None => connect(options)?,
    };
    if let Some(tokens) = options.context_window {
        anyhow::ensure!(
            tokens >= tt_runtime::MIN_CONTEXT_WINDOW_TOKENS,
            "--context-window must be at least {}",
            tt_runtime::MIN_CONTEXT_WINDOW_TOKENS
        );
        info.context_window_tokens = Some(tokens);
    }
    let provider = match &options.record {
        Some(path) => {
            Arc::new(RecordingProvider::create(provider, path)?) as Arc<dyn ModelProvider>
        }
        None => provider,
    };
    let runtime = storage
        .running(provider)
        .provider_model_info(info)
        .build()?;
    Ok((runtime, description))
}

/// The provider of a live run: `--connection` and `--model` with their options, and a line
/// describing it.
fn connect(
    options: &ModelArgs,
) -> anyhow::Result<(
    Arc<dyn ModelProvider>,
    String,
    tt_runtime::ConnectionModelInfo,
)> {
    let (Some(connection), Some(model)) = (&options.connection, &options.model) else {
        anyhow::bail!(
            "say which model to talk to: --connection KIND:BASEURL and --model ID (for example --connection openai:http://127.0.0.1:8080/v1 --model local), or --replay FILE to answer from a cassette"
        );
    };
    let mut spec = ConnectionSpec::parse(connection)?
        .with_model(model.clone())
        .with_stream(options.stream)
        .with_drop_unsupported_settings(options.drop_unsupported_settings);
    if let Some(name) = &options.api_key_env {
        spec = spec.with_api_key_env(name.clone());
    }
    if let Some(seconds) = options.timeout_secs {
        spec = spec.with_request_timeout(Duration::from_secs(seconds));
    }
    if let Some(seconds) = options.header_timeout_secs {
        spec = spec.with_header_timeout(Duration::from_secs(seconds));
    }
    if let Some(seconds) = options.idle_timeout_secs {
        spec = spec.with_idle_timeout(Duration::from_secs(seconds));
    }
    if let Some(seconds) = options.call_deadline_secs {
        anyhow::ensure!(seconds > 0, "--call-deadline-secs must be at least 1");
        spec = spec.with_call_deadline(Duration::from_secs(seconds));
    }
    if let Some(seconds) = options.connect_timeout_secs {
        spec = spec.with_connect_timeout(Duration::from_secs(seconds));
    }
    if let Some(max_tokens) = options.max_tokens {
        anyhow::ensure!(max_tokens > 0, "--max-tokens must be at least 1");
        spec = spec.with_max_tokens(max_tokens);
    }
    let provider = build_provider(&spec)?;
    let description = format!(
        "{} at {} (model {model}{})",
        spec.kind.as_str(),
        spec.base_url,
        if spec.stream { ", streaming" } else { "" }
    );
    Ok((provider, description, spec.model_info()))
}

/// Saves every agent profile (`*.json` with `"kind": "tauritavern.agentProfile"`) in `dir`,
/// in file-name order, and returns their ids. Other JSON files (such as a scenario's
/// `script.json`) are skipped.
pub(crate) async fn install_profiles(
    runtime: &AgentRuntime,
    dir: &Path,
) -> anyhow::Result<Vec<String>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the profiles dir {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    let mut installed = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        if value.get("kind").and_then(serde_json::Value::as_str) != Some(PROFILE_KIND) {
            continue;
        }
        let definition: AgentProfileDefinition = serde_json::from_value(value)
            .with_context(|| format!("{} is not a valid agent profile", path.display()))?;
        let id = definition.id.to_string();
        install_preset_template(runtime, dir, &definition).await?;
        runtime
            .save_profile(definition)
            .await
            .with_context(|| format!("the profile in {} was refused", path.display()))?;
        installed.push(id);
    }
    if installed.is_empty() {
        anyhow::bail!("no agent profiles found in {}", dir.display());
    }
    install_skills(runtime, dir).await?;
    println!(
        "installed {} profile(s) from {}: {}",
        installed.len(),
        dir.display(),
        installed.join(", ")
    );
    Ok(installed)
}

/// A profile with `preset.mode = "ref"` and preset `{apiId, name}` gets its prompt assembled from
/// the preset template the store keeps for it; `preset-<name>.json` next to the profile is
/// installed there (`AgentRuntime::save_preset_template`).
async fn install_preset_template(
    runtime: &AgentRuntime,
    dir: &Path,
    definition: &AgentProfileDefinition,
) -> anyhow::Result<()> {
    let Some(preset) = &definition.preset.preset_ref else {
        return Ok(());
    };
    let source = dir.join(format!("preset-{}.json", preset.name));
    if !source.is_file() {
        return Ok(());
    }
    let text = std::fs::read_to_string(&source)
        .with_context(|| format!("cannot read {}", source.display()))?;
    let template: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", source.display()))?;
    runtime
        .save_preset_template(&preset.api_id, &preset.name, &template)
        .await
        .with_context(|| format!("installing the preset template {}", source.display()))?;
    Ok(())
}

/// Every `skill-<id>.md` in `dir` becomes the global skill `<id>` (its `SKILL.md`).
async fn install_skills(runtime: &AgentRuntime, dir: &Path) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name
            .strip_prefix("skill-")
            .and_then(|rest| rest.strip_suffix(".md"))
        else {
            continue;
        };
        let text =
            std::fs::read_to_string(entry.path()).with_context(|| format!("cannot read {name}"))?;
        runtime
            .save_skill_file(&tt_runtime::SkillScope::Global, id, "SKILL.md", &text)
            .await
            .with_context(|| format!("installing the skill in {name}"))?;
    }
    Ok(())
}
