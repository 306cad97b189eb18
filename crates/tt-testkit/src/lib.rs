//! Test support for tt-agent-runtime: deterministic fakes for every port (`fakes`) and the
//! storage contract suites every storage adapter must pass (`contract`).

pub mod contract;
pub mod fakes;
