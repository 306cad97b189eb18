//! Every failure this crate reports, with its code and the message whoever reads it gets (the
//! agent, for a call): written from the caller's side, naming the server and the tool, never
//! a process id, a path or the client's internals. Snapshot-tested below.

use std::fmt::Display;

use tt_domain::error_codes;
use tt_domain::mcp::limits;
use tt_ports::tools::ToolSourceError;

fn error(code: tt_domain::error_codes::Code, message: String) -> ToolSourceError {
    ToolSourceError::new(code, message)
}

/// What a request was, for the messages: `tools/list`, or the call of a tool.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request<'a> {
    List,
    Call(&'a str),
}

impl Display for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::List => f.write_str("the listing of its tools"),
            Self::Call(tool) => write!(f, "the call of `{tool}`"),
        }
    }
}

pub(crate) fn invalid(message: String) -> ToolSourceError {
    error(error_codes::MCP_SERVER_INVALID, message)
}

pub(crate) fn sdk_header(server: &str, header: &str) -> ToolSourceError {
    invalid(format!(
        "server `{server}`: header `{header}` is set by the MCP client itself"
    ))
}

pub(crate) fn bad_header_name(server: &str, header: &str) -> ToolSourceError {
    invalid(format!(
        "server `{server}`: `{header}` is no HTTP header name"
    ))
}

pub(crate) fn bad_header_value(server: &str, header: &str) -> ToolSourceError {
    invalid(format!(
        "server `{server}`: the value of header `{header}` is no valid header value"
    ))
}

fn unavailable(message: String) -> ToolSourceError {
    error(error_codes::MCP_SERVER_UNAVAILABLE, message)
}

pub(crate) fn shut_down(server: &str) -> ToolSourceError {
    unavailable(format!(
        "server `{server}` is not available: the runtime is shutting down"
    ))
}

pub(crate) fn not_started_again(server: &str) -> ToolSourceError {
    unavailable(format!(
        "server `{server}` stopped, or failed to start, twice; it is not started again"
    ))
}

pub(crate) fn start_failed(server: &str, err: impl Display) -> ToolSourceError {
    unavailable(format!("server `{server}` could not be started: {err}"))
}

pub(crate) fn handshake_failed(server: &str, err: impl Display) -> ToolSourceError {
    unavailable(format!(
        "server `{server}` could not be connected to: {err}"
    ))
}

pub(crate) fn start_timeout(server: &str, ms: u64) -> ToolSourceError {
    unavailable(format!(
        "server `{server}` did not start and answer the MCP handshake within {ms} ms"
    ))
}

pub(crate) fn list_timeout(server: &str, ms: u64) -> ToolSourceError {
    unavailable(format!(
        "server `{server}` did not list its tools within {ms} ms"
    ))
}

/// The server stopped while a request was open: it may have acted on it.
pub(crate) fn stopped_during(server: &str, request: Request<'_>) -> ToolSourceError {
    match request {
        Request::List => unavailable(format!("server `{server}` stopped while listing its tools")),
        Request::Call(tool) => unavailable(format!(
            "server `{server}` stopped during the call of `{tool}`; it may have run"
        )),
    }
    .sent()
}

pub(crate) fn request_failed(
    server: &str,
    request: Request<'_>,
    err: impl Display,
) -> ToolSourceError {
    unavailable(format!(
        "server `{server}` could not complete {request}: {err}"
    ))
    .sent()
}

/// A request given up on by its caller; a call may have run.
pub(crate) fn cancelled(server: &str, request: Request<'_>) -> ToolSourceError {
    let cancelled = |message: String| error(error_codes::AGENT_CANCELLED, message);
    match request {
        Request::List => cancelled(format!(
            "the listing of the tools of server `{server}` was cancelled"
        )),
        Request::Call(tool) => cancelled(format!(
            "the call of `{tool}` (server `{server}`) was cancelled"
        ))
        .sent(),
    }
}

pub(crate) fn cancelled_start(server: &str) -> ToolSourceError {
    error(
        error_codes::AGENT_CANCELLED,
        format!("the start of server `{server}` was cancelled"),
    )
}

fn catalog_too_large(message: String) -> ToolSourceError {
    error(error_codes::MCP_CATALOG_TOO_LARGE, message)
}

pub(crate) fn schema_too_large(server: &str, tool: &str, bytes: usize) -> ToolSourceError {
    catalog_too_large(format!(
        "server `{server}`: the schema of `{tool}` is {bytes} bytes; at most {} are taken",
        limits::MAX_TOOL_SCHEMA_BYTES
    ))
}

pub(crate) fn catalog_bytes(server: &str) -> ToolSourceError {
    catalog_too_large(format!(
        "server `{server}`: its catalog is over {} bytes",
        limits::MAX_CATALOG_BYTES
    ))
}

pub(crate) fn too_many_tools(server: &str) -> ToolSourceError {
    catalog_too_large(format!(
        "server `{server}` lists more than {} tools",
        limits::MAX_TOOLS_PER_SERVER
    ))
}

pub(crate) fn too_many_pages(server: &str) -> ToolSourceError {
    catalog_too_large(format!(
        "server `{server}` lists its tools on more than {} pages",
        limits::MAX_CATALOG_PAGES
    ))
}

pub(crate) fn arguments_too_large(server: &str, tool: &str) -> ToolSourceError {
    error(
        error_codes::MCP_ARGUMENTS_TOO_LARGE,
        format!(
            "the arguments of `{tool}` (server `{server}`) are over {} bytes as JSON",
            limits::MAX_ARGUMENT_BYTES
        ),
    )
}

pub(crate) fn call_timeout(server: &str, tool: &str, ms: u64) -> ToolSourceError {
    error(
        error_codes::MCP_CALL_TIMEOUT,
        format!(
            "`{tool}` (server `{server}`) took longer than {ms} ms; it was cancelled and may have run"
        ),
    )
    .sent()
}

pub(crate) fn result_too_large(server: &str, tool: &str, bytes: usize) -> ToolSourceError {
    error(
        error_codes::MCP_RESULT_TOO_LARGE,
        format!(
            "`{tool}` (server `{server}`) answered with {bytes} bytes; at most {} are taken",
            limits::MAX_RESULT_BYTES
        ),
    )
    .sent()
}

/// The server answered with a JSON-RPC error: it refused the request.
pub(crate) fn refused(
    server: &str,
    request: Request<'_>,
    message: &str,
    jsonrpc_code: i32,
) -> ToolSourceError {
    let code = match request {
        // A server that will not list its tools breaks the protocol.
        Request::List => error_codes::MCP_PROTOCOL_ERROR,
        Request::Call(_) => error_codes::MCP_TOOL_ERROR,
    };
    let mut error = error(
        code,
        format!("server `{server}` refused {request}: {message}"),
    );
    error.reason = Some(format!("jsonrpc {jsonrpc_code}"));
    error
}

pub(crate) fn unexpected_answer(server: &str, request: Request<'_>) -> ToolSourceError {
    error(
        error_codes::MCP_PROTOCOL_ERROR,
        format!("server `{server}` answered {request} with something else than its result"),
    )
    .sent()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_from_the_callers_side() {
        let call = Request::Call("search");
        let all = [
            invalid("server `s`: callTimeoutMs must be > 0".into()),
            sdk_header("s", "Accept"),
            bad_header_name("s", "a b"),
            bad_header_value("s", "X-Key"),
            shut_down("s"),
            not_started_again("s"),
            start_failed("s", "No such file or directory (os error 2)"),
            handshake_failed("s", "connection closed: initialize response"),
            start_timeout("s", 30_000),
            list_timeout("s", 60_000),
            stopped_during("s", call),
            stopped_during("s", Request::List),
            request_failed("s", call, "Transport send error"),
            cancelled("s", call),
            cancelled("s", Request::List),
            cancelled_start("s"),
            schema_too_large("s", "search", 300_000),
            catalog_bytes("s"),
            too_many_tools("s"),
            too_many_pages("s"),
            arguments_too_large("s", "search"),
            call_timeout("s", "search", 60_000),
            result_too_large("s", "search", 5_000_000),
            refused("s", call, "Unknown tool: search", -32602),
            refused("s", Request::List, "Method not found", -32601),
            unexpected_answer("s", call),
        ];
        let shown: Vec<String> = all
            .iter()
            .map(|err| {
                format!(
                    "{} | may_have_run={} | reason={} | {}",
                    err.code,
                    err.may_have_run,
                    err.reason.as_deref().unwrap_or("-"),
                    err.message
                )
            })
            .collect();
        insta::assert_snapshot!(shown.join("\n"));
    }
}
