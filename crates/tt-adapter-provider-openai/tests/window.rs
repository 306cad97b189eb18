//! The window probe (`ModelProvider::context_window`) against a 127.0.0.1 server that answers
//! as llama.cpp, vLLM, Ollama or none of them does.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_adapter_provider_openai::{Dialect, OpenAiProvider};
use tt_ports::{ModelProvider, ServerContextWindow};

use crate::support::config;
use crate::support::server::{Reply, TestServer};

/// A server that answers `GET`/`POST path` from `routes` and 404 to everything else.
async fn server(routes: Vec<(&'static str, Value)>) -> TestServer {
    TestServer::start(move |request, _| {
        routes
            .iter()
            .find(|(path, _)| *path == request.path)
            .map_or_else(
                || Reply::json(404, &json!({"error": "not found"})),
                |(_, body)| Reply::json(200, body),
            )
    })
    .await
}

async fn probe(server: &TestServer) -> Option<ServerContextWindow> {
    OpenAiProvider::new(config(server))
        .unwrap()
        .context_window(None, CancellationToken::new())
        .await
        .unwrap()
}

fn window(tokens: u64, source: &str) -> Option<ServerContextWindow> {
    Some(ServerContextWindow {
        tokens,
        source: source.to_owned(),
    })
}

async fn paths(server: &mut TestServer, count: usize) -> Vec<String> {
    let mut paths = Vec::new();
    for _ in 0..count {
        let request = server.next_request().await;
        paths.push(format!("{} {}", request.method, request.path));
    }
    paths
}

#[tokio::test]
async fn llama_cpp_gives_one_slots_share_from_props() {
    // What llama-server -c 8192 -np 4 answers (trimmed).
    let mut server = server(vec![(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 2048, "params": {}},
               "total_slots": 4, "model_path": "m.gguf"}),
    )])
    .await;
    assert_eq!(probe(&server).await, window(2048, "/props"));
    assert_eq!(paths(&mut server, 1).await, ["GET /props"]);
}

#[tokio::test]
async fn vllm_gives_max_model_len_from_its_model_list() {
    let mut server = server(vec![(
        "/v1/models",
        json!({"object": "list", "data": [
            {"id": "other", "object": "model", "max_model_len": 4096},
            {"id": "local-model", "object": "model", "max_model_len": 16384}]}),
    )])
    .await;
    assert_eq!(probe(&server).await, window(16384, "/v1/models"));
    assert_eq!(
        paths(&mut server, 2).await,
        ["GET /props", "GET /v1/models"]
    );
}

#[tokio::test]
async fn ollama_gives_num_ctx_from_the_models_parameters() {
    let mut server = server(vec![
        (
            "/v1/models",
            json!({"object": "list", "data": [{"id": "local-model", "object": "model", "owned_by": "library"}]}),
        ),
        (
            "/api/show",
            json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 8192", "model_info": {"qwen2.context_length": 32768}}),
        ),
    ])
    .await;
    assert_eq!(probe(&server).await, window(8192, "/api/show"));
    assert_eq!(
        paths(&mut server, 3).await,
        ["GET /props", "GET /v1/models", "POST /api/show"]
    );
}

#[tokio::test]
async fn ollama_without_num_ctx_gives_the_loaded_models_window_never_the_trained_one() {
    let server = server(vec![
        (
            "/api/show",
            json!({"parameters": "stop x", "model_info": {"qwen2.context_length": 32768}}),
        ),
        (
            "/api/ps",
            json!({"models": [{"name": "local-model", "model": "local-model", "context_length": 4096}]}),
        ),
    ])
    .await;
    assert_eq!(probe(&server).await, window(4096, "/api/ps"));
}

#[tokio::test]
async fn a_server_that_says_nothing_leaves_the_window_unknown() {
    let mut server = server(vec![]).await;
    assert_eq!(probe(&server).await, None);
    assert_eq!(
        paths(&mut server, 4).await,
        [
            "GET /props",
            "GET /v1/models",
            "POST /api/show",
            "GET /api/ps"
        ]
    );
    // A body that is not JSON says nothing either.
    let server = TestServer::always(Reply::Whole {
        status: 200,
        headers: vec![],
        body: b"<html>".to_vec(),
    })
    .await;
    assert_eq!(probe(&server).await, None);
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_the_caller_may_retry_and_openai_is_not_asked() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let provider = OpenAiProvider::new(
        tt_adapter_provider_openai::OpenAiConfig::new(url).with_default_model("m"),
    )
    .unwrap();
    assert!(
        provider
            .context_window(None, CancellationToken::new())
            .await
            .is_err()
    );
    let mut server = server(vec![(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 1}}),
    )])
    .await;
    let openai = OpenAiProvider::new(config(&server).with_dialect(Dialect::OpenAi)).unwrap();
    assert_eq!(
        openai
            .context_window(Some("gpt-4o"), CancellationToken::new())
            .await
            .unwrap(),
        None
    );
    // Nothing reached the server: the next request it sees is this one.
    let _ = probe(&server).await;
    assert_eq!(paths(&mut server, 1).await, ["GET /props"]);
}
