//! The fan-out workload of `tt-bench` as a library: the zero-latency scripted model
//! ([`model::FanoutModel`]) and the run it drives ([`workload`]), shared by the `tt-bench`
//! binary and other benchmarks of the same run (the Tauri plugin's channel benchmark).

pub mod model;
pub mod workload;
