//! The MCP client of tt-agent-runtime (docs/tools.md, "MCP servers"): [`RmcpClient`]
//! implements the `McpClient` port on the official Rust SDK (`rmcp`), for stdio servers (a
//! child process this crate starts and stops) and Streamable HTTP servers. No protocol code of
//! its own: it starts connections, bounds what servers hand back, and maps failures to the
//! `mcp.*` codes.

mod child;
mod client;
mod connection;
mod convert;
mod messages;

pub use client::RmcpClient;
