//! The PostgreSQL store's own tests, beside the shared contract suites.

mod ownership;
mod store;
