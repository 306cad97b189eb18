//! What the behaviour tests of the workspace and skill tools share: calling a tool and reading
//! its outcome as a success, a recoverable error (code and message) or a fatal error.

use serde_json::Value;
use tt_domain::tool::ToolName;

use crate::error::{ApplicationError, ToolCallError};
use crate::tools::ToolSuccess;

/// A test's agent that can call one family of tools; the rest reads the outcome.
pub(crate) trait CallsTools {
    /// Executes `tool` with `args` as this agent.
    async fn call(&mut self, tool: ToolName, args: Value) -> Result<ToolSuccess, ToolCallError>;

    /// The success; fails the test on any error.
    async fn ok(&mut self, tool: ToolName, args: Value) -> ToolSuccess {
        match self.call(tool, args.clone()).await {
            Ok(success) => success,
            Err(err) => panic!("{tool} {args} failed: {err}"),
        }
    }

    /// The recoverable error's code and message; fails the test on success or a fatal error.
    async fn fail(&mut self, tool: ToolName, args: Value) -> (&'static str, String) {
        match self.call(tool, args.clone()).await {
            Err(ToolCallError::Recoverable(err)) => (err.code.as_str(), err.message),
            other => panic!("{tool} {args}: expected a recoverable error, got {other:?}"),
        }
    }

    /// The recoverable error's code.
    async fn code(&mut self, tool: ToolName, args: Value) -> &'static str {
        self.fail(tool, args).await.0
    }

    /// Asserts that the call is refused with the recoverable error `code`.
    async fn refuses(&mut self, tool: ToolName, args: Value, code: &str) {
        let refused = self.code(tool, args.clone()).await;
        assert_eq!(refused, code, "{tool} {args}");
    }

    /// The fatal error; fails the test on success or a recoverable error.
    async fn fatal(&mut self, tool: ToolName, args: Value) -> ApplicationError {
        match self.call(tool, args.clone()).await {
            Err(ToolCallError::Fatal(err)) => err,
            other => panic!("{tool} {args}: expected a fatal error, got {other:?}"),
        }
    }
}
