//! Whether a run's output is shown to the user as a chat message. Its own module, below both
//! the run (which is shown so) and the tool specs (which say so to a delegating agent), so that
//! neither module reaches into the other for it (tidy's `module-cycle`, T11).

use serde::{Deserialize, Serialize};

/// Whether the run's output is shown to the user as a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Presentation {
    Foreground,
    Background,
}
