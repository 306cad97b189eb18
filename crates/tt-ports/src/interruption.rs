//! What every store records when it finds an unfinished run whose owner went away (the process
//! or host that ran it stopped): the same reason and the same task transition, so the file
//! store and PostgreSQL interrupt such runs alike.

use tt_domain::task::{TaskStatus, TaskTransition};

/// The `reason` of `run_interrupted` when the process that ran the run went away.
pub const OWNER_EXITED: &str = "owner_exited";

/// The transition of a task its run's owner left unfinished: `interrupted`, saying why.
pub fn owner_exited_task() -> TaskTransition {
    TaskTransition {
        status: TaskStatus::Interrupted,
        result_ref: None,
        error: Some("the process running this task stopped before it finished".to_owned()),
    }
}
