//! Two hosts on one PostgreSQL database, as real processes (issue #24). Host A (`tt-agent run`,
//! data dir A) starts a 64-agent fan-out against a fake OpenAI-compatible server on 127.0.0.1
//! that answers a fixed number of model calls and then holds every request; a follower
//! (`tt-agent events --follow --through-resumes`, data dir C) streams the journal from the
//! start. Once the follower has seen every answer A got stored, A is killed with SIGKILL. Host B
//! (`tt-agent resume`, data dir B, a second server) finds the run interrupted (A's owner lock
//! went with its sessions), resumes and completes it. B asks for no turn A had an answer to and
//! for none twice, every turn of the fan-out is answered once by A or B, and the follower's
//! stream is seqs 1..last with no gap or duplicate, through `run_interrupted` and `run_resumed`,
//! ending with `run_completed`.
//!
//! The workload is the fan-out benchmark's (`tt-bench fanout`): its two profiles, the root
//! delegating 64 children at once, awaiting them and finishing; each child writing four notes
//! and returning. The server decides each answer from the request alone (the root is the agent
//! offered `agent_delegate`, a child is named by the `[child-NNNN]` tag of its brief, the round
//! is the number of assistant messages so far), as the benchmark's scripted model does.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHILDREN: usize = 64;
/// Model turns of a child: four note writes, then `task_return`.
const CHILD_TURNS: usize = 5;
/// Model turns of the root: delegate, await, finish.
const ROOT_TURNS: usize = 3;
/// Host A's server answers this many model calls, then holds every request.
const ANSWERED_BY_A: usize = 120;
/// How long any one step may take before the test gives up (a hang guard, not a measurement).
const HANG_GUARD: Duration = Duration::from_secs(600);

/// Which turns (`root/2`, `child-0007/3`) a server answered, in order.
type Answered = Arc<Mutex<Vec<String>>>;

/// The text of a message's content, whether a string or a list of parts.
fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The child's index from the first `[child-NNNN]` tag in its user messages.
fn child_index(body: &Value) -> Option<usize> {
    body["messages"]
        .as_array()?
        .iter()
        .filter(|message| message["role"] == "user")
        .find_map(|message| {
            let text = content_text(message);
            let at = text.find("[child-")? + "[child-".len();
            let digits: String = text[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (text[at + digits.len()..].starts_with(']') && digits.len() == 4)
                .then(|| digits.parse().ok())
                .flatten()
        })
}

fn offers(body: &Value, tool: &str) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == tool))
}

/// The turn a request asks for and its answer (call id, tool, arguments).
fn decide(body: &Value) -> (String, Vec<(String, &'static str, Value)>) {
    let round = crate::model_server::assistant_turns(body) + 1;
    if offers(body, "agent_delegate") {
        let calls = match round {
            1 => (1..=CHILDREN)
                .map(|index| {
                    (
                        format!("call_d{index:04}"),
                        "agent_delegate",
                        json!({"agentId": "fanout-child", "task": {"objective":
                            format!("[child-{index:04}] Investigate topic #{index} and write short notes.")}}),
                    )
                })
                .collect(),
            2 => vec![(
                "call_await".to_owned(),
                "agent_await",
                json!({"mode": "allCompleted", "timeoutMs": 300_000}),
            )],
            _ => vec![("call_finish".to_owned(), "workspace_finish", json!({}))],
        };
        return (format!("root/{round}"), calls);
    }
    let index = child_index(body).expect("a child's brief names it");
    let name = format!("child-{index:04}");
    let call = if round < CHILD_TURNS {
        (
            format!("call_c{index:04}_w{round}"),
            "workspace_write_file",
            json!({"path": format!("scratch/{name}/{round}.md"),
                "content": format!("# Notes on topic #{index}, part {round}\n\nIt holds up.\n")}),
        )
    } else {
        (
            format!("call_c{index:04}_ret"),
            "task_return",
            json!({"summary": format!("Topic #{index} is covered; notes are under scratch/{name}/."),
                "findings": [{"point": format!("finding on topic #{index}"), "confidence": "medium"}]}),
        )
    };
    (format!("{name}/{round}"), vec![call])
}

/// A fan-out server that records what it answered; past `limit` answers it holds every request.
fn server(answered: Answered, limit: Option<usize>) -> String {
    crate::model_server::start_calls(move |body| {
        let (key, calls) = decide(body);
        let mut answered = answered.lock().unwrap();
        if limit.is_some_and(|limit| answered.len() >= limit) {
            return None;
        }
        answered.push(key);
        Some(calls)
    })
}

/// The benchmark's two profiles, the root allowed 64 children at once.
fn write_profiles(dir: &Path) {
    let mut root: Value =
        serde_json::from_str(include_str!("../../tt-bench/profiles/fanout-root.json")).unwrap();
    root["delegation"]["maxInvocationsPerRun"] = json!(CHILDREN);
    root["delegation"]["maxConcurrentInvocations"] = json!(CHILDREN);
    root["tools"]["maxCallsPerRun"] = json!(CHILDREN + 16);
    std::fs::write(dir.join("fanout-root.json"), root.to_string()).unwrap();
    std::fs::write(
        dir.join("fanout-child.json"),
        include_str!("../../tt-bench/profiles/fanout-child.json"),
    )
    .unwrap();
}

/// `tt-agent` on `data_dir` and the store `url`, its output to `log` (never a pipe that could
/// fill up and stall it).
fn tt_agent(data_dir: &Path, url: &str, log: &Path, args: &[&str]) -> Child {
    let out = std::fs::File::create(log).unwrap();
    let err = out.try_clone().unwrap();
    crate::agent_in(data_dir)
        .env("TT_STORE_URL", url)
        .env_remove("TT_STORE_LEASE_MS")
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit; its exit code and `log`.
fn wait(mut child: Child, log: &Path, what: &str) -> (Option<i32>, String) {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), std::fs::read_to_string(log).unwrap());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} hung: {}", std::fs::read_to_string(log).unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_host_process_resumes_a_64_agent_fan_out_after_the_first_is_killed() {
    let (cluster, url, dir) = crate::store::new_database("tt_cli_multi_host");
    let [data_a, data_b, data_c, profiles] =
        ["host-a", "host-b", "follower", "profiles"].map(|name| dir.path().join(name));
    std::fs::create_dir_all(&profiles).unwrap();
    write_profiles(&profiles);

    // Host A starts the fan-out; its server stops answering after ANSWERED_BY_A calls.
    let answered_a = Answered::default();
    let connection_a = format!(
        "openai:{}",
        server(Arc::clone(&answered_a), Some(ANSWERED_BY_A))
    );
    let log_a = dir.path().join("host-a.log");
    let mut host_a = tt_agent(
        &data_a,
        &url,
        &log_a,
        &[
            "run",
            "--profiles",
            profiles.to_str().unwrap(),
            "--profile",
            "fanout-root",
            "--connection",
            &connection_a,
            "--model",
            "m",
            &format!("Investigate {CHILDREN} topics in parallel and collect short notes on each."),
        ],
    );
    let deadline = Instant::now() + HANG_GUARD;
    let run_id = loop {
        let log = std::fs::read_to_string(&log_a).unwrap();
        if let Some(id) = log.lines().find_map(|line| {
            line.strip_prefix("run ")
                .and_then(|rest| rest.split_whitespace().next())
        }) {
            break id.to_owned();
        }
        assert!(host_a.try_wait().unwrap().is_none(), "host A ended: {log}");
        assert!(Instant::now() < deadline, "host A never started: {log}");
        std::thread::sleep(Duration::from_millis(20));
    };

    // The follower, on a third data dir, streams the journal from the start.
    let follower_log = dir.path().join("follower.log");
    let mut follower = crate::agent_in(&data_c)
        .env("TT_STORE_URL", &url)
        .args(["events", &run_id, "--follow", "--through-resumes"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&follower_log).unwrap())
        .spawn()
        .unwrap();
    let stream: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let reader = {
        let stdout = follower.stdout.take().unwrap();
        let stream = Arc::clone(&stream);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
                let kind = event["type"].as_str().unwrap().to_owned();
                stream
                    .lock()
                    .unwrap()
                    .push((event["seq"].as_u64().unwrap(), kind));
            }
        })
    };

    // A is killed once the follower has seen every answer A got stored: A's server holds every
    // later request, so what is stored by then is all A will ever store of the model's work.
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let answered = answered_a.lock().unwrap().len();
        let stored = stream
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, kind)| kind == "model_response_stored")
            .count();
        if answered == ANSWERED_BY_A && stored >= ANSWERED_BY_A {
            break;
        }
        assert!(
            host_a.try_wait().unwrap().is_none(),
            "host A ended early: {}",
            std::fs::read_to_string(&log_a).unwrap()
        );
        assert!(
            follower.try_wait().unwrap().is_none(),
            "the follower ended early"
        );
        assert!(
            Instant::now() < deadline,
            "host A stored {stored} of {answered} answers"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    host_a.kill().unwrap();
    host_a.wait().unwrap();
    let answered_by_a: BTreeSet<String> = answered_a.lock().unwrap().iter().cloned().collect();
    assert_eq!(
        answered_by_a.len(),
        ANSWERED_BY_A,
        "A was asked a turn twice"
    );

    // Host B, on a data dir of its own and a second server, finds the run interrupted at once
    // and resumes it to the end.
    let answered_b = Answered::default();
    let connection_b = format!("openai:{}", server(Arc::clone(&answered_b), None));
    let log_b = dir.path().join("host-b.log");
    let host_b = tt_agent(
        &data_b,
        &url,
        &log_b,
        &[
            "resume",
            &run_id,
            "--connection",
            &connection_b,
            "--model",
            "m",
        ],
    );
    let (code, output) = wait(host_b, &log_b, "host B's resume");
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("run interrupted"), "{output}");
    assert!(output.contains("ended: completed"), "{output}");

    // Every turn was answered once, by A or by B: none A answered was asked again.
    let answered_by_b = answered_b.lock().unwrap().clone();
    let repeated: Vec<&String> = answered_by_b
        .iter()
        .filter(|key| answered_by_a.contains(*key))
        .collect();
    assert!(repeated.is_empty(), "B asked again: {repeated:?}");
    let distinct_b: BTreeSet<&String> = answered_by_b.iter().collect();
    assert_eq!(
        distinct_b.len(),
        answered_by_b.len(),
        "B asked a turn twice"
    );
    assert_eq!(
        answered_by_a.len() + answered_by_b.len(),
        ROOT_TURNS + CHILDREN * CHILD_TURNS
    );

    // The follower's stream ended with the run's end: seqs 1..last, no gap, no duplicate.
    let (code, errors) = wait(follower, &follower_log, "the follower");
    assert_eq!(code, Some(0), "the follower failed: {errors}");
    reader.join().unwrap();
    let stream = stream.lock().unwrap();
    let seqs: Vec<u64> = stream.iter().map(|(seq, _)| *seq).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(
        seqs, expected,
        "the follower's stream has a gap or a duplicate"
    );
    let types: Vec<&str> = stream.iter().map(|(_, kind)| kind.as_str()).collect();
    assert!(types.contains(&"run_interrupted"), "{types:?}");
    assert!(types.contains(&"run_resumed"), "{types:?}");
    assert_eq!(
        types.last(),
        Some(&"run_completed"),
        "{:?}",
        &types[types.len().saturating_sub(8)..]
    );
    drop(cluster);
}
