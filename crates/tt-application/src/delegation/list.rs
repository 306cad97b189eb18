//! `agent.list`: the agents this agent may delegate to or hand off to, its task slots and
//! waiting line, and what it may still spend. It runs below the engine on narrow inputs: the
//! profile repository, the caller's profile, and a [`TaskView`] of the caller's tasks and
//! budgets that the engine implements (`engine::tasks::tools::RunTaskView`).

use serde_json::json;
use tt_domain::error_codes;
use tt_domain::ids::ProfileId;
use tt_domain::profile::{DEFAULT_PROFILE_ID, ResolvedProfile};
use tt_domain::task::{AgentTaskRecord, TaskStatus};
use tt_domain::tool::AgentToolCall;
use tt_ports::ProfileRepository;

use crate::delegation::policy::{Denial, Operation, admit, admit_caller};
use crate::delegation::rendering::{AgentListEntry, render_agent_list, render_task_slots};
use crate::error::{ApplicationResult, ToolCallError, ToolError};
use crate::tools::ToolSuccess;
use crate::tools::args::Args;

/// What `agent.list` reads of the caller's delegated tasks and token budgets.
pub(crate) trait TaskView {
    /// The tasks the caller delegated (not its handoffs), in the order it delegated them.
    async fn delegated_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>>;
    /// Where a `queued` task waits in its delegator's line (1 = next to start); `None` when it
    /// is not waiting (a queued task that is not in the line was admitted and is starting).
    fn queue_position(&self, task: &AgentTaskRecord) -> Option<usize>;
    /// Tokens spent and the limit of the caller's task budget, when its task has one.
    fn task_tokens(&self) -> Option<(u64, u64)>;
    /// Tokens spent in the whole run, and the run's limit if it has one.
    fn run_tokens(&self) -> (u64, Option<u64>);
}

const MAX_LIST_LIMIT: i64 = 20;
const DEFAULT_LIST_LIMIT: i64 = 8;

/// `agent.list`: the agents this agent may delegate to or hand off to.
pub(crate) async fn agent_list(
    profiles: &dyn ProfileRepository,
    caller_profile: &ResolvedProfile,
    tasks: &impl TaskView,
    call: &AgentToolCall,
) -> Result<ToolSuccess, ToolCallError> {
    let (purpose, query, limit) = parse_list_args(call)?;
    let caller = &caller_profile.definition.delegation;
    let wanted: &[Operation] = match purpose {
        "delegate" => &[Operation::Delegate],
        "handoff" => &[Operation::Handoff],
        _ => &[Operation::Delegate, Operation::Handoff],
    };
    let denials: Vec<Denial> = wanted
        .iter()
        .filter_map(|operation| admit_caller(caller_profile, *operation).err())
        .collect();
    if denials.len() == wanted.len()
        && let Some(denial) = denials.first()
    {
        return Err(ToolError::with_reason(
            error_codes::AGENT_DELEGATION_POLICY_DENIED,
            denial.code(),
            "you cannot call on other agents for this purpose.",
        )
        .into());
    }
    let (entries, structured_agents) =
        listed_agents(profiles, caller_profile, wanted, query.as_deref(), limit).await?;
    let mut content = render_agent_list(purpose, &entries);
    let mut structured = json!({"purpose": purpose, "agents": structured_agents});
    if caller.can_delegate && purpose != "handoff" {
        add_task_slots(
            tasks,
            caller.max_concurrent_invocations,
            &mut content,
            &mut structured,
        )
        .await?;
    }
    add_budget(tasks, &mut content, &mut structured);
    Ok(ToolSuccess::new(content, structured))
}

/// `{purpose?, query?, limit?}`: the purpose (`any` by default), the lowercased query when
/// not blank, and how many agents to list.
fn parse_list_args(call: &AgentToolCall) -> Result<(&str, Option<String>, i64), ToolError> {
    let args = Args::parse(&call.arguments, &["purpose", "query", "limit"])?;
    let purpose = args.opt_str("purpose")?.unwrap_or("any");
    let purpose = match purpose {
        "any" => "any",
        "delegate" => "delegate",
        "handoff" => "handoff",
        _ => {
            return Err(ToolError::invalid_arguments(
                "`purpose` must be `any`, `delegate` or `handoff`",
            ));
        }
    };
    let query = args
        .opt_str("query")?
        .map(str::to_lowercase)
        .filter(|q| !q.trim().is_empty());
    let limit = args.opt_i64("limit")?.unwrap_or(DEFAULT_LIST_LIMIT);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(ToolError::invalid_arguments(format!(
            "`limit` must be between 1 and {MAX_LIST_LIMIT}"
        )));
    }
    Ok((purpose, query, limit))
}

/// The agents the caller may call on for one of `wanted`, by id, matching `query`, at most
/// `limit`: their entries for the text and their structured form. Profiles that do not
/// resolve are skipped silently.
async fn listed_agents(
    profiles: &dyn ProfileRepository,
    caller_profile: &ResolvedProfile,
    wanted: &[Operation],
    query: Option<&str>,
    limit: i64,
) -> ApplicationResult<(Vec<AgentListEntry>, Vec<serde_json::Value>)> {
    let mut ids = profiles.list_profile_ids().await?;
    if let Ok(default_id) = ProfileId::parse(DEFAULT_PROFILE_ID)
        && !ids.contains(&default_id)
    {
        ids.push(default_id);
    }
    ids.sort();
    let mut entries = Vec::new();
    let mut structured_agents = Vec::new();
    for id in ids {
        let Ok(target) = crate::profiles::resolve(profiles, Some(id.as_str())).await else {
            continue;
        };
        let policy = &target.definition.delegation;
        let operations: Vec<&str> = wanted
            .iter()
            .filter(|operation| admit(caller_profile, &target, **operation).is_ok())
            .map(|operation| match operation {
                Operation::Delegate => "delegate",
                Operation::Handoff => "handoff",
            })
            .collect();
        if operations.is_empty() {
            continue;
        }
        let description = policy
            .description_for_agents
            .clone()
            .or_else(|| target.definition.description.clone())
            .unwrap_or_default();
        if let Some(query) = query {
            let haystack =
                format!("{} {} {}", id, target.definition.display_name, description).to_lowercase();
            if !haystack.contains(query) {
                continue;
            }
        }
        structured_agents.push(json!({
            "profileId": id, "displayName": target.definition.display_name, "description": description,
            "operations": operations, "resultBudgetTokens": policy.result_budget_tokens,
            "maxInvocationsPerRun": policy.max_invocations_per_run,
            "maxConcurrentInvocations": policy.max_concurrent_invocations, "maxHandoffDepth": policy.max_handoff_depth,
        }));
        entries.push(AgentListEntry {
            profile_id: id.to_string(),
            operations,
            description,
        });
        if entries.len() as i64 >= limit {
            break;
        }
    }
    Ok((entries, structured_agents))
}

/// The caller's own slots and waiting line, so it can plan its next delegations: in the text
/// when something runs or waits, and always in `structured.tasks`.
async fn add_task_slots(
    tasks: &impl TaskView,
    slots: u32,
    content: &mut String,
    structured: &mut serde_json::Value,
) -> ApplicationResult<()> {
    let mine = tasks.delegated_tasks().await?;
    // A task still `queued` but not in the line was admitted and is starting: it holds a slot
    // (its record turns `running` a moment later).
    let running = mine
        .iter()
        .filter(|task| match task.status {
            TaskStatus::Running => true,
            TaskStatus::Queued => tasks.queue_position(task).is_none(),
            _ => false,
        })
        .count();
    let mut waiting: Vec<(String, usize)> = mine
        .iter()
        .filter(|task| task.status == TaskStatus::Queued)
        .filter_map(|task| {
            tasks
                .queue_position(task)
                .map(|position| (task.id.to_string(), position))
        })
        .collect();
    waiting.sort_by_key(|(_, position)| *position);
    if running > 0 || !waiting.is_empty() {
        content.push_str("\n\n");
        content.push_str(&render_task_slots(running, slots, &waiting));
    }
    structured["tasks"] = json!({
        "running": running, "slots": slots,
        "waiting": waiting.iter().map(|(id, position)| json!({"taskId": id, "queuePosition": position})).collect::<Vec<_>>(),
    });
    Ok(())
}

/// What the caller may still spend: its task's token budget, and the whole job's.
fn add_budget(tasks: &impl TaskView, content: &mut String, structured: &mut serde_json::Value) {
    let mut budget = serde_json::Map::new();
    if let Some((spent, limit)) = tasks.task_tokens() {
        let left = limit.saturating_sub(spent);
        content.push_str(&format!(
            "\n\nYour token budget for this task: {left} of {limit} model tokens left, counting what the tasks you delegate use."
        ));
        budget.insert("taskTokensLeft".to_owned(), json!(left));
    }
    if let (spent, Some(limit)) = tasks.run_tokens() {
        let left = limit.saturating_sub(spent);
        content.push_str(&format!(
            "\n\nToken budget of the whole job: {left} of {limit} model tokens left, shared by every agent on it."
        ));
        budget.insert("runTokensLeft".to_owned(), json!(left));
    }
    if !budget.is_empty() {
        structured["budget"] = serde_json::Value::Object(budget);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_domain::profile::{ProfileSource, default_writer_definition, resolve_profile};
    use tt_testkit::fakes::InMemoryStore;

    /// A view of two delegated tasks, one running and one first in the waiting line.
    struct Tasks;

    fn task(id: &str, status: TaskStatus) -> AgentTaskRecord {
        crate::delegation::testing::task_record(id, "inv_root", status)
    }

    impl TaskView for Tasks {
        async fn delegated_tasks(&self) -> ApplicationResult<Vec<AgentTaskRecord>> {
            Ok(vec![
                task("task_running", TaskStatus::Running),
                task("task_waiting", TaskStatus::Queued),
            ])
        }

        fn queue_position(&self, task: &AgentTaskRecord) -> Option<usize> {
            (task.id.as_str() == "task_waiting").then_some(1)
        }

        fn task_tokens(&self) -> Option<(u64, u64)> {
            Some((100, 400))
        }

        fn run_tokens(&self) -> (u64, Option<u64>) {
            (700, None)
        }
    }

    #[tokio::test]
    async fn lists_admitted_agents_with_the_callers_slots_and_budget_without_an_engine() {
        let store = InMemoryStore::new();
        let mut helper = default_writer_definition();
        helper.id = ProfileId::parse("helper").unwrap();
        helper.delegation.callable = true;
        helper.delegation.allow_as_subagent = true;
        helper.delegation.allowed_callers = vec!["*".to_owned()];
        store.save_profile(&helper).await.unwrap();
        let mut lead = default_writer_definition();
        lead.delegation.can_delegate = true;
        lead.delegation.max_concurrent_invocations = 1;
        let lead = resolve_profile(lead, ProfileSource::built_in()).unwrap();
        let call = AgentToolCall::new("call_1", "agent_list", json!({"purpose": "delegate"}));

        let listed = agent_list(store.as_ref(), &lead, &Tasks, &call)
            .await
            .unwrap();

        let agents: Vec<&str> = listed.structured["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|agent| agent["profileId"].as_str().unwrap())
            .collect();
        assert_eq!(agents, ["helper"]);
        assert_eq!(
            listed.structured["tasks"],
            json!({"running": 1, "slots": 1, "waiting": [{"taskId": "task_waiting", "queuePosition": 1}]})
        );
        assert_eq!(listed.structured["budget"], json!({"taskTokensLeft": 300}));
        assert!(
            listed.content.contains("300 of 400 model tokens left"),
            "{}",
            listed.content
        );
    }
}
