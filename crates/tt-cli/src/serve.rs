//! `tt-agent serve`: the run inspector. Serves the host API as JSON over HTTP and the inspector
//! page on 127.0.0.1, and prints the page's URL with its secret token.
//!
//! Without `--connection` the runs play the bundled writers' room on the scripted model (like
//! `tt-agent demo`, offline); with one, every run talks to that model endpoint.

use anyhow::Context as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use tt_host_http::{CommitBridgeMode, HostHttpServer, ServerInfo, ServerOptions};
use tt_runtime::{CommitBridgeChoice, ConnectionSpec, PromptBrokerChoice};

/// What `tt-agent serve` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct ServeOptions {
    pub port: u16,
    pub connection: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub stream: bool,
    pub profiles_dir: Option<PathBuf>,
    pub pace_ms: u64,
    pub host_commits: bool,
}

pub(crate) async fn serve(
    storage: &crate::storage::Storage,
    options: ServeOptions,
    signals: &tt_runtime::StopSignals,
) -> anyhow::Result<()> {
    let mut model_info = tt_runtime::ConnectionModelInfo::default();
    let (provider, connection, scripted) = match &options.connection {
        None => {
            anyhow::ensure!(
                options.model.is_none(),
                "--model needs --connection (without one, the scripted writers' room runs)"
            );
            let provider = crate::demo::writers_room_provider(options.pace_ms)?;
            (
                Arc::new(provider) as Arc<dyn tt_runtime::ModelProvider>,
                format!("scripted writers' room ({} ms per answer)", options.pace_ms),
                true,
            )
        }
        Some(connection) => {
            let model = options
                .model
                .clone()
                .context("--connection needs --model")?;
            let mut spec = ConnectionSpec::parse(connection)?
                .with_model(model.clone())
                .with_stream(options.stream);
            if let Some(name) = &options.api_key_env {
                spec = spec.with_api_key_env(name.clone());
            }
            let provider = tt_runtime::build_provider(&spec)?;
            model_info = spec.model_info();
            (
                provider,
                format!(
                    "{} at {} (model {model}{})",
                    spec.kind.as_str(),
                    spec.base_url,
                    if spec.stream { ", streaming" } else { "" }
                ),
                false,
            )
        }
    };
    let runtime = storage
        .builder()
        .provider(provider)
        .provider_model_info(model_info)
        .commit_bridge(if options.host_commits {
            CommitBridgeChoice::HostApi
        } else {
            CommitBridgeChoice::Transcript
        })
        .prompt_broker(PromptBrokerChoice::Templates)
        .build()?;
    let mut suggested_profiles = Vec::new();
    if scripted {
        crate::demo::install_writers_room(&runtime).await?;
        suggested_profiles.push("writer".to_owned());
    }
    if let Some(dir) = &options.profiles_dir {
        suggested_profiles.extend(crate::run_cmd::install_profiles(&runtime, dir).await?);
    }
    suggested_profiles.push("default-writer".to_owned());
    let info = ServerInfo {
        connection,
        commit_bridge: if options.host_commits {
            CommitBridgeMode::Host
        } else {
            CommitBridgeMode::Transcript
        },
        suggested_profiles,
        default_request: scripted.then(|| crate::demo::DEMO_REQUEST.to_owned()),
        features: tt_host_http::Features {
            guidance: true,
            cancel_task: true,
            resume: true,
            approvals: true,
        },
    };
    let server = HostHttpServer::bind(
        Arc::new(runtime),
        ServerOptions {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, options.port)),
            info: info.clone(),
            ..ServerOptions::default()
        },
    )
    .await
    .with_context(|| format!("cannot listen on 127.0.0.1:{}", options.port))?;
    println!("tt-agent serve: the run inspector ({})", info.connection);
    println!("{}", storage.describe());
    println!("open {}", server.page_url());
    println!("(the token in the URL is this server's secret; Ctrl-C stops the server)");
    let stop = signals.requested();
    server
        .serve(async move { stop.cancelled().await })
        .await
        .context("the inspector server failed")
}
