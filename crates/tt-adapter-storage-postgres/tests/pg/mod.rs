//! The PostgreSQL store's own tests, beside the shared contract suites.

mod follow;
pub(crate) mod ownership;
mod recovery;
mod restart;
mod store;
