//! Deterministic fakes for every port: in-memory storage, a manual clock, sequential ids, a
//! switchable commit bridge and a closure-driven model (with a wrapper around any model that
//! gates, streams, holds, refuses and probes its answers), registered MCP servers and connections, plus model response builders.

pub mod commit;
pub mod faulty;
pub mod model;
pub mod prompt;
pub mod registrations;
pub mod responses;
pub mod shaped;
pub mod skills;
pub mod store;
pub mod system;
pub mod transcripts;

pub use commit::{CommitBehavior, FakeCommitBridge};
pub use faulty::{DiskFault, FaultPlan, FaultyStore};
pub use model::{FakeModel, priced_model_info};
pub use prompt::{FakeConnections, FakePromptBroker, default_assembly};
pub use registrations::{InMemoryConnections, InMemoryMcpServers, InMemoryPresetTemplates};
pub use shaped::ShapedModel;
pub use skills::{InMemorySkills, SkillOp};
pub use store::{InMemoryStore, PersistentStateRecord, StoreOp};
pub use system::{MANUAL_CLOCK_START, ManualClock, SequentialIds};
pub use transcripts::InMemoryTranscripts;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn fakes_are_send_and_sync() {
        assert_send_sync::<InMemoryStore>();
        assert_send_sync::<ManualClock>();
        assert_send_sync::<SequentialIds>();
        assert_send_sync::<FakeCommitBridge>();
        assert_send_sync::<FakeModel>();
        assert_send_sync::<ShapedModel>();
        assert_send_sync::<InMemorySkills>();
    }
}
