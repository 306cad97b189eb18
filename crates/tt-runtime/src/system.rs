//! Production `Clock` and `IdGenerator`: the only places that read the wall clock or make
//! random ids.

use tt_domain::time::Timestamp;
use tt_ports::{Clock, IdGenerator};

/// Wall-clock time.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClock;

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
pub(crate) struct UuidIds;

/// Random bytes fetched from the OS in one call and handed out 16 at a time: a run makes
/// an id for every event, and one `getrandom` syscall per id was about 2% of a fan-out's CPU.
/// Every byte is used once, per thread, so ids stay as unpredictable as the OS's generator.
struct RandomPool {
    bytes: [u8; RANDOM_POOL_BYTES],
    next: usize,
}

const RANDOM_POOL_BYTES: usize = 16 * 64;

thread_local! {
    static RANDOM_POOL: std::cell::RefCell<RandomPool> = const {
        std::cell::RefCell::new(RandomPool {
            bytes: [0; RANDOM_POOL_BYTES],
            next: RANDOM_POOL_BYTES,
        })
    };
}

impl RandomPool {
    /// The next 16 unused random bytes, or `None` when the OS cannot provide any.
    fn take16(&mut self) -> Option<[u8; 16]> {
        if self.next + 16 > RANDOM_POOL_BYTES {
            getrandom::fill(&mut self.bytes).ok()?;
            self.next = 0;
        }
        let mut out = [0; 16];
        out.copy_from_slice(self.bytes.get(self.next..self.next + 16)?);
        // Used bytes are wiped so they cannot be handed out or read again.
        self.bytes[self.next..self.next + 16].fill(0);
        self.next += 16;
        Some(out)
    }
}

impl IdGenerator for UuidIds {
    // This adapter is the one place allowed to make random ids.
    #[allow(clippy::disallowed_methods)]
    fn next_token(&self) -> String {
        let uuid = RANDOM_POOL
            .with(|pool| pool.borrow_mut().take16())
            .map(|bytes| uuid::Builder::from_random_bytes(bytes).into_uuid())
            // The OS refused: the uuid crate's own generator reports that its way.
            .unwrap_or_else(uuid::Uuid::new_v4);
        let mut text = [0u8; uuid::fmt::Simple::LENGTH];
        // Room for the id's prefix, which goes in front of the token in the same string.
        let mut token =
            String::with_capacity(tt_domain::ids::LONGEST_ID_PREFIX + uuid::fmt::Simple::LENGTH);
        token.push_str(uuid.simple().encode_lower(&mut text));
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn assert_v4_simple(token: &str) {
        assert_eq!(token.len(), 32, "{token}");
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{token}"
        );
        let uuid = uuid::Uuid::parse_str(token).unwrap();
        assert_eq!(uuid.get_version_num(), 4, "{token}");
        assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{token}");
    }

    #[test]
    fn a_token_has_room_for_its_ids_prefix() {
        let token = UuidIds.next_token();
        assert!(
            token.capacity() >= token.len() + tt_domain::ids::LONGEST_ID_PREFIX,
            "{} of {}",
            token.len(),
            token.capacity()
        );
        let token_text = token.clone();
        let id = tt_domain::ids::TaskId::generate_handoff(token);
        assert_eq!(id.as_str(), format!("handoff_{token_text}"));
    }

    #[test]
    fn ids_are_distinct_v4_uuids_across_pool_refills_and_threads() {
        // Several refills of one thread's pool, and a second thread with its own pool.
        let per_thread = 3 * RANDOM_POOL_BYTES / 16 + 5;
        let make = move || {
            (0..per_thread)
                .map(|_| UuidIds.next_token())
                .collect::<Vec<_>>()
        };
        let other = std::thread::spawn(make);
        let mut all = make();
        all.extend(other.join().unwrap());
        for token in &all {
            assert_v4_simple(token);
        }
        let distinct: HashSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), all.len());
    }
}
