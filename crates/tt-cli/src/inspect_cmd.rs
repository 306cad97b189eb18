//! The commands that read stored runs: `runs`, `events`, `show`, `conversation`, `graph`,
//! `usage` and `export-otel`, each on a read-only runtime (safe beside a process writing the
//! same data dir; no model is ever called). What they print is as stored; a command that
//! finds the stored run damaged says so after printing and fails.

use tt_runtime::{ListRunsRequest, ReadEventsRequest};

use crate::damage;
use crate::render;
use crate::storage::Storage;

/// `tt-agent runs`: a line per run, newest first; with `unreadable`, then the runs that cannot
/// be read (a scan of every run, which the page alone does not need).
pub(crate) async fn runs(storage: &Storage, limit: usize, unreadable: bool) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    let runs = runtime
        .list_runs(ListRunsRequest { offset: 0, limit })
        .await?;
    // A run whose record cannot be read is not in the list: name it after the list.
    let mut damaged: Vec<String> = if unreadable {
        runtime
            .unreadable_runs()
            .await?
            .into_iter()
            .map(|run| format!("{}: unreadable, {}: {}", run.run_id, run.code, run.message))
            .collect()
    } else {
        Vec::new()
    };
    if runs.is_empty() && damaged.is_empty() {
        match &storage.url {
            Some(url) => println!("No runs in {url}."),
            None => println!("No runs in {}.", storage.data_dir.display()),
        }
    }
    for run in runs {
        // Cheap checks only: what the record says on its own (no journal is read).
        if let Some(end) = &run.unrecorded_end {
            damaged.push(format!(
                "{}: {}",
                run.id,
                tt_runtime::unrecorded_end_finding(end)
            ));
        }
        if let Some(rebuilt) = &run.rebuilt {
            damaged.push(format!(
                "{}: {}",
                run.id,
                tt_runtime::rebuilt_record_finding(rebuilt)
            ));
        }
        let profile = run
            .profile_id
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string);
        let branch = run.forked_from.as_ref().map_or_else(String::new, |from| {
            format!("  branch of {} after seq {}", from.run_id, from.seq)
        });
        println!(
            "{}  {:<16} {:<15} {}{branch}",
            run.id,
            run.status.as_str(),
            profile,
            run.created_at
        );
    }
    if !damaged.is_empty() {
        anyhow::bail!(damage::Damaged::listed(&damaged));
    }
    Ok(())
}

/// What `tt-agent events` prints: a page of a run's journal, or all of it live.
#[derive(Debug, clap::Args)]
pub(crate) struct EventsOptions {
    pub(crate) run_id: String,
    /// Only events after this seq.
    #[arg(long)]
    pub(crate) after: Option<u64>,
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    /// Only events of this invocation (primary or related).
    #[arg(long)]
    pub(crate) invocation: Option<String>,
    /// Keep printing new events until the run ends.
    #[arg(long)]
    pub(crate) follow: bool,
    /// With --follow, for a run another process or host executes: go on past an end that a
    /// resume may undo (interrupted, failed, cancelled), through `run_interrupted` and
    /// `run_resumed` when another host takes the run over, and stop only once the run
    /// completes, ends in partial success or is abandoned.
    #[arg(long, requires = "follow")]
    pub(crate) through_resumes: bool,
}

/// `tt-agent events`: one JSON event per line.
pub(crate) async fn events(storage: &Storage, options: EventsOptions) -> anyhow::Result<()> {
    let EventsOptions {
        run_id,
        after,
        limit,
        invocation,
        follow,
        through_resumes,
    } = options;
    let runtime = storage.inspect_runtime()?;
    if follow {
        // A run being created has no record for an instant: wait for it a little.
        wait_for_run_record(&runtime, &run_id).await?;
        let mut stream = runtime.subscribe(&run_id, after.unwrap_or(0), invocation);
        if through_resumes {
            stream = stream.through_resumes();
        }
        while let Some(event) = stream.next().await? {
            println!("{}", serde_json::to_string(&event)?);
        }
        return Ok(());
    }
    let page = runtime
        .read_events(ReadEventsRequest {
            run_id: run_id.clone(),
            after_seq: after,
            limit,
            invocation_id: invocation.clone(),
            ..Default::default()
        })
        .await?;
    let asked = limit.unwrap_or(tt_runtime::DEFAULT_EVENT_PAGE_LIMIT);
    let last = page.events.last().map(|event| event.seq);
    let missing = page.missing_seqs.clone();
    let full = page.events.len() >= asked.min(tt_runtime::MAX_EVENT_PAGE_LIMIT);
    for event in page.events {
        println!("{}", serde_json::to_string(&event)?);
    }
    // Say so when the page stopped at its limit and more events follow.
    let mut more_follow = false;
    if let (true, Some(last)) = (full, last) {
        let more = runtime
            .read_events(ReadEventsRequest {
                run_id: run_id.to_owned(),
                after_seq: Some(last),
                limit: Some(1),
                invocation_id: invocation.clone(),
                ..Default::default()
            })
            .await?;
        if !more.events.is_empty() {
            more_follow = true;
            eprintln!(
                "(stopped at {} events; more follow: tt-agent events {run_id} --after {last})",
                asked.min(tt_runtime::MAX_EVENT_PAGE_LIMIT)
            );
        }
    }
    // What was printed is incomplete: say which events are missing and fail.
    let mut findings = Vec::new();
    if !missing.is_empty() {
        let listed: Vec<String> = missing.iter().map(u64::to_string).collect();
        findings.push(tt_runtime::DamageFinding::new(
            tt_runtime::error_codes::AGENT_JOURNAL_DAMAGED,
            format!(
                "the journal is missing seq {} (a whole journal has no gaps; the events printed are all it holds)",
                listed.join(", ")
            ),
        ));
    }
    // The journal's end was printed: say when the run's end is not in it (an empty
    // journal, one that stops short of the run record's end, an end it refused).
    if !more_follow && invocation.is_none() {
        use tt_runtime::error_codes as codes;
        let damage = runtime.check_run(&run_id).await?;
        findings.extend(damage.findings.into_iter().filter(|finding| {
            [
                codes::AGENT_JOURNAL_EMPTY,
                codes::AGENT_JOURNAL_END_MISSING,
                codes::AGENT_RUN_END_UNRECORDED,
            ]
            .iter()
            .any(|code| *code == finding.code)
        }));
    }
    if !findings.is_empty() {
        return Err(damage::damaged(&run_id, &findings));
    }
    Ok(())
}

/// `tt-agent show`: one stored record, pretty-printed.
pub(crate) async fn show(storage: &Storage, run_id: &str, reference: &str) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    let record = runtime.read_record(run_id, reference).await?;
    println!("{}", serde_json::to_string_pretty(&record)?);
    // The run record and its agents' and tasks' records: say when they contradict one
    // another (the cheap check; no journal is read).
    let reference = reference.trim().trim_start_matches("./");
    if ["run.json", "manifest.json"].contains(&reference)
        || reference.starts_with("invocations/")
        || reference.starts_with("tasks/")
    {
        let damage = runtime.timeline_projection(run_id).await?.damage;
        if !damage.is_empty() {
            return Err(damage::damaged(run_id, &damage));
        }
    }
    Ok(())
}

/// `tt-agent conversation`: one agent's conversation as JSON.
pub(crate) async fn conversation(
    storage: &Storage,
    run_id: &str,
    invocation_id: &str,
) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    let conversation = runtime.agent_conversation(run_id, invocation_id).await?;
    println!("{}", serde_json::to_string_pretty(&conversation)?);
    Ok(())
}

/// `tt-agent export-otel`: the run's spans as OTLP JSON.
pub(crate) async fn export_otel(storage: &Storage, run_id: &str) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    println!(
        "{}",
        serde_json::to_string(&runtime.export_otel(run_id).await?)?
    );
    Ok(())
}

/// `tt-agent graph`: the agent tree, its usage and each agent's model.
pub(crate) async fn graph(storage: &Storage, run_id: &str) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    let projection = runtime.timeline_projection(run_id).await?;
    print!("{}", render::agent_tree(&projection));
    let usage = runtime.usage(run_id).await?;
    print!("{}", render::usage_rollup(&projection, &usage));
    // Each agent's model: the binding events (one per agent, early in the journal), and the
    // switches to a fallback model after them.
    let mut bindings = Vec::new();
    let mut after = 0;
    loop {
        let page = runtime
            .read_events(ReadEventsRequest {
                run_id: run_id.to_owned(),
                after_seq: Some(after),
                limit: Some(1000),
                ..Default::default()
            })
            .await?;
        let Some(last) = page.events.last() else {
            break;
        };
        after = last.seq;
        bindings.extend(page.events.into_iter().filter(|e| {
            matches!(
                e.event_type,
                tt_runtime::RunEventType::AgentModelBindingResolved
                    | tt_runtime::RunEventType::AgentModelFallbackSwitched
            )
        }));
    }
    print!("{}", render::model_bindings(&projection, &bindings));
    // What was printed is as stored; say when what is stored is damaged.
    let damage = runtime.check_run(run_id).await?;
    if damage.is_damaged() {
        return Err(damage::damaged(run_id, &damage.findings));
    }
    Ok(())
}

/// `tt-agent usage`: the run's tokens and cost, in total and per agent, or as JSON.
pub(crate) async fn usage(storage: &Storage, run_id: &str, json: bool) -> anyhow::Result<()> {
    let runtime = storage.inspect_runtime()?;
    let usage = runtime.usage(run_id).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&usage)?);
    } else {
        let projection = runtime.timeline_projection(run_id).await?;
        print!("{}", render::usage_total(&usage));
        print!("{}", render::usage_rollup(&projection, &usage));
    }
    Ok(())
}

/// Waits up to 10 s for `run_id`'s record (a run being created has none for an instant);
/// then a missing run is `agent.not_found` as usual.
async fn wait_for_run_record(
    runtime: &tt_runtime::AgentRuntime,
    run_id: &str,
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match runtime.get_run(run_id).await {
            Ok(_) => return Ok(()),
            Err(error)
                if error.code == tt_runtime::error_codes::AGENT_NOT_FOUND
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}
