//! Test support for tt-agent-runtime: deterministic fakes for every port (`fakes`), the
//! storage contract suites every storage adapter must pass (`contract`), and the one leak
//! scanner for model-facing text (`leaks`).

pub mod contract;
pub mod fakes;
pub mod leaks;
