//! Keyed async mutexes: one lock per run, task set or workspace path, created on demand and
//! dropped from the table once nobody holds or waits for them.

use crate::fast_map::FastMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OwnedMutexGuard;

/// Above this many entries the table is pruned of unused locks on each acquisition.
const PRUNE_THRESHOLD: usize = 256;

#[derive(Default)]
pub(crate) struct KeyedLocks {
    table: Mutex<FastMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl KeyedLocks {
    /// Waits for the lock named `key`; the guard may be moved into a blocking task.
    pub(crate) async fn lock(&self, key: String) -> OwnedMutexGuard<()> {
        let mutex = {
            let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
            if table.len() > PRUNE_THRESHOLD {
                // Only the table holds these: nobody owns or awaits them, and new lockers must
                // take the table lock first, which we hold.
                table.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            Arc::clone(table.entry(key).or_default())
        };
        mutex.lock_owned().await
    }
}
