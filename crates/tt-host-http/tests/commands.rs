//! The host command table over HTTP: every command of `tt_runtime::HOST_COMMANDS` is reachable
//! at `POST /api/commands/{name}` and answers as the runtime does; the REST routes and the
//! generic endpoint give the same answer for the same command.

use serde_json::{Value, json};
use tt_runtime::{CommitBridgeChoice, HOST_COMMANDS};

use crate::support::{server, writer_script};

#[tokio::test]
async fn every_command_of_the_table_is_served_and_answers_like_the_runtime() {
    let server = server(&writer_script(), CommitBridgeChoice::Transcript, None).await;
    let listed = server.get("/api/commands").await;
    assert_eq!(listed.status, 200);
    let names: Vec<&str> = listed
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert_eq!(names, HOST_COMMANDS);
    // A run to name, and one that does not exist: every command answers over HTTP exactly
    // what the runtime answers (the same JSON, or the same code).
    let run_id = server.start("default-writer", "Write a scene.").await;
    server.runtime.wait_for_run(&run_id).await.unwrap();
    for name in HOST_COMMANDS {
        if ["start_agent_run", "wait_agent_run", "fork_agent_run"].contains(name) {
            continue; // Answers that differ by run id or time; covered below and elsewhere.
        }
        for request in [
            json!({}),
            json!({"runId": run_id}),
            json!({"runId": "run_missing"}),
        ] {
            let over_http = server
                .post(&format!("/api/commands/{name}"), &request)
                .await;
            let direct = server.runtime.execute_command(name, request.clone()).await;
            match direct {
                Ok(answer) => {
                    assert_eq!(
                        over_http.status, 200,
                        "{name} {request}: {}",
                        over_http.body
                    );
                    assert_eq!(over_http.body, answer, "{name} {request}");
                }
                Err(error) => {
                    assert!(over_http.status >= 400, "{name} {request}");
                    assert_eq!(
                        over_http.body["code"],
                        error.code.as_str(),
                        "{name} {request}"
                    );
                }
            }
        }
    }
    let unknown = server.post("/api/commands/start_the_run", &json!({})).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["code"], "host.command_unknown");
    let misfit = server
        .post(
            "/api/commands/read_agent_run",
            &json!({"runId": run_id, "x": 1}),
        )
        .await;
    assert_eq!(misfit.status, 400);
    assert_eq!(misfit.body["code"], "host.request_invalid");

    // The REST route and the command are one mapping.
    let rest = server.get(&format!("/api/runs/{run_id}/timeline")).await;
    let command = server
        .post(
            "/api/commands/read_agent_timeline",
            &json!({"runId": run_id}),
        )
        .await;
    assert_eq!(rest.body, command.body);
    let started = server
        .post(
            "/api/commands/start_agent_run",
            &json!({"stableChatId": "http-chat", "userInput": "Write.", "profileId": "default-writer"}),
        )
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let waited = server
        .post(
            "/api/commands/wait_agent_run",
            &json!({"runId": started.body["id"]}),
        )
        .await;
    assert_eq!(waited.body["status"], Value::from("completed"));
}
