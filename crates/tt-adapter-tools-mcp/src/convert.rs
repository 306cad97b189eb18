//! From rmcp's model to the runtime's: a listed tool to [`McpToolInfo`] (hints kept), a call's
//! result to [`McpCallOutput`] (text joined, media as a short note each, structured content
//! kept, bounded), and a failed request to a coded [`ToolSourceError`].

use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::Value;
use tt_domain::mcp::{McpCallOutput, McpToolInfo, limits};
use tt_ports::tools::ToolSourceError;

use crate::connection::Connection;
use crate::messages::{self, Request};

/// One listed tool as the runtime keeps it.
pub(crate) fn tool_info(tool: Tool) -> McpToolInfo {
    let annotations = tool.annotations.as_ref();
    McpToolInfo {
        title: tool
            .title
            .clone()
            .or_else(|| annotations.and_then(|hints| hints.title.clone())),
        description: tool.description.as_deref().unwrap_or_default().to_owned(),
        input_schema: Value::Object((*tool.input_schema).clone()),
        read_only_hint: annotations.and_then(|hints| hints.read_only_hint),
        idempotent_hint: annotations.and_then(|hints| hints.idempotent_hint),
        destructive_hint: annotations.and_then(|hints| hints.destructive_hint),
        name: tool.name.into_owned(),
    }
}

/// A call's result for the agent, or `mcp.result_too_large` past 4 MiB of text and
/// structured content.
pub(crate) fn call_output(
    server: &str,
    tool: &str,
    result: CallToolResult,
) -> Result<McpCallOutput, ToolSourceError> {
    let mut parts = Vec::with_capacity(result.content.len());
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => media_note("image", &image.mime_type, &image.data),
            ContentBlock::Audio(audio) => media_note("audio", &audio.mime_type, &audio.data),
            ContentBlock::Resource(embedded) => resource_note(&embedded.resource),
            ContentBlock::ResourceLink(link) => match &link.mime_type {
                Some(mime) => format!("[resource link: {}, {mime}]", link.uri),
                None => format!("[resource link: {}]", link.uri),
            },
            _ => "[content of a kind this client does not show]".to_owned(),
        });
    }
    let text = parts.join("\n");
    let structured = result.structured_content;
    let structured_bytes = structured
        .as_ref()
        .map_or(0, |value| value.to_string().len());
    let total = text.len() + structured_bytes;
    if total > limits::MAX_RESULT_BYTES {
        return Err(messages::result_too_large(server, tool, total));
    }
    Ok(McpCallOutput {
        text,
        structured,
        is_error: result.is_error == Some(true),
    })
}

fn media_note(kind: &str, mime: &str, base64: &str) -> String {
    format!("[{kind}: {mime}, {} bytes]", decoded_len(base64))
}

fn resource_note(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => format!(
            "[resource: {uri}, {}, {} bytes]",
            mime_type.as_deref().unwrap_or("text/plain"),
            text.len()
        ),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource: {uri}, {}, {} bytes]",
            mime_type.as_deref().unwrap_or("application/octet-stream"),
            decoded_len(blob)
        ),
        _ => "[resource]".to_owned(),
    }
}

/// The size of base64 data once decoded, without decoding it.
fn decoded_len(base64: &str) -> usize {
    let trimmed = base64.trim_end_matches('=');
    let len = trimmed.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    len / 4 * 3 + (len % 4).saturating_sub(1)
}

/// A request that failed after it was sent: the server refused it (a JSON-RPC error), or the
/// connection broke (the server may have run it; the connection is marked broken).
pub(crate) fn request_failed(
    server: &str,
    request: Request<'_>,
    err: ServiceError,
    connection: &Connection,
) -> ToolSourceError {
    match err {
        ServiceError::McpError(data) => {
            messages::refused(server, request, &data.message, data.code.0)
        }
        ServiceError::UnexpectedResponse => messages::unexpected_answer(server, request),
        other if !connection.is_alive() || matches!(other, ServiceError::TransportClosed) => {
            connection.mark_broken();
            messages::stopped_during(server, request)
        }
        other => messages::request_failed(server, request, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths_are_computed_without_decoding() {
        assert_eq!(decoded_len(""), 0);
        assert_eq!(decoded_len("YQ=="), 1);
        assert_eq!(decoded_len("YWI="), 2);
        assert_eq!(decoded_len("YWJj"), 3);
        assert_eq!(decoded_len("YWJjZA=="), 4);
        assert_eq!(decoded_len("YWJj\nZA=="), 4);
    }
}
