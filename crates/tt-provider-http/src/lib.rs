//! HTTP plumbing shared by the HTTP model-provider adapters: a JSON POST under a cancel token
//! and a timeout, classification of failures into `ModelError`, an SSE decoder, and the control
//! flow of a whole or streamed call (`exchange`), parameterised by the adapter's wire format.
//!
//! Not an adapter itself: it knows only tt-domain and tt-ports (and the HTTP client), so the
//! adapters can share it without depending on one another; nor does it know their names: each
//! adapter states its name and wire format (`WireFormat::PROVIDER_FORMAT`). With the `test-support` feature
//! (dev-dependencies only) it also carries the 127.0.0.1 test server, a strict fake of
//! llama.cpp's server (`llama_fake`) and the fixtures both adapters' tests use.

pub mod dropped;
pub mod exchange;
pub mod http;
#[cfg(feature = "test-support")]
pub mod llama_fake;
pub mod probe;
mod setters;
pub mod sse;
#[cfg(feature = "test-support")]
pub mod test_fixtures;
#[cfg(feature = "test-support")]
pub mod test_server;
