//! MCP servers as the runtime knows them (docs/tools.md, "MCP servers"): a registration (name,
//! transport, call timeout), the tools a server said it has (its catalog snapshot), the output
//! of one call, and the bounds every server is held to. Pure data and checks; the client lives
//! in an adapter.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::error::{DomainError, DomainResult};
use crate::error_codes;
use crate::tool_model::{
    ExternalToolFacts, SideEffect, check_mcp_server_name, check_mcp_tool_name,
};

/// Bounds on what one server may hand the runtime; each has a coded error past it.
pub mod limits {
    /// Pages of `tools/list` read at most.
    pub const MAX_CATALOG_PAGES: usize = 32;
    /// Tools kept at most per server.
    pub const MAX_TOOLS_PER_SERVER: usize = 512;
    /// Bytes of one tool's input schema (as JSON) at most.
    pub const MAX_TOOL_SCHEMA_BYTES: usize = 256 * 1024;
    /// Bytes of one server's whole catalog (as JSON) at most.
    pub const MAX_CATALOG_BYTES: usize = 8 * 1024 * 1024;
    /// Bytes of one call's arguments (as JSON) at most.
    pub const MAX_ARGUMENT_BYTES: usize = 256 * 1024;
    /// Bytes of one call's result (its text and structured content) at most.
    pub const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;
    /// The default time one call may take, in milliseconds.
    pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;
    /// How long a stdio server has to exit after SIGTERM at shutdown before it is killed.
    pub const SHUTDOWN_GRACE_MS: u64 = 2_000;
}

/// How the runtime reaches a server.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum McpTransport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        command: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    /// Streamable HTTP at `url` (plain `http://` only to loopback or private addresses).
    Http {
        url: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// One registered server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// The registration name (`[a-z0-9_-]`, at most 32): tool ids say `mcp/<name>:<tool>`.
    pub name: String,
    pub transport: McpTransport,
    /// How long one call may take before it is cancelled, in milliseconds.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
}

fn default_call_timeout_ms() -> u64 {
    limits::DEFAULT_CALL_TIMEOUT_MS
}

fn invalid(message: String) -> DomainError {
    DomainError::new(error_codes::MCP_SERVER_INVALID, message)
}

impl McpServerConfig {
    /// Checks the name, the transport and the timeout (`mcp.server_invalid`).
    pub fn validate(&self) -> DomainResult<()> {
        check_mcp_server_name(&self.name).map_err(|err| invalid(err.message))?;
        if self.call_timeout_ms == 0 {
            return Err(invalid(format!(
                "server `{}`: callTimeoutMs must be > 0",
                self.name
            )));
        }
        match &self.transport {
            McpTransport::Stdio { command, .. } => {
                if command.trim().is_empty() {
                    return Err(invalid(format!(
                        "server `{}`: a stdio server needs a command",
                        self.name
                    )));
                }
                Ok(())
            }
            McpTransport::Http { url, headers } => {
                check_http_url(url)
                    .map_err(|message| invalid(format!("server `{}`: {message}", self.name)))?;
                if let Some(name) = headers.keys().find(|name| !is_header_name(name)) {
                    return Err(invalid(format!(
                        "server `{}`: `{name}` is no HTTP header name",
                        self.name
                    )));
                }
                Ok(())
            }
        }
    }
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `https://` anywhere; plain `http://` only to a loopback or private address (an IP literal,
/// or `localhost`), so a server's traffic never crosses a network in the clear.
fn check_http_url(url: &str) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` is no http:// or https:// URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    if host.is_empty() {
        return Err(format!("`{url}` names no host"));
    }
    match scheme {
        "https" => Ok(()),
        "http" if host == "localhost" || host.parse::<IpAddr>().is_ok_and(is_private) => Ok(()),
        "http" => Err(format!(
            "plain http:// is only for loopback or private addresses; use https:// for `{host}`"
        )),
        _ => Err(format!("`{url}` is no http:// or https:// URL")),
    }
}

fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unique_local() || v6.is_unicast_link_local(),
    }
}

/// What a server said of one tool (`tools/list`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    pub name: String,
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
    /// The server's hints: `readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint` (hints only: a server may be wrong).
    pub read_only_hint: Option<bool>,
    pub idempotent_hint: Option<bool>,
    pub destructive_hint: Option<bool>,
}

impl McpToolInfo {
    /// The facts the runtime handles this tool's calls by. A tool that does not say it only
    /// reads is taken to act outside the run, and one that does not say it is idempotent is
    /// never sent twice by resume.
    pub fn facts(&self, server: &str) -> ExternalToolFacts {
        ExternalToolFacts {
            side_effect: if self.read_only_hint == Some(true) {
                SideEffect::ReadsOnly
            } else {
                SideEffect::Outside
            },
            idempotent: self.idempotent_hint == Some(true),
            permission: crate::tool_model::ToolPermission::Allow,
            server: Some(server.to_owned()),
            max_inline_result_bytes: ExternalToolFacts::DEFAULT_INLINE_RESULT_BYTES,
        }
    }
}

/// One registered server as the store keeps it: its registration and the catalog last read
/// from it.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerEntry {
    pub config: McpServerConfig,
    pub catalog: Option<McpCatalog>,
}

/// A server's tools as discovered, stored, and refreshed only when asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCatalog {
    pub server: String,
    /// When it was read (ms since the epoch, from the `Clock` port).
    pub fetched_at_ms: u64,
    pub tools: Vec<McpToolInfo>,
}

impl McpCatalog {
    /// Checks a catalog against the bounds (`mcp.catalog_too_large`) and the tool names
    /// (`mcp.protocol_error`): at most 512 tools, 256 KiB per schema, 8 MiB in all, names
    /// unique and usable in a tool id.
    pub fn check(&self) -> DomainResult<()> {
        let too_large =
            |message: String| DomainError::new(error_codes::MCP_CATALOG_TOO_LARGE, message);
        if self.tools.len() > limits::MAX_TOOLS_PER_SERVER {
            return Err(too_large(format!(
                "server `{}` lists {} tools; at most {} are kept",
                self.server,
                self.tools.len(),
                limits::MAX_TOOLS_PER_SERVER
            )));
        }
        let mut total = 0usize;
        let mut names = std::collections::HashSet::new();
        for tool in &self.tools {
            check_mcp_tool_name(&tool.name).map_err(|err| {
                DomainError::new(
                    error_codes::MCP_PROTOCOL_ERROR,
                    format!("server `{}`: {}", self.server, err.message),
                )
            })?;
            if !names.insert(tool.name.as_str()) {
                return Err(DomainError::new(
                    error_codes::MCP_PROTOCOL_ERROR,
                    format!("server `{}` lists tool `{}` twice", self.server, tool.name),
                ));
            }
            let schema = tool.input_schema.to_string().len();
            if schema > limits::MAX_TOOL_SCHEMA_BYTES {
                return Err(too_large(format!(
                    "server `{}`: the schema of `{}` is {schema} bytes; at most {} are taken",
                    self.server,
                    tool.name,
                    limits::MAX_TOOL_SCHEMA_BYTES
                )));
            }
            total += schema + tool.description.len() + tool.name.len();
        }
        if total > limits::MAX_CATALOG_BYTES {
            return Err(too_large(format!(
                "server `{}`: its catalog is {total} bytes; at most {} are taken",
                self.server,
                limits::MAX_CATALOG_BYTES
            )));
        }
        Ok(())
    }

    pub fn tool(&self, name: &str) -> Option<&McpToolInfo> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// What one call gave back: its text (text content joined; images, audio and other media as
/// a short note each), its structured content, and whether the server says it failed.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCallOutput {
    pub text: String,
    pub structured: Option<Value>,
    pub is_error: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(url: &str) -> McpServerConfig {
        McpServerConfig {
            name: "srv".into(),
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            call_timeout_ms: 1_000,
        }
    }

    #[test]
    fn plain_http_only_to_loopback_or_private_addresses() {
        for ok in [
            "http://127.0.0.1:3001/mcp",
            "http://localhost:8080/mcp",
            "http://[::1]:9/mcp",
            "http://10.1.2.3/mcp",
            "http://192.168.0.2:80/x",
            "https://example.com/mcp",
        ] {
            assert_eq!(http(ok).validate(), Ok(()), "{ok}");
        }
        for bad in [
            "http://example.com/mcp",
            "http://8.8.8.8/mcp",
            "ftp://127.0.0.1/x",
            "127.0.0.1:80",
            "http:///mcp",
        ] {
            let err = http(bad).validate().unwrap_err();
            assert_eq!(err.code, error_codes::MCP_SERVER_INVALID, "{bad}");
        }
    }

    #[test]
    fn names_and_commands_are_checked() {
        let mut config = http("https://example.com");
        config.name = "Has Space".into();
        assert!(config.validate().is_err());
        let stdio = McpServerConfig {
            name: "fs".into(),
            transport: McpTransport::Stdio {
                command: " ".into(),
                args: vec![],
                env: BTreeMap::new(),
                cwd: None,
            },
            call_timeout_ms: 1,
        };
        assert_eq!(
            stdio.validate().unwrap_err().code,
            error_codes::MCP_SERVER_INVALID
        );
        let json = serde_json::json!({
            "name": "fs",
            "transport": {"type": "stdio", "command": "npx", "args": ["-y", "x"]}
        });
        let parsed: McpServerConfig = serde_json::from_value(json).unwrap();
        assert_eq!(parsed.call_timeout_ms, limits::DEFAULT_CALL_TIMEOUT_MS);
        assert_eq!(parsed.validate(), Ok(()));
    }

    #[test]
    fn catalogs_are_bounded() {
        let tool = |name: &str| McpToolInfo {
            name: name.into(),
            title: None,
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            read_only_hint: None,
            idempotent_hint: None,
            destructive_hint: None,
        };
        let mut catalog = McpCatalog {
            server: "s".into(),
            fetched_at_ms: 0,
            tools: vec![tool("a"), tool("b")],
        };
        assert_eq!(catalog.check(), Ok(()));
        catalog.tools.push(tool("a"));
        assert_eq!(
            catalog.check().unwrap_err().code,
            error_codes::MCP_PROTOCOL_ERROR
        );
        catalog.tools = (0..=limits::MAX_TOOLS_PER_SERVER)
            .map(|i| tool(&format!("t{i}")))
            .collect();
        assert_eq!(
            catalog.check().unwrap_err().code,
            error_codes::MCP_CATALOG_TOO_LARGE
        );
        let mut big = tool("big");
        big.input_schema =
            serde_json::json!({"description": "x".repeat(limits::MAX_TOOL_SCHEMA_BYTES)});
        catalog.tools = vec![big];
        assert_eq!(
            catalog.check().unwrap_err().code,
            error_codes::MCP_CATALOG_TOO_LARGE
        );
        // Hints decide the facts; no hint is the cautious reading.
        let facts = tool("a").facts("s");
        assert_eq!(facts.side_effect, SideEffect::Outside);
        assert!(!facts.idempotent);
    }
}
