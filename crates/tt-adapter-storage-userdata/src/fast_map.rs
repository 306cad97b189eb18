//! The hash map of the store's in-memory indexes.

use std::collections::HashMap;

/// The store's in-memory maps (by run, document key, blob hash, workspace path, lock key): looked
/// up on every append and document write, several times per model turn, so hashed with
/// foldhash, seeded per map, instead of the standard library's SipHash.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
