//! `tt-agent mcp`: register, list, inspect, call and remove MCP servers (docs/tools.md, "MCP
//! servers"), with the conventions of other agent CLIs: `mcp add <name> -- <command> [args…]`
//! for a stdio server, `mcp add --transport http <name> <url>` for Streamable HTTP.

use std::collections::BTreeMap;
use tt_runtime::error_codes;

use anyhow::{Context, bail};
use tt_runtime::{AgentRuntime, McpServerConfig, McpServerEntry, McpTransport};

/// How the runtime reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Transport {
    Stdio,
    Http,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Register a server and read its tools: `mcp add <name> -- <command> [args…]` (stdio) or
    /// `mcp add --transport http <name> <url>`. Registering a name again replaces it. Its tools
    /// are offered only to profiles that list them under `tools.mcp`.
    Add {
        #[arg(long, value_enum, default_value = "stdio")]
        transport: Transport,
        /// An environment variable for a stdio server, `KEY=value` (repeatable).
        #[arg(short = 'e', long = "env")]
        env: Vec<String>,
        /// A header for an HTTP server, `Name: value` (repeatable).
        #[arg(short = 'H', long = "header")]
        headers: Vec<String>,
        /// The working directory of a stdio server.
        #[arg(long)]
        cwd: Option<String>,
        /// How long one call may take, in milliseconds (default 60000).
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// The registration name: tool ids read `mcp/<name>:<tool>`.
        name: String,
        /// The command and its arguments (stdio, after `--`), or the URL (http).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        target: Vec<String>,
    },
    /// The registered servers, with how many tools each listed when last read.
    List,
    /// One server's tools as stored; with `--refresh`, read again from the server first.
    Tools {
        name: String,
        #[arg(long)]
        refresh: bool,
    },
    /// Call one tool by hand, outside any run: `mcp call <server> <tool> '<json args>'`.
    Call {
        server: String,
        tool: String,
        /// The arguments, one JSON object (default `{}`).
        arguments: Option<String>,
    },
    /// Forget a server.
    Remove { name: String },
}

/// Runs one `mcp` command on `runtime`, printing what it found.
pub(crate) async fn run(runtime: &AgentRuntime, command: McpCommand) -> anyhow::Result<()> {
    match command {
        McpCommand::Add {
            transport,
            env,
            headers,
            cwd,
            timeout_ms,
            name,
            target,
        } => {
            let config = McpServerConfig {
                name,
                transport: transport_of(transport, target, env, headers, cwd)?,
                call_timeout_ms: timeout_ms.unwrap_or(tt_runtime::MCP_DEFAULT_CALL_TIMEOUT_MS),
            };
            let entry = runtime.add_mcp_server(config).await?;
            println!(
                "Added MCP server {} ({}): {} tools.",
                entry.config.name,
                describe(&entry.config.transport),
                tool_count(&entry)
            );
            print_tools(&entry);
            Ok(())
        }
        McpCommand::List => {
            let servers = runtime.list_mcp_servers().await?;
            if servers.is_empty() {
                println!("No MCP servers. Add one with `tt-agent mcp add <name> -- <command>`.");
            }
            for entry in &servers {
                println!(
                    "{}\t{}\t{} tools",
                    entry.config.name,
                    describe(&entry.config.transport),
                    tool_count(entry)
                );
            }
            Ok(())
        }
        McpCommand::Tools { name, refresh } => {
            let entry = runtime.mcp_server(&name, refresh).await?;
            print_tools(&entry);
            Ok(())
        }
        McpCommand::Call {
            server,
            tool,
            arguments,
        } => {
            let arguments: serde_json::Value =
                serde_json::from_str(arguments.as_deref().unwrap_or("{}"))
                    .context("the arguments are not JSON")?;
            let output = runtime.call_mcp_tool(&server, &tool, arguments).await?;
            println!("{}", output.text);
            if let Some(structured) = &output.structured {
                println!("{}", serde_json::to_string_pretty(structured)?);
            }
            if output.is_error {
                bail!(
                    "{}: the tool `{tool}` reported a failure",
                    error_codes::MCP_TOOL_ERROR
                );
            }
            Ok(())
        }
        McpCommand::Remove { name } => {
            runtime.remove_mcp_server(&name).await?;
            println!("Removed MCP server {name}.");
            Ok(())
        }
    }
}

fn transport_of(
    transport: Transport,
    target: Vec<String>,
    env: Vec<String>,
    headers: Vec<String>,
    cwd: Option<String>,
) -> anyhow::Result<McpTransport> {
    match transport {
        Transport::Stdio => {
            if !headers.is_empty() {
                bail!("--header is for --transport http");
            }
            let mut parts = target.into_iter();
            let command = parts.next().context("give the command after `--`")?;
            Ok(McpTransport::Stdio {
                command,
                args: parts.collect(),
                env: pairs(&env, '=', "--env KEY=value")?,
                cwd,
            })
        }
        Transport::Http => {
            if !env.is_empty() || cwd.is_some() {
                bail!("--env and --cwd are for stdio servers");
            }
            let [url] = <[String; 1]>::try_from(target)
                .map_err(|_| anyhow::anyhow!("give one URL for --transport http"))?;
            let headers = pairs(&headers, ':', "--header 'Name: value'")?;
            Ok(McpTransport::Http { url, headers })
        }
    }
}

/// `KEY=value` (or `Name: value`) pairs, trimmed.
fn pairs(
    items: &[String],
    separator: char,
    form: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            let (key, value) = item
                .split_once(separator)
                .with_context(|| format!("`{item}` is not {form}"))?;
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        })
        .collect()
}

fn describe(transport: &McpTransport) -> String {
    match transport {
        McpTransport::Stdio { command, args, .. } => {
            let mut text = format!("stdio: {command}");
            for arg in args {
                text.push(' ');
                text.push_str(arg);
            }
            text
        }
        McpTransport::Http { url, .. } => format!("http: {url}"),
    }
}

fn tool_count(entry: &McpServerEntry) -> usize {
    entry
        .catalog
        .as_ref()
        .map_or(0, |catalog| catalog.tools.len())
}

fn print_tools(entry: &McpServerEntry) {
    let Some(catalog) = &entry.catalog else {
        println!(
            "No catalog yet: `tt-agent mcp tools {} --refresh`.",
            entry.config.name
        );
        return;
    };
    for tool in &catalog.tools {
        let first_line = tool.description.lines().next().unwrap_or_default();
        let read_only = if tool.read_only_hint == Some(true) {
            " [read-only]"
        } else {
            ""
        };
        println!(
            "mcp/{}:{}{read_only}\t{first_line}",
            entry.config.name, tool.name
        );
    }
}
