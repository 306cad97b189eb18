//! The PostgreSQL store's own tests, beside the shared contract suites.

mod follow;
mod ownership;
mod store;
