//! Damaged stored runs on the command line: `tt-agent check <runId>`, and the warning other
//! commands (`runs`, `events`, `graph`, `show`) print on stderr after what they could print
//! when the run they read is damaged. Such a command exits with [`DAMAGE_EXIT_CODE`].

use tt_runtime::error_codes;
use tt_runtime::{AgentRuntime, DamageFinding};

/// The exit status of a command that printed what it could of a damaged run (docs/storage.md,
/// "Damage"): distinct from 1, a command that failed.
pub(crate) const DAMAGE_EXIT_CODE: u8 = 3;

/// A command printed what it could, but what it read is damaged: the text says what.
#[derive(Debug)]
pub(crate) struct Damaged {
    text: String,
}

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Damaged {}

impl Damaged {
    /// The warning for runs listed together, one line each (`runs`).
    pub(crate) fn listed(lines: &[String]) -> Self {
        let mut text = "warning: damaged runs:".to_owned();
        for line in lines {
            text.push_str(&format!("\n  {line}"));
        }
        text.push_str("\n(`tt-agent check <runId>` checks a whole run; nothing was changed)");
        Self { text }
    }
}

/// The warning for run `run_id` and its `findings`, as an error that exits with
/// [`DAMAGE_EXIT_CODE`].
pub(crate) fn damaged(run_id: &str, findings: &[DamageFinding]) -> anyhow::Error {
    let mut text =
        format!("warning: run {run_id} is damaged; what was printed may be incomplete or stale:");
    for finding in findings {
        text.push_str(&format!("\n  {finding}"));
    }
    text.push_str(&format!(
        "\n(`tt-agent check {run_id}` checks the whole run; nothing was changed)"
    ));
    anyhow::Error::new(Damaged { text })
}

/// The codes of a run record `check` cannot read or rebuild: reported as damage.
const RECORD_DAMAGE_CODES: [error_codes::Code; 2] = [
    error_codes::AGENT_STORAGE_CORRUPT,
    error_codes::AGENT_RUN_RECORD_MISSING,
];

/// `tt-agent check <runId>`: the findings, one a line, or that there are none; with `json`
/// the whole answer of `check_run`.
pub(crate) async fn check(runtime: &AgentRuntime, run_id: &str, json: bool) -> anyhow::Result<()> {
    let damage = match runtime.check_run(run_id).await {
        Ok(damage) => damage,
        // The run is there but its record can neither be read nor rebuilt: that is damage
        // too (exit 3), not a command that failed.
        Err(error) if RECORD_DAMAGE_CODES.iter().any(|code| *code == error.code) => {
            let finding = DamageFinding {
                code: error.code.clone(),
                message: error.message.clone(),
            };
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "runId": run_id,
                        "findings": [finding],
                    }))?
                );
            } else {
                println!("run {run_id}: its run record cannot be read");
                println!("{finding}");
            }
            return Err(anyhow::Error::new(Damaged {
                text: format!("run {run_id} is damaged (its run record); nothing was changed"),
            }));
        }
        Err(error) => return Err(error.into()),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&damage)?);
    } else {
        println!(
            "run {run_id}: {}, {} events (last seq {})",
            damage.status.as_str(),
            damage.event_count,
            damage.last_seq
        );
        if damage.findings.is_empty() {
            println!("no damage found");
        }
        for finding in &damage.findings {
            println!("{finding}");
        }
    }
    if damage.findings.is_empty() {
        Ok(())
    } else {
        Err(anyhow::Error::new(Damaged {
            text: format!(
                "run {run_id} is damaged ({} finding{}); nothing was changed",
                damage.findings.len(),
                if damage.findings.len() == 1 { "" } else { "s" }
            ),
        }))
    }
}
