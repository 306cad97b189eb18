//! Every endpoint over real HTTP, and the guard in front of them: token, Host, Origin, body
//! size and media type, ids.

use reqwest::Method;
use serde_json::{Value, json};
use tt_runtime::CommitBridgeChoice;

use crate::support::{
    TestServer, cut_journal_end, finished_runs, server, server_in, write_local_connection,
    writer_script,
};

async fn transcript_server() -> TestServer {
    server(&writer_script(), CommitBridgeChoice::Transcript, None).await
}

/// Waits (on the runtime's own event stream) for the first event of a type and returns it.
async fn wait_for_event(server: &TestServer, run_id: &str, event_type: &str) -> Value {
    let mut events = server.runtime.subscribe(run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == event_type {
            return serde_json::to_value(event).unwrap();
        }
    }
    panic!("the run ended without {event_type}");
}

/// `profile` writes a draft to output/main.md, commits and finishes.
fn draft_script(profile: &str) -> String {
    json!({"schemaVersion": 1, "agents": {profile: [
        {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "draft"}}]},
        {"toolCalls": [{"id": "c2", "name": "workspace_commit", "arguments": {}}]},
        {"toolCalls": [{"id": "c3", "name": "workspace_finish", "arguments": {}}]}
    ]}})
    .to_string()
}

/// A transcript server whose run wrote its draft and waits a minute for the writer's second
/// answer (so what a test sends lands while the run is live); the server and the run's id.
async fn waiting_run() -> (TestServer, String) {
    let script = json!({"schemaVersion": 1, "agents": {"default-writer": [
        {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "draft"}}]},
        {"delayMs": 60000, "toolCalls": [{"id": "c2", "name": "workspace_finish"}]}
    ]}})
    .to_string();
    let server = server(&script, CommitBridgeChoice::Transcript, None).await;
    let run_id = server.start("default-writer", "Write.").await;
    wait_for_event(&server, &run_id, "workspace_file_written").await;
    (server, run_id)
}

#[tokio::test]
async fn every_request_needs_the_token() {
    let server = transcript_server().await;
    let bare = server
        .send(server.client.get(server.endpoint("/api/runs")))
        .await;
    bare.assert_refused(401, "http.token_missing");
    let wrong = server
        .send(server.client.get(server.endpoint("/api/runs?token=nope")))
        .await;
    wrong.assert_refused(401, "http.token_invalid");
    let page_without = server.send(server.client.get(server.endpoint("/"))).await;
    assert_eq!(page_without.status, 401);
    let by_query = server
        .send(
            server
                .client
                .get(server.endpoint(&format!("/api/runs?token={}", server.token))),
        )
        .await;
    assert_eq!(by_query.status, 200, "{}", by_query.body);
    let by_bearer = server
        .send(
            server
                .client
                .get(server.endpoint("/api/info"))
                .bearer_auth(&server.token),
        )
        .await;
    assert_eq!(by_bearer.status, 200);
    assert_eq!(by_bearer.body["commitBridge"], "transcript");
    assert_eq!(by_bearer.body["features"]["guidance"], false);
    assert_eq!(by_bearer.headers["referrer-policy"], "no-referrer");
    assert_eq!(by_bearer.headers["cache-control"], "no-store");
}

/// Sends each request of `cases` to `server`: it answers with the status, and the code where
/// one is named.
async fn refusals(
    server: &TestServer,
    cases: Vec<(&str, reqwest::RequestBuilder, Option<u16>, Option<&str>)>,
) {
    for (what, request, status, code) in cases {
        let answer = server.send(request).await;
        if let Some(status) = status {
            assert_eq!(answer.status, status, "{what}: {}", answer.body);
        }
        if let Some(code) = code {
            assert_eq!(answer.body["code"], code, "{what}");
        }
    }
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let server = transcript_server().await;
    let port = server.addr.port();
    let runs = || server.authed(Method::GET, "/api/runs");
    let cross_site = server
        .json_request(Method::POST, "/api/runs", &json!({"stableChatId": "x"}))
        .header("origin", "https://evil.example");
    refusals(
        &server,
        vec![
            (
                "a rebinding host",
                runs().header("host", format!("attacker.example:{port}")),
                Some(403),
                Some("http.host_refused"),
            ),
            (
                "another port",
                runs().header("host", format!("127.0.0.1:{}", port.wrapping_add(1))),
                Some(403),
                None,
            ),
            (
                "localhost",
                runs().header("host", format!("localhost:{port}")),
                Some(200),
                None,
            ),
            (
                "a cross-site origin",
                cross_site,
                Some(403),
                Some("http.origin_refused"),
            ),
            (
                "the same origin",
                runs().header("origin", format!("http://127.0.0.1:{port}")),
                Some(200),
                None,
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn bodies_are_size_limited_typed_and_validated() {
    let server = server(&writer_script(), CommitBridgeChoice::Transcript, Some(4096)).await;
    let post = |path: &str, body: Value| server.json_request(Method::POST, path, &body);
    let runs = |body: Value| post("/api/runs", body);
    let typed = |content_type: &str, body: &'static str| {
        server
            .authed(Method::POST, "/api/runs")
            .header("content-type", content_type)
            .body(body)
    };
    let huge = json!({"stableChatId": "x", "userRequest": "a".repeat(10_000)});
    refusals(
        &server,
        vec![
            (
                "too large",
                runs(huge),
                Some(413),
                Some("http.body_too_large"),
            ),
            (
                "a form",
                typed("application/x-www-form-urlencoded", "stableChatId=x"),
                Some(415),
                Some("http.unsupported_media_type"),
            ),
            (
                "broken JSON",
                typed("application/json", "{not json"),
                Some(400),
                Some("http.invalid_json"),
            ),
            (
                "an empty chat id",
                runs(json!({"stableChatId": " "})),
                None,
                Some("http.invalid_request"),
            ),
            (
                "a profile id that is a path",
                runs(json!({"stableChatId": "x", "profileId": "../x"})),
                None,
                Some("http.invalid_id"),
            ),
            (
                "an unknown profile",
                runs(json!({"stableChatId": "x", "profileId": "nobody"})),
                Some(404),
                Some("agent.profile_not_found"),
            ),
            (
                "a bad profile definition",
                post("/api/profiles", json!({"id": "x"})),
                Some(400),
                None,
            ),
            (
                "a bad query",
                server.authed(Method::GET, "/api/runs?limit=many"),
                None,
                Some("http.invalid_query"),
            ),
            (
                "an unknown route",
                server.authed(Method::GET, "/api/nothing"),
                Some(404),
                Some("http.route_not_found"),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn ids_and_paths_never_leave_the_data_dir() {
    let server = transcript_server().await;
    let run_id = server.start("default-writer", "Write.").await;
    server.runtime.wait_for_run(&run_id).await.unwrap();
    for path in [
        "/api/runs/..%2F..%2Fetc/events",
        "/api/runs/run.json/events",
        "/api/transcripts/..%2Fsecrets",
    ] {
        let answer = server.get(path).await;
        assert_eq!(answer.status, 400, "{path}: {}", answer.body);
        assert_eq!(answer.body["code"], "http.invalid_id", "{path}");
    }
    let escape = server
        .get(&format!("/api/runs/{run_id}/files?path=../../run.json"))
        .await;
    assert_eq!(escape.status, 400, "{}", escape.body);
    assert!(
        escape.body["code"]
            .as_str()
            .unwrap()
            .starts_with("workspace.")
    );
    let absolute = server
        .get(&format!("/api/runs/{run_id}/files?path=%2Fetc%2Fpasswd"))
        .await;
    assert!(absolute.status >= 400 && absolute.status < 500);
    assert!(!absolute.body.to_string().contains("root:"));
    let record_escape = server
        .get(&format!(
            "/api/runs/{run_id}/records?ref=../../../../etc/passwd"
        ))
        .await;
    assert!(
        record_escape.status >= 400 && record_escape.status < 500,
        "{}",
        record_escape.body
    );
    assert!(!record_escape.body.to_string().contains("root:"));
}

#[tokio::test]
async fn a_run_is_started_listed_and_read_through_every_endpoint() {
    let server = transcript_server().await;
    let run_id = server.start("default-writer", "Write a scene.").await;
    let finished = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(finished.status.as_str(), "completed");

    let runs = server.get("/api/runs?limit=10").await;
    assert_eq!(runs.status, 200);
    assert_eq!(runs.body[0]["id"], run_id.as_str());
    assert_eq!(runs.body[0]["status"], "completed");

    let run = server.get(&format!("/api/runs/{run_id}")).await;
    assert_eq!(run.body["id"], run_id.as_str());
    let missing = server.get("/api/runs/run_doesnotexist").await;
    assert_eq!(missing.status, 404, "{}", missing.body);

    let events = server
        .get(&format!(
            "/api/runs/{run_id}/events?after=0&limit=5&timeline=true"
        ))
        .await;
    assert_eq!(events.status, 200);
    let page = events.body["events"].as_array().unwrap();
    assert_eq!(page.len(), 5);
    assert_eq!(page[0]["type"], "run_created");
    assert!(events.body["timelineProjection"]["invocations"].is_array());
    let root_only = server
        .get(&format!(
            "/api/runs/{run_id}/events?invocation=inv_root&limit=500"
        ))
        .await;
    assert!(!root_only.body["events"].as_array().unwrap().is_empty());

    let timeline = server.get(&format!("/api/runs/{run_id}/timeline")).await;
    assert_eq!(timeline.body["invocations"][0]["invocationId"], "inv_root");
    assert_eq!(timeline.body["invocations"][0]["status"], "completed");

    let usage = server.get(&format!("/api/runs/{run_id}/usage")).await;
    assert_eq!(usage.body["modelCalls"], 4);
    assert!(usage.body["inputTokens"].as_u64().unwrap() > 0);

    let failure = server.get(&format!("/api/runs/{run_id}/failure")).await;
    assert_eq!(failure.status, 200);
    assert_eq!(failure.body, Value::Null);
    let check = server.get(&format!("/api/runs/{run_id}/check")).await;
    assert_eq!(check.status, 200, "{}", check.body);
    assert_eq!(check.body["findings"], json!([]));
    assert_eq!(check.body["status"], "completed");

    let file = server
        .get(&format!("/api/runs/{run_id}/files?path=output/main.md"))
        .await;
    assert_eq!(file.status, 200, "{}", file.body);
    assert_eq!(file.body["text"], "# Scene\n\nThe lamp burned.\n");
    let missing_file = server
        .get(&format!("/api/runs/{run_id}/files?path=output/none.md"))
        .await;
    assert_eq!(missing_file.status, 404, "{}", missing_file.body);

    // A patch's diff: the blobs its event names, before and after.
    let all = server
        .get(&format!("/api/runs/{run_id}/events?limit=500"))
        .await;
    let patch = all.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["type"] == "workspace_patch_applied")
        .unwrap()
        .clone();
    let old_sha = patch["payload"]["oldSha256"].as_str().unwrap();
    let before = server
        .get(&format!("/api/runs/{run_id}/records?ref=blobs/{old_sha}"))
        .await;
    assert_eq!(before.status, 200, "{}", before.body);
    assert!(before.body.to_string().contains("The lamp was dark."));
    let args_ref = all.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["type"] == "tool_call_requested")
        .unwrap()["payload"]["argumentsRef"]
        .as_str()
        .unwrap()
        .to_owned();
    let args = server
        .get(&format!("/api/runs/{run_id}/records?ref={args_ref}"))
        .await;
    assert_eq!(args.status, 200);
    assert!(args.body.to_string().contains("output/main.md"));

    let workspace_id = finished.workspace_id.to_string();
    let transcript = server
        .get(&format!("/api/transcripts/{workspace_id}"))
        .await;
    assert_eq!(
        transcript.body[0]["content"],
        "# Scene\n\nThe lamp burned.\n"
    );

    let persist = server.get("/api/persist-state?chat=http-test").await;
    assert_eq!(persist.status, 200);
    assert!(persist.body.get("stateId").is_some());

    let page = server.send(server.client.get(&server.url)).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .as_str()
            .unwrap()
            .contains("<title>tt-agent inspector</title>")
    );
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("connect-src 'self'"));
}

#[tokio::test]
async fn the_event_stream_is_live_and_resumable() {
    let server = transcript_server().await;
    let run_id = server.start("default-writer", "Write.").await;
    let all = server.read_stream(&run_id, None, None).await;
    let (last, rest) = all.split_last().unwrap();
    assert_eq!(last.1, "end");
    let seqs: Vec<u64> = rest.iter().map(|(id, _, _)| id.unwrap()).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]));
    assert_eq!(rest[0].2["type"], "run_created");
    assert_eq!(rest.last().unwrap().2["type"], "run_completed");
    for (id, name, data) in rest {
        assert_eq!(name, "message");
        assert_eq!(data["seq"].as_u64(), *id);
    }

    let middle = seqs[seqs.len() / 2];
    let resumed = server.read_stream(&run_id, Some(middle), None).await;
    assert_eq!(resumed[0].0, seqs.iter().copied().find(|s| *s > middle));
    assert_eq!(
        resumed.len(),
        seqs.iter().filter(|s| **s > middle).count() + 1
    );
    // A reconnecting EventSource sends Last-Event-ID; it wins over a smaller ?after=.
    let reconnect = server.read_stream(&run_id, Some(1), Some(middle)).await;
    assert_eq!(reconnect.len(), resumed.len());
    let bad = server
        .send(
            server
                .authed(Method::GET, &format!("/api/runs/{run_id}/stream"))
                .header("last-event-id", "x"),
        )
        .await;
    assert_eq!(bad.body["code"], "http.invalid_last_event_id");
    let unknown = server.get("/api/runs/run_nothing/stream").await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

#[tokio::test]
async fn a_pending_commit_is_published_or_rejected_by_the_host() {
    let server = server(&writer_script(), CommitBridgeChoice::HostApi, None).await;
    let run_id = server.start("default-writer", "Write.").await;
    let requested = wait_for_event(&server, &run_id, "chat_commit_requested").await;
    let commit_id = requested["payload"]["commitId"].as_str().unwrap();
    let pending = server.get(&format!("/api/runs/{run_id}/commits")).await;
    assert_eq!(pending.status, 200, "{}", pending.body);
    assert_eq!(pending.body[0]["commitId"], commit_id);
    assert_eq!(pending.body[0]["path"], "output/main.md");
    let neither = server
        .post(
            &format!("/api/runs/{run_id}/commits/{commit_id}/resolve"),
            &json!({}),
        )
        .await;
    assert_eq!(neither.body["code"], "agent.chat_commit_resolve_invalid");
    let wrong_run = server
        .post(
            &format!("/api/runs/run_other/commits/{commit_id}/resolve"),
            &json!({"messageId": "m1"}),
        )
        .await;
    assert_eq!(wrong_run.status, 409);
    let published = server
        .post(
            &format!("/api/runs/{run_id}/commits/{commit_id}/resolve"),
            &json!({"messageId": "m1"}),
        )
        .await;
    assert_eq!(published.status, 204, "{}", published.body);
    let again = server
        .post(
            &format!("/api/runs/{run_id}/commits/{commit_id}/resolve"),
            &json!({"error": "too late"}),
        )
        .await;
    again.assert_refused(409, "agent.chat_commit_not_pending");
    // At finish the host binds the promoted state to message m1.
    let update = wait_for_event(
        &server,
        &run_id,
        "persistent_state_metadata_update_requested",
    )
    .await;
    assert_eq!(update["payload"]["messageId"], "m1");
    let update_id = update["payload"]["updateId"].as_str().unwrap();
    let bound = server
        .post(
            &format!("/api/runs/{run_id}/persist-metadata/{update_id}/resolve"),
            &json!({}),
        )
        .await;
    assert_eq!(bound.status, 204, "{}", bound.body);
    let twice = server
        .post(
            &format!("/api/runs/{run_id}/persist-metadata/{update_id}/resolve"),
            &json!({}),
        )
        .await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    let finished = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(finished.status.as_str(), "completed");
    let completed = wait_for_event(&server, &run_id, "chat_commit_completed").await;
    assert_eq!(completed["payload"]["messageId"], "m1");
}

#[tokio::test]
async fn a_run_is_cancelled_over_http() {
    // The writer's second answer takes a minute, so the cancel lands while it waits.
    let (server, run_id) = waiting_run().await;
    let cancelled = server.act(&run_id, "cancel").await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let finished = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(finished.status.as_str(), "cancelled");
    let unknown = server.act("run_nothing", "cancel").await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

#[tokio::test]
async fn resume_refuses_over_http_a_run_that_runs_or_was_abandoned() {
    let (server, run_id) = waiting_run().await;
    // Running here: nothing to resume.
    let running = server.act(&run_id, "resume").await;
    running.assert_refused(409, "agent.run_not_resumable");
    server.runtime.cancel_run(&run_id).await.unwrap();
    server.runtime.wait_for_run(&run_id).await.unwrap();
    // Cancelled, it stays resumable until it is abandoned; abandoned, it never resumes.
    let abandoned = server.act(&run_id, "abandon").await;
    assert_eq!(abandoned.status, 200, "{}", abandoned.body);
    assert_eq!(abandoned.body["status"], "cancelled");
    assert!(
        abandoned.body["abandonedAt"].is_string(),
        "{}",
        abandoned.body
    );
    let ended = server.act(&run_id, "resume").await;
    ended.assert_refused(409, "agent.run_not_resumable");
    assert!(
        ended.body["message"]
            .as_str()
            .unwrap()
            .contains("abandoned"),
        "{}",
        ended.body
    );
    let again = server.act(&run_id, "abandon").await;
    again.assert_refused(409, "agent.run_not_abandonable");
    let unknown = server.act("run_nothing", "resume").await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

#[tokio::test]
async fn guidance_and_task_cancel_reach_a_live_run() {
    // The writer's second answer takes a minute, so the calls land while the run is live.
    let (server, run_id) = waiting_run().await;
    let sent = server
        .post(
            &format!("/api/runs/{run_id}/guidance"),
            &json!({"text": "Make it rain.", "clientGuidanceId": "note-1"}),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(sent.body["pendingCount"], 1);
    let submitted = wait_for_event(&server, &run_id, "user_guidance_submitted").await;
    assert_eq!(submitted["payload"]["clientGuidanceId"], "note-1");
    let blank = server
        .post(
            &format!("/api/runs/{run_id}/guidance"),
            &json!({"text": "  "}),
        )
        .await;
    blank.assert_refused(400, "agent.guidance_empty");
    let unknown_field = server
        .post(
            &format!("/api/runs/{run_id}/guidance"),
            &json!({"txt": "x"}),
        )
        .await;
    assert_eq!(unknown_field.body["code"], "http.invalid_json");
    let no_task = server
        .post(
            &format!("/api/runs/{run_id}/tasks/task_missing/cancel"),
            &json!({}),
        )
        .await;
    no_task.assert_refused(404, "agent.task_not_found");
    let bad_id = server
        .post(
            &format!("/api/runs/{run_id}/tasks/..%2Fx/cancel"),
            &json!({}),
        )
        .await;
    assert_eq!(bad_id.status, 400, "{}", bad_id.body);
    let live = server.get(&format!("/api/runs/{run_id}")).await;
    assert_eq!(
        live.body["status"], "calling_model",
        "the live status, not the stored one"
    );
    server.act(&run_id, "cancel").await;
    server.runtime.wait_for_run(&run_id).await.unwrap();
    let closed = server
        .post(
            &format!("/api/runs/{run_id}/guidance"),
            &json!({"text": "late"}),
        )
        .await;
    assert_eq!(
        closed.body["code"], "agent.guidance_mailbox_closed",
        "{}",
        closed.body
    );
}

#[tokio::test]
async fn prompt_assemblies_answer_with_coded_errors_when_not_pending() {
    let server = transcript_server().await;
    let read = server
        .get("/api/runs/run_x/prompt-assemblies/prompt_assembly_nothing")
        .await;
    read.assert_refused(409, "agent.prompt_assembly_not_pending");
    let resolve = server
        .post(
            "/api/runs/run_x/prompt-assemblies/prompt_assembly_nothing/resolve",
            &json!({"error": "no"}),
        )
        .await;
    assert_eq!(resolve.body["code"], "agent.prompt_assembly_not_pending");
}

#[tokio::test]
async fn open_event_streams_end_when_the_server_stops() {
    // The writer's second answer takes a minute: the run is still going when the server stops.
    let (mut server, run_id) = waiting_run().await;
    let mut response = server
        .authed(Method::GET, &format!("/api/runs/{run_id}/stream"))
        .send()
        .await
        .unwrap();
    let first = response.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("run_created"));
    // Without the streams ending, a graceful shutdown would wait for this client forever.
    tokio::time::timeout(std::time::Duration::from_secs(60), server.stop())
        .await
        .expect("the server stopped despite an open event stream");
    let mut rest = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        rest.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        !rest.contains("event: end"),
        "the run did not end; the server did"
    );
    server.runtime.cancel_run(&run_id).await.unwrap();
}

#[tokio::test]
async fn connections_workspace_listing_and_run_updates() {
    let server = transcript_server().await;
    write_local_connection(&server.runtime);
    let listed = server.get("/api/connections").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body[0]["name"], "local");
    assert_eq!(listed.body[0]["source"], "file");
    assert_eq!(listed.body[0]["description"]["model"], "small");
    let unknown = server
        .post(
            "/api/runs",
            &json!({"stableChatId": "c", "userRequest": "Write.", "connectionRef": "nowhere"}),
        )
        .await;
    assert_eq!(unknown.body["code"], "agent.model_connection_not_found");

    // The runs list's feed: the run appears when it starts and again when it ends.
    let mut updates = server
        .authed(Method::GET, "/api/run-updates")
        .send()
        .await
        .unwrap();
    assert_eq!(updates.status().as_u16(), 200);
    let run_id = server.start("default-writer", "Write a scene.").await;
    let mut text = String::new();
    let statuses = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let chunk = updates
                .chunk()
                .await
                .unwrap()
                .expect("the feed ended early");
            text.push_str(&String::from_utf8_lossy(&chunk));
            let statuses: Vec<String> = crate::support::parse_sse(&text)
                .into_iter()
                .filter(|(_, name, run)| name == "message" && run["id"] == run_id.as_str())
                .map(|(_, _, run)| run["status"].as_str().unwrap().to_owned())
                .collect();
            if statuses.last().map(String::as_str) == Some("completed") {
                return statuses;
            }
        }
    })
    .await
    .expect("the run's end reached the feed");
    assert!(statuses.len() >= 3, "{statuses:?}");

    let files = server.get(&format!("/api/runs/{run_id}/workspace")).await;
    assert_eq!(files.status, 200, "{}", files.body);
    assert_eq!(files.body, json!(["output/main.md"]));
    let missing = server.get("/api/runs/run_nothing/workspace").await;
    assert_eq!(missing.status, 404, "{}", missing.body);
}

#[tokio::test]
async fn an_interrupted_run_is_resumed_over_http_without_asking_for_its_stored_turn_again() {
    use std::sync::Mutex;
    use tt_runtime::{AgentRuntimeBuilder, FnProvider, ModelReply, StartRunRequest};
    // The first process writes the draft, then its model never answers again.
    let first_dir = tempfile::tempdir().unwrap();
    let first = AgentRuntimeBuilder::new()
        .data_dir(first_dir.path())
        .commit_bridge(CommitBridgeChoice::Transcript)
        .provider(std::sync::Arc::new(FnProvider::new(|request| {
            Ok(match request.round {
                1 => ModelReply::tool_call(
                    "workspace_write_file",
                    json!({"path": "output/main.md", "content": "Night fell.\n"}),
                ),
                _ => ModelReply::text("never").after(std::time::Duration::from_secs(86_400)),
            })
        })))
        .build()
        .unwrap();
    let run = first
        .start_run(StartRunRequest::new("http-resume", "Write a scene."))
        .await
        .unwrap();
    let run_id = run.id.to_string();
    let mut events = first.subscribe(&run_id, 0, None);
    while let Some(event) = events.next().await.unwrap() {
        if event.event_type == "model_call_attempt_started" && event.payload["round"] == 2 {
            break;
        }
    }
    // The app dies here: the next start finds the data dir as it is now.
    let after_crash = tempfile::tempdir().unwrap();
    tt_testkit::store_tests::copy_live_data_dir(first_dir.path(), after_crash.path());

    let asked = std::sync::Arc::new(Mutex::new(Vec::new()));
    let rounds = std::sync::Arc::clone(&asked);
    let provider = std::sync::Arc::new(FnProvider::new(move |request| {
        rounds.lock().unwrap().push(request.round);
        Ok(match request.round {
            2 => ModelReply::tool_call("workspace_commit", json!({})),
            _ => ModelReply::tool_call("workspace_finish", json!({})),
        })
    }));
    let server = server_in(after_crash, provider, CommitBridgeChoice::Transcript, None).await;
    let interrupted = server.get(&format!("/api/runs/{run_id}")).await;
    assert_eq!(
        interrupted.body["status"], "interrupted",
        "{}",
        interrupted.body
    );
    let resumed = server.act(&run_id, "resume").await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    assert_eq!(resumed.body["id"], run_id.as_str());
    let finished = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(finished.status.as_str(), "completed");
    // The stored first turn was replayed, not asked for again.
    assert_eq!(*asked.lock().unwrap(), [2, 3]);
    let file = server
        .get(&format!("/api/runs/{run_id}/files?path=output/main.md"))
        .await;
    assert_eq!(file.body["text"], "Night fell.\n");
    let stream = server.read_stream(&run_id, None, None).await;
    let types: Vec<&str> = stream
        .iter()
        .filter_map(|(_, _, event)| event["type"].as_str())
        .collect();
    let interrupted_at = types.iter().position(|t| *t == "run_interrupted").unwrap();
    let resumed_at = types.iter().position(|t| *t == "run_resumed").unwrap();
    assert!(interrupted_at < resumed_at);
    assert_eq!(types.last(), Some(&"run_completed"));
    first.shutdown().await.unwrap();
}

/// `careful-writer`: the default writer, asking before every write.
fn careful_writer() -> Value {
    let mut profile =
        serde_json::to_value(tt_domain::profile::default_writer_definition()).unwrap();
    profile["id"] = json!("careful-writer");
    profile["displayName"] = json!("Careful writer");
    profile["tools"]["approval"] = json!({"workspace.write_file": "always"});
    profile
}

#[tokio::test]
async fn a_waiting_call_is_listed_and_answered_over_http() {
    let server = server(
        &draft_script("careful-writer"),
        CommitBridgeChoice::Transcript,
        None,
    )
    .await;
    let saved = server.post("/api/profiles", &careful_writer()).await;
    assert!(saved.status < 300, "{}", saved.body);
    let run_id = server.start("careful-writer", "Write.").await;
    let asked = wait_for_event(&server, &run_id, "tool_approval_requested").await;
    let approval_id = asked["payload"]["approvalId"].as_str().unwrap().to_owned();
    let pending = server.get(&format!("/api/runs/{run_id}/approvals")).await;
    assert_eq!(pending.status, 200, "{}", pending.body);
    assert_eq!(pending.body[0]["approvalId"], approval_id.as_str());
    assert_eq!(pending.body[0]["arguments"]["content"], "draft");
    let resolve = format!("/api/runs/{run_id}/approvals/{approval_id}/resolve");
    let bad_edit = server
        .post(
            &resolve,
            &json!({"decision": "approve_with_arguments", "arguments": {"path": 1}}),
        )
        .await;
    bad_edit.assert_refused(400, "agent.approval_invalid");
    let bad_decision = server.post(&resolve, &json!({"decision": "maybe"})).await;
    assert_eq!(bad_decision.body["code"], "http.invalid_json");
    let unknown = server
        .post(
            &format!("/api/runs/{run_id}/approvals/apr_0000000000000000/resolve"),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let approved = server
        .post(
            &resolve,
            &json!({"decision": "approve", "decidedBy": "editor-1"}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(approved.body["decidedBy"], "editor-1");
    assert_eq!(approved.body["alreadyResolved"], false);
    let resolved = wait_for_event(&server, &run_id, "tool_approval_resolved").await;
    assert_eq!(resolved["payload"]["decision"], "approve");
    wait_for_event(&server, &run_id, "run_completed").await;
    let after = server.get(&format!("/api/runs/{run_id}/approvals")).await;
    assert_eq!(after.body, json!([]));
}

#[tokio::test]
async fn a_finished_run_is_branched_over_http_and_bad_fork_points_are_refused() {
    let server = server(
        &draft_script("default-writer"),
        CommitBridgeChoice::Transcript,
        None,
    )
    .await;
    let run_id = server.start("default-writer", "Write.").await;
    server.runtime.wait_for_run(&run_id).await.unwrap();
    let branched = server
        .post(
            &format!("/api/runs/{run_id}/fork"),
            &json!({"at": {"kind": "agentRound", "invocationId": "inv_root", "round": 2},
                "changes": {"guidance": "Publish it as it is."}}),
        )
        .await;
    assert_eq!(branched.status, 200, "{}", branched.body);
    assert_eq!(branched.body["forkedFrom"]["runId"], json!(run_id));
    let branch_id = branched.body["id"].as_str().unwrap().to_owned();
    let ended = server.runtime.wait_for_run(&branch_id).await.unwrap();
    assert_eq!(ended.status.as_str(), "completed");
    let refused = server
        .post(
            &format!("/api/runs/{run_id}/fork"),
            &json!({"at": {"kind": "seq", "seq": 0}}),
        )
        .await;
    refused.assert_refused(400, "agent.fork_point_invalid");
    let unknown = server
        .post(
            "/api/runs/run_nothing/fork",
            &json!({"at": {"kind": "lastCommit"}}),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
}

#[tokio::test]
async fn an_agents_conversation_is_read_over_http() {
    let server = transcript_server().await;
    let run_id = server.start("default-writer", "Write a scene.").await;
    server.runtime.wait_for_run(&run_id).await.unwrap();

    let conversation = server
        .get(&format!("/api/runs/{run_id}/agents/inv_root/conversation"))
        .await;
    assert_eq!(conversation.status, 200, "{}", conversation.body);
    let body = &conversation.body;
    assert_eq!(body["invocationId"], "inv_root");
    assert_eq!(body["kind"], "root");
    assert_eq!(body["modelCalls"], 4);
    let entries = body["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "system");
    assert!(kinds.contains(&"history"), "{kinds:?}");
    // Four answers, each with its round and its call; four results.
    let answers: Vec<&Value> = entries
        .iter()
        .filter(|entry| entry["kind"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 4);
    assert_eq!(answers[0]["round"], 1);
    assert_eq!(answers[0]["text"], "Drafting.");
    assert_eq!(answers[0]["toolCalls"][0]["name"], "workspace_write_file");
    assert_eq!(
        answers[0]["toolCalls"][0]["arguments"]["path"],
        "output/main.md"
    );
    assert!(answers[0]["usage"]["inputTokens"].as_u64().unwrap() > 0);
    let results: Vec<&Value> = entries
        .iter()
        .filter(|entry| entry["kind"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["tool"], "workspace.write_file");
    assert_eq!(results[0]["isError"], false);

    let unknown_agent = server
        .get(&format!(
            "/api/runs/{run_id}/agents/inv_nobody/conversation"
        ))
        .await;
    unknown_agent.assert_refused(404, "agent.not_found");
    let unknown_run = server
        .get("/api/runs/run_nothing/agents/inv_root/conversation")
        .await;
    unknown_run.assert_refused(404, "agent.not_found");
    let bad_id = server
        .get(&format!("/api/runs/{run_id}/agents/a.b/conversation"))
        .await;
    bad_id.assert_refused(400, "http.invalid_id");
}

/// A completed run whose journal lost its last line: `check` names the damage, with its code;
/// an unknown run is 404.
#[tokio::test]
async fn a_damaged_run_is_checked_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (provider, runs) = finished_runs(dir.path(), &["http-check"]).await;
    let (run_id, run_dir) = runs.into_iter().next().unwrap();
    let lines = cut_journal_end(&run_dir);
    assert!(lines[lines.len() - 1].contains("run_completed"));
    let journal = run_dir.join("events.jsonl");

    let server = server_in(dir, provider, CommitBridgeChoice::Transcript, None).await;
    let check = server.get(&format!("/api/runs/{run_id}/check")).await;
    assert_eq!(check.status, 200, "{}", check.body);
    assert_eq!(
        check.body["findings"][0]["code"],
        "agent.journal_end_missing"
    );
    assert_eq!(check.body["lastSeq"], (lines.len() - 1) as u64);
    let missing = server.get("/api/runs/run_doesnotexist/check").await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    let unreadable = server.get("/api/runs/unreadable").await;
    assert_eq!(unreadable.status, 200, "{}", unreadable.body);
    assert_eq!(unreadable.body, serde_json::json!([]));

    // A run record that does not parse: listed from its index copy, marked rebuilt, and
    // checked as such.
    let record = journal.with_file_name("run.json");
    let bytes = std::fs::read(&record).unwrap();
    std::fs::write(&record, &bytes[..bytes.len() / 2]).unwrap();
    let listed = server.get("/api/runs").await;
    assert_eq!(listed.body[0]["id"], run_id.as_str(), "{}", listed.body);
    assert_eq!(listed.body[0]["rebuilt"]["from"], "index_copy");
    let check = server.get(&format!("/api/runs/{run_id}/check")).await;
    assert_eq!(
        check.body["findings"][0]["code"], "agent.run_record_rebuilt",
        "{}",
        check.body
    );
    // Nothing to rebuild it from either (no index copy, an emptied journal): left out of the
    // list, named apart.
    let index = journal
        .ancestors()
        .nth(5)
        .unwrap()
        .join("index/runs")
        .join(format!("{run_id}.json"));
    std::fs::remove_file(&index).unwrap();
    std::fs::write(&journal, "").unwrap();
    let listed = server.get("/api/runs").await;
    assert_eq!(listed.body, serde_json::json!([]), "{}", listed.body);
    let unreadable = server.get("/api/runs/unreadable").await;
    assert_eq!(unreadable.body[0]["runId"], run_id.as_str());
    assert_eq!(unreadable.body[0]["code"], "agent.storage_corrupt");
}
