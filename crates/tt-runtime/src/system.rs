//! Production `Clock` and `IdGenerator`: the only places that read the wall clock or make
//! random ids.

use tt_domain::time::Timestamp;
use tt_ports::{Clock, IdGenerator};

/// Wall-clock time.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    // This adapter is the one place allowed to read the system clock.
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> Timestamp {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp::from_unix_millis(millis)
    }
}

/// Random v4 UUIDs in simple (32 hex digit) form.
#[derive(Debug, Default, Clone, Copy)]
pub struct UuidIds;

impl IdGenerator for UuidIds {
    // This adapter is the one place allowed to make random ids.
    #[allow(clippy::disallowed_methods)]
    fn next_token(&self) -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }
}
