//! The seven workspace tools (reference §2.6): list, search, read, write and patch execute here
//! against the `WorkspaceRepository` port; commit and finish only parse their arguments here
//! (the tool loop drives their effects). Specs for all seven live in `specs`.

mod commit_finish_args;
mod env;
mod list;
mod patch;
mod read;
mod read_state;
mod search;
mod specs;
mod write;

#[cfg(test)]
mod behaviour_tests;

use serde_json::Value;
use tt_domain::error_codes;
use tt_domain::tool::ToolName;

use crate::error::{ApplicationError, ToolCallError};
use crate::tools::ToolSuccess;

pub(crate) use commit_finish_args::{CommitArgs, parse_commit_args, parse_finish_args};
pub(crate) use env::WorkspaceToolEnv;
pub(crate) use read_state::ReadState;
pub(crate) use specs::{SpecAudience, compact_description, spec};

/// Executes `workspace.list_files`, `search_files`, `read_file`, `write_file` and
/// `apply_patch`. Any other tool is a wiring mistake and fails fast with `agent.internal_error`.
pub(crate) async fn execute(
    tool: ToolName,
    args: &Value,
    env: WorkspaceToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    match tool {
        ToolName::WorkspaceListFiles => list::list_files(args, env).await,
        ToolName::WorkspaceSearchFiles => search::search_files(args, env).await,
        ToolName::WorkspaceReadFile => read::read_file(args, env).await,
        ToolName::WorkspaceWriteFile => write::write_file(args, env).await,
        ToolName::WorkspaceApplyPatch => patch::apply_patch(args, env).await,
        _ => Err(ToolCallError::Fatal(ApplicationError::fatal(
            error_codes::AGENT_INTERNAL_ERROR,
            format!("{tool} is not executed by the workspace tool executor"),
        ))),
    }
}

/// What the workspace tools' unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use crate::error::ToolError;

    /// Asserts what `parse` makes of each raw integer argument: the value, or the error's code.
    pub(crate) fn assert_parsed<T: PartialEq + std::fmt::Debug + Copy>(
        parse: impl Fn(Option<i64>) -> Result<T, ToolError>,
        cases: &[(Option<i64>, Result<T, &str>)],
    ) {
        for (raw, expected) in cases {
            let parsed = parse(*raw).map_err(|error| error.code.as_str());
            assert_eq!(parsed, *expected, "{raw:?}");
        }
    }
}
