//! `tt-agent fork <runId>`: branches a run (docs/branching.md) into a new run of the same chat
//! and shows the branch live like `run` and `resume` show theirs. The branch replays what
//! its source did up to the fork point and continues from there on the model given (or the
//! demo's scripted model for a run of `tt-agent demo`).

use tt_runtime::{ForkChanges, ForkPoint, ForkRunRequest, InvocationId};

use crate::run_cmd::{GenerationArgs, ModelArgs};

/// Reads `--at`: `last-commit`, a journal seq, or `<invocationId>:<round>` (`root:3` for the
/// root agent's round 3).
pub(crate) fn parse_fork_point(text: &str) -> Result<ForkPoint, String> {
    let text = text.trim();
    if text == "last-commit" {
        return Ok(ForkPoint::LastCommit);
    }
    if let Ok(seq) = text.parse::<u64>() {
        return Ok(ForkPoint::Seq { seq });
    }
    if let Some((agent, round)) = text.rsplit_once(':')
        && let Ok(round) = round.parse::<u32>()
    {
        let invocation_id = match agent {
            "root" => InvocationId::root(),
            other => InvocationId::from_raw(other),
        };
        return Ok(ForkPoint::AgentRound {
            invocation_id,
            round,
        });
    }
    Err(format!(
        "`{text}` is no fork point: give a journal seq (`tt-agent events <runId>` shows them), \
         `last-commit`, or AGENT:ROUND (`root:3`, `inv_…:2`)"
    ))
}

/// What `tt-agent fork` was asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct ForkOptions {
    /// The run to branch (`tt-agent runs` lists runs).
    pub run_id: String,
    /// Where to branch: a journal seq, `last-commit` (the default), or AGENT:ROUND
    /// (`root:3`: just before the root agent's round 3).
    #[arg(long, default_value = "last-commit", value_parser = parse_fork_point)]
    pub at: ForkPoint,
    /// A note the foreground agent reads before its first model request after the fork
    /// point.
    #[arg(long)]
    pub guidance: Option<String>,
    /// Ask again with this request instead of the user's (edit and regenerate): only with
    /// `--at root:1`, before the first answer.
    #[arg(long)]
    pub user_request: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub generation: GenerationArgs,
    /// Continue on the demo's scripted model (a run of `tt-agent demo`; recognised without
    /// this flag when no model is given).
    #[arg(long)]
    pub demo: bool,
}

pub(crate) async fn fork(
    storage: &crate::storage::Storage,
    options: ForkOptions,
    signals: &tt_runtime::StopSignals,
) -> anyhow::Result<()> {
    let (runtime, description) = crate::run_cmd::runtime_continuing(
        storage,
        &options.run_id,
        &options.model,
        options.demo,
        &format!("the branch of run {} continues on", options.run_id),
    )
    .await?;
    let generation = options.generation.settings()?;
    println!("tt-agent fork: {description}");
    println!("{}\n", storage.describe());
    if signals.is_requested() {
        anyhow::bail!("stopped by a signal before the branch started");
    }
    let request = ForkRunRequest {
        at: options.at,
        changes: ForkChanges {
            guidance: options.guidance,
            user_request: options.user_request,
            generation: (!generation.is_empty()).then_some(generation),
            ..ForkChanges::default()
        },
    };
    let run = signals
        .shielded(runtime.fork_run(&options.run_id, request))
        .await?;
    if let Some(from) = &run.forked_from {
        println!(
            "branched run {} after seq {} of run {}",
            run.id, from.seq, from.run_id
        );
    }
    let finished = crate::live::follow(&runtime, &run, signals, "branched").await?;
    crate::live::completed_or_why(&finished, "the branch")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_points_read_as_seqs_commits_and_rounds() {
        assert_eq!(parse_fork_point("42"), Ok(ForkPoint::Seq { seq: 42 }));
        assert_eq!(parse_fork_point("last-commit"), Ok(ForkPoint::LastCommit));
        assert_eq!(
            parse_fork_point("root:3"),
            Ok(ForkPoint::AgentRound {
                invocation_id: InvocationId::root(),
                round: 3
            })
        );
        assert_eq!(
            parse_fork_point("inv_ab:2"),
            Ok(ForkPoint::AgentRound {
                invocation_id: InvocationId::from_raw("inv_ab"),
                round: 2
            })
        );
        assert!(parse_fork_point("soon").is_err());
    }
}
