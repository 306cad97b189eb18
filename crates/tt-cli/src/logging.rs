//! Diagnostic logs: the runtime's `tracing` spans (run, invocation, model call, tool call, HTTP
//! request) and events, filtered by `RUST_LOG` and written as text or JSON lines to stderr or a
//! file, never to stdout, so the live view stays clean.

use anyhow::Context as _;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Arc;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One human-readable line per event, with its spans.
    Text,
    /// One JSON object per line, with the current span and the full span list.
    Json,
}

/// Installs the global subscriber. `RUST_LOG` uses target prefixes and levels
/// (`tt=debug`, `tt_application::engine::dispatch=trace,warn`); unset, only warnings and
/// errors show.
/// Each span also logs a line when it closes, with its duration.
pub(crate) fn init(format: LogFormat, file: Option<&Path>) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => spec
            .parse::<Targets>()
            .with_context(|| format!("RUST_LOG={spec:?} is not a valid filter"))?,
        _ => Targets::new().with_default(LevelFilter::WARN),
    };
    let writer = match file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the log file {}", path.display()))?;
            BoxMakeWriter::new(Arc::new(file))
        }
        None => BoxMakeWriter::new(std::io::stderr),
    };
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE);
    let installed = match format {
        LogFormat::Text => tracing_subscriber::registry()
            .with(layer)
            .with(filter)
            .try_init(),
        LogFormat::Json => tracing_subscriber::registry()
            .with(layer.json().with_current_span(true).with_span_list(true))
            .with(filter)
            .try_init(),
    };
    installed.context("cannot install the log subscriber")
}
