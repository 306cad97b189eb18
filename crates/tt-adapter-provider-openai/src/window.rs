//! The window an OpenAI-compatible server serves a model with, asked once per connection and
//! model (`ModelProvider::context_window`), in this order:
//!
//! 1. llama.cpp: `GET {root}/props`, `default_generation_settings.n_ctx`: one slot's share of
//!    `-c` (`-c 8192 -np 4` gives each slot 2,048).
//! 2. `GET {baseUrl}/models`, the entry of the model (or the only one): vLLM's `max_model_len`,
//!    llama.cpp's `meta.n_ctx`, LM Studio's `loaded_context_length`, or `context_length` /
//!    `context_window` / `max_context_length` as other servers name it.
//! 3. Ollama: `POST {root}/api/show`, `num_ctx` in the model's `parameters`; else `GET
//!    {root}/api/ps`, the loaded model's `context_length`. The trained length in `model_info`
//!    is not used: Ollama serves a smaller default and cuts longer prompts without a word.
//!
//! OpenAI's own API (`Dialect::OpenAi`) lists no windows and is not asked. An answer that is not
//! a 2xx JSON body is "the server does not say"; a server that cannot be reached is an error
//! the caller ignores (a probe never fails a run).

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tt_ports::{ModelError, ServerContextWindow};
use tt_provider_http::exchange::endpoint_url;
use tt_provider_http::probe::server_root;

use crate::config::Dialect;
use crate::provider::OpenAiProvider;

impl OpenAiProvider {
    /// The window the server says it serves `model_id` (else the default model) with.
    pub(crate) async fn server_context_window(
        &self,
        model_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Option<ServerContextWindow>, ModelError> {
        let config = self.config();
        if config.dialect == Dialect::OpenAi {
            return Ok(None);
        }
        let model = model_id.or(config.default_model.as_deref());
        let root = server_root(&config.base_url);
        let found = |tokens: u64, source: &str| {
            Ok(Some(ServerContextWindow {
                tokens,
                source: source.to_owned(),
            }))
        };
        let http = self.http();
        if let Some(tokens) = http
            .probe_get(&format!("{root}/props"), cancel)
            .await?
            .as_ref()
            .and_then(llama_props_window)
        {
            return found(tokens, "/props");
        }
        if let Some(url) = endpoint_url(&config.base_url, "/models")
            && let Some(tokens) = http
                .probe_get(&url, cancel)
                .await?
                .as_ref()
                .and_then(|list| model_list_window(list, model))
        {
            return found(tokens, "/v1/models");
        }
        let Some(model) = model else {
            return Ok(None);
        };
        if let Some(tokens) = http
            .probe_post(
                &format!("{root}/api/show"),
                &json!({"model": model}),
                cancel,
            )
            .await?
            .as_ref()
            .and_then(ollama_show_window)
        {
            return found(tokens, "/api/show");
        }
        if let Some(tokens) = http
            .probe_get(&format!("{root}/api/ps"), cancel)
            .await?
            .as_ref()
            .and_then(|loaded| ollama_ps_window(loaded, model))
        {
            return found(tokens, "/api/ps");
        }
        Ok(None)
    }
}

/// A positive token count at `value`.
fn tokens(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64).filter(|&tokens| tokens > 0)
}

/// llama.cpp's `/props`: one slot's window.
pub(crate) fn llama_props_window(props: &Value) -> Option<u64> {
    tokens(props.pointer("/default_generation_settings/n_ctx"))
}

/// The window of `model` (or of the only model listed) in an OpenAI-style model list.
pub(crate) fn model_list_window(list: &Value, model: Option<&str>) -> Option<u64> {
    let entries = list.get("data").and_then(Value::as_array)?;
    let entry = match model {
        Some(model) => entries
            .iter()
            .find(|entry| entry.get("id").and_then(Value::as_str) == Some(model))
            .or_else(|| (entries.len() == 1).then(|| &entries[0]))?,
        None if entries.len() == 1 => &entries[0],
        None => return None,
    };
    [
        "/max_model_len",
        "/meta/n_ctx",
        "/loaded_context_length",
        "/context_length",
        "/context_window",
        "/max_context_length",
    ]
    .into_iter()
    .find_map(|pointer| tokens(entry.pointer(pointer)))
}

/// Ollama's `/api/show`: `num_ctx` in the model's `parameters` (one `name value` per line).
pub(crate) fn ollama_show_window(show: &Value) -> Option<u64> {
    show.get("parameters")
        .and_then(Value::as_str)?
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
        })
        .filter(|&tokens| tokens > 0)
}

/// Ollama's `/api/ps`: the `context_length` of `model`, when it is loaded.
pub(crate) fn ollama_ps_window(loaded: &Value, model: &str) -> Option<u64> {
    loaded
        .get("models")
        .and_then(Value::as_array)?
        .iter()
        .find(|entry| {
            [entry.get("name"), entry.get("model")]
                .into_iter()
                .flatten()
                .any(|name| name.as_str() == Some(model))
        })
        .and_then(|entry| tokens(entry.get("context_length")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_servers_answer_gives_its_window() {
        let props = json!({"default_generation_settings": {"n_ctx": 2048}, "total_slots": 4});
        assert_eq!(llama_props_window(&props), Some(2048));
        assert_eq!(llama_props_window(&json!({"total_slots": 1})), None);
        let vllm = json!({"object": "list", "data": [
            {"id": "other", "max_model_len": 4096},
            {"id": "qwen", "max_model_len": 32768}]});
        assert_eq!(model_list_window(&vllm, Some("qwen")), Some(32768));
        assert_eq!(model_list_window(&vllm, Some("missing")), None);
        assert_eq!(model_list_window(&vllm, None), None);
        let llama =
            json!({"data": [{"id": "smol.gguf", "meta": {"n_ctx": 4096, "n_ctx_train": 8192}}]});
        assert_eq!(model_list_window(&llama, Some("local")), Some(4096));
        let show =
            json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        8192"});
        assert_eq!(ollama_show_window(&show), Some(8192));
        assert_eq!(ollama_show_window(&json!({"parameters": "stop x"})), None);
        let ps = json!({"models": [{"name": "qwen2.5:0.5b", "model": "qwen2.5:0.5b", "context_length": 4096}]});
        assert_eq!(ollama_ps_window(&ps, "qwen2.5:0.5b"), Some(4096));
        assert_eq!(ollama_ps_window(&ps, "llama3"), None);
    }
}
