//! Test support for tt-agent-runtime: deterministic fakes for every port (`fakes`), the
//! storage contract suites every storage adapter must pass (`contract`), and the one leak
//! scanner for model-facing text (`leaks`), and the completeness check of docs/events.md
//! (`events_doc`); `memory_store`, the fakes as a store opened from a `memory://` URL; and
//! `store_tests`, what the storage adapters' own crash and journal tests share.

pub mod contract;
pub mod events_doc;
pub mod fakes;
pub mod leaks;
pub mod memory_store;
pub mod otlp;
pub mod store_tests;
