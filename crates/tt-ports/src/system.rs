//! Time and identity sources, so tests and golden files are deterministic.

use tt_domain::time::Timestamp;

/// Reads the current time.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// Hands out unique lowercase-hex tokens (32 hex digits in production) used to build ids. A
/// token with `tt_domain::ids::LONGEST_ID_PREFIX` bytes of spare capacity becomes its id in
/// place, without another allocation.
pub trait IdGenerator: Send + Sync {
    fn next_token(&self) -> String;
}
