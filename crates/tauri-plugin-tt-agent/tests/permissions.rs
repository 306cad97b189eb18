//! The command list `build.rs` generates permissions from is the host command table plus the
//! stream commands, and the default set allows exactly those.

use tauri_plugin_tt_agent::{COMMAND_LIST, STREAM_COMMANDS};

fn listed() -> Vec<String> {
    COMMAND_LIST
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_command_list_is_the_host_command_table_then_the_stream_commands() {
    let expected: Vec<String> = tauri_plugin_tt_agent::HOST_COMMANDS
        .iter()
        .chain(STREAM_COMMANDS)
        .map(|name| (*name).to_owned())
        .collect();
    assert_eq!(listed(), expected);
}

#[test]
fn the_default_permission_set_allows_every_command_but_mcp_servers_and_saving_connections() {
    let text = std::fs::read_to_string(format!(
        "{}/permissions/default.toml",
        super::support::PLUGIN_DIR
    ))
    .unwrap();
    let file: toml::Value = toml::from_str(&text).unwrap();
    let allowed: Vec<String> = file["default"]["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value.as_str().unwrap().to_owned())
        .collect();
    let allow = |name: &String| format!("allow-{}", name.replace('_', "-"));
    let expected: Vec<String> = listed()
        .iter()
        .filter(|name| {
            !MCP_SERVER_COMMANDS.contains(&name.as_str())
                && !CONNECTION_COMMANDS.contains(&name.as_str())
        })
        .map(allow)
        .collect();
    assert_eq!(allowed, expected);
    // What the default leaves out is the `allow-mcp-servers` and `allow-connections` sets.
    let sets = file["set"].as_array().unwrap();
    for (set, (identifier, commands)) in sets.iter().zip([
        ("allow-mcp-servers", MCP_SERVER_COMMANDS),
        ("allow-connections", CONNECTION_COMMANDS),
    ]) {
        assert_eq!(set["identifier"].as_str(), Some(identifier));
        let allowed: Vec<String> = commands
            .iter()
            .map(|name| allow(&(*name).to_owned()))
            .collect();
        assert_eq!(set["permissions"], toml::Value::from(allowed));
    }
    assert_eq!(sets.len(), 2);
}

/// The commands the default set leaves out because a connection names a server and the
/// variable its key is read from: saving one may send that key anywhere.
const CONNECTION_COMMANDS: &[&str] = &["save_agent_connection", "remove_agent_connection"];

/// The commands the default set leaves out: adding a stdio MCP server starts a process.
const MCP_SERVER_COMMANDS: &[&str] = &[
    "add_agent_mcp_server",
    "remove_agent_mcp_server",
    "call_agent_mcp_tool",
];

#[test]
fn a_window_without_the_permission_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = super::support::app_with(
        dir.path(),
        &serde_json::json!({"schemaVersion": 1, "agents": {}}),
        &["tt-agent:allow-list-agent-runs"],
    );
    assert!(app.invoke("list_agent_runs", serde_json::json!({})).is_ok());
    let refused = app
        .invoke(
            "start_agent_run",
            serde_json::json!({"request": {"stableChatId": "c", "userRequest": "Hi"}}),
        )
        .unwrap_err();
    assert!(
        refused.as_str().unwrap().contains("not allowed"),
        "{refused}"
    );
}

#[test]
fn the_guest_api_types_every_command_of_the_table() {
    let text = std::fs::read_to_string(format!(
        "{}/guest-js/commands.ts",
        super::support::PLUGIN_DIR
    ))
    .unwrap();
    let body = text
        .split("export interface HostCommands {")
        .nth(1)
        .unwrap();
    let mut typed: Vec<&str> = body
        .lines()
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|line| !line.starts_with(' ') && !line.starts_with('/'))
        .filter_map(|line| line.split_once(':').map(|(name, _)| name))
        .collect();
    typed.sort_unstable();
    let mut table: Vec<&str> = tauri_plugin_tt_agent::HOST_COMMANDS.to_vec();
    table.sort_unstable();
    assert_eq!(typed, table);
}
