//! `ManualClock` and `SequentialIds`: the `Clock` and `IdGenerator` fakes that make
//! timestamps and ids in events and golden files deterministic.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use tt_domain::time::Timestamp;
use tt_ports::{Clock, IdGenerator};

/// 2026-01-01T00:00:00.000Z, where every `ManualClock` starts.
pub const MANUAL_CLOCK_START: Timestamp = Timestamp::from_unix_millis(1_767_225_600_000);

/// A clock that moves only when told to (`advance`, `set`), or by exactly 1 ms per `now()` call
/// when built with [`ManualClock::ticking`], so consecutive events get distinct timestamps.
#[derive(Debug)]
pub struct ManualClock {
    now_millis: AtomicI64,
    tick_millis: i64,
}

impl ManualClock {
    /// A frozen clock at [`MANUAL_CLOCK_START`].
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            now_millis: AtomicI64::new(MANUAL_CLOCK_START.unix_millis()),
            tick_millis: 0,
        })
    }

    /// Starts at [`MANUAL_CLOCK_START`]; every `now()` returns the current instant and then
    /// moves the clock forward by 1 ms.
    pub fn ticking() -> Arc<Self> {
        Arc::new(Self {
            now_millis: AtomicI64::new(MANUAL_CLOCK_START.unix_millis()),
            tick_millis: 1,
        })
    }

    /// Moves the clock forward by `millis`.
    pub fn advance(&self, millis: u64) {
        let delta = i64::try_from(millis).unwrap_or(i64::MAX);
        let _ = self
            .now_millis
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(delta))
            });
    }

    pub fn set(&self, instant: Timestamp) {
        self.now_millis
            .store(instant.unix_millis(), Ordering::SeqCst);
    }

    /// The current instant, without ticking.
    pub fn peek(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.now_millis.load(Ordering::SeqCst))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        let tick = self.tick_millis;
        let previous = self
            .now_millis
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(tick))
            })
            .unwrap_or_else(|now| now);
        Timestamp::from_unix_millis(previous)
    }
}

/// Hands out `"000…001"`, `"000…002"`, … (32 lowercase hex digits), so ids read
/// `run_0000…0001`, `inv_0000…0002` and so on.
#[derive(Debug)]
pub struct SequentialIds {
    next: AtomicU64,
}

impl SequentialIds {
    pub fn new() -> Arc<Self> {
        Self::starting_at(1)
    }

    /// The first token will be `first` in hex.
    pub fn starting_at(first: u64) -> Arc<Self> {
        Arc::new(Self {
            next: AtomicU64::new(first),
        })
    }

    /// The hex token `next_token` would produce for `n`.
    pub fn token(n: u64) -> String {
        format!("{n:032x}")
    }
}

impl IdGenerator for SequentialIds {
    fn next_token(&self) -> String {
        Self::token(self.next.fetch_add(1, Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_starts_at_2026_and_moves_on_demand() {
        let clock = ManualClock::new();
        assert_eq!(clock.now().to_string(), "2026-01-01T00:00:00.000Z");
        assert_eq!(clock.now(), clock.now());
        clock.advance(1_500);
        assert_eq!(clock.now().to_string(), "2026-01-01T00:00:01.500Z");
        clock.set(Timestamp::from_unix_millis(0));
        assert_eq!(clock.now().unix_millis(), 0);
    }

    #[test]
    fn ticking_clock_gives_distinct_instants() {
        let clock = ManualClock::ticking();
        let first = clock.now();
        let second = clock.now();
        assert_eq!(first, MANUAL_CLOCK_START);
        assert_eq!(second.millis_since(first), 1);
        assert_eq!(clock.peek().millis_since(first), 2);
    }

    #[test]
    fn sequential_ids_are_32_hex_digits() {
        let ids = SequentialIds::new();
        assert_eq!(ids.next_token(), "00000000000000000000000000000001");
        assert_eq!(ids.next_token(), "00000000000000000000000000000002");
        assert_eq!(SequentialIds::starting_at(255).next_token().len(), 32);
        assert!(SequentialIds::token(255).ends_with("ff"));
    }
}
