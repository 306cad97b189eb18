//! The codes of MCP servers (`mcp.*`): registering one, reading its catalog, calling its
//! tools. A call's failure goes back to the model as a tool error; a registration's or a
//! catalog's reaches the host.

super::error_codes! {
    MCP_ARGUMENTS_TOO_LARGE = "mcp.arguments_too_large", ToolRefusal,
        "An MCP tool call's arguments are over 256 KiB as JSON.";
    MCP_CALL_TIMEOUT = "mcp.call_timeout", ToolRefusal,
        "An MCP tool call took longer than its server's call timeout; it was cancelled and may have run.";
    MCP_CATALOG_INVALID = "mcp.catalog_invalid", Configuration,
        "A profile names an MCP tool its server's stored catalog does not list, or the server has no stored catalog yet.";
    MCP_CATALOG_TOO_LARGE = "mcp.catalog_too_large", Configuration,
        "An MCP server lists more than 32 pages or 512 tools, a tool schema over 256 KiB, or a catalog over 8 MiB.";
    MCP_PROTOCOL_ERROR = "mcp.protocol_error", ToolRefusal,
        "An MCP server broke the protocol (an unreadable reply, a duplicate or unusable tool name).";
    MCP_RESULT_TOO_LARGE = "mcp.result_too_large", ToolRefusal,
        "An MCP tool call's result is over 4 MiB.";
    MCP_SERVER_INVALID = "mcp.server_invalid", Configuration,
        "An MCP server registration is invalid (name, command, URL, header or timeout); plain http:// is only for loopback or private addresses.";
    MCP_SERVER_NOT_FOUND = "mcp.server_not_found", HostContract,
        "No MCP server is registered under that name.";
    MCP_SERVER_UNAVAILABLE = "mcp.server_unavailable", ToolRefusal,
        "An MCP server could not be started or reached, or died again after one restart.";
    MCP_TOOL_ERROR = "mcp.tool_error", ToolRefusal,
        "An MCP tool answered with `isError`: the agent reads the server's message.";
}
