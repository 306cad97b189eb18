//! Contract cases for `McpServerRepository`: an entry reads back as stored, from a fresh handle
//! too (another host of the same store), and its replacement likewise; entries list by name;
//! removing says whether anything was there. Run with `mcp_servers_contract_tests!`.

use tt_domain::mcp::{McpCatalog, McpServerConfig, McpServerEntry, McpTransport};
use tt_ports::McpServerRepository;

/// One MCP server store under test.
pub type McpServersUnderTest = super::RepositoryUnderTest<dyn McpServerRepository>;

contract_suite_macro! {
    /// Runs every `McpServerRepository` contract case against `$factory`, an expression that
    /// yields a fresh [`McpServersUnderTest`] (it may `.await`).
    mcp_servers_contract_tests => mcp_servers_contract, mcp_servers {
        entries_read_back_from_another_handle_and_are_replaced,
        entries_list_by_name_and_removal_says_what_was_there,
    }
}

fn entry(name: &str, command: &str, with_catalog: bool) -> McpServerEntry {
    McpServerEntry {
        config: McpServerConfig {
            name: name.to_owned(),
            transport: McpTransport::Stdio {
                command: command.to_owned(),
                args: vec!["--stdio".to_owned()],
                env: Default::default(),
                cwd: None,
            },
            call_timeout_ms: 5_000,
        },
        catalog: with_catalog.then(|| McpCatalog {
            server: name.to_owned(),
            fetched_at_ms: 1_764_000_000_000,
            tools: Vec::new(),
        }),
    }
}

pub async fn entries_read_back_from_another_handle_and_are_replaced(s: McpServersUnderTest) {
    assert_eq!(s.repo.get_mcp_server("notes").await.unwrap(), None);
    let first = entry("notes", "notes-server", false);
    s.repo.put_mcp_server(&first).await.unwrap();
    let other = (s.reopen)();
    assert_eq!(other.get_mcp_server("notes").await.unwrap(), Some(first));
    let second = entry("notes", "notes-server-2", true);
    s.repo.put_mcp_server(&second).await.unwrap();
    assert_eq!(other.get_mcp_server("notes").await.unwrap(), Some(second));
}

pub async fn entries_list_by_name_and_removal_says_what_was_there(s: McpServersUnderTest) {
    assert!(s.repo.list_mcp_servers().await.unwrap().is_empty());
    for name in ["mail", "notes", "calendar"] {
        s.repo
            .put_mcp_server(&entry(name, "server", false))
            .await
            .unwrap();
    }
    let names: Vec<String> = s
        .repo
        .list_mcp_servers()
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.config.name)
        .collect();
    assert_eq!(names, ["calendar", "mail", "notes"]);
    assert!(s.repo.remove_mcp_server("mail").await.unwrap());
    assert!(!s.repo.remove_mcp_server("mail").await.unwrap());
    let other = (s.reopen)();
    assert_eq!(other.get_mcp_server("mail").await.unwrap(), None);
    assert_eq!(other.list_mcp_servers().await.unwrap().len(), 2);
}
