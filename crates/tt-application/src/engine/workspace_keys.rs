//! The workspace keys of new tasks. A task's key is its agent's id, then the first free
//! numbered repeat (`critic-002`, `critic-003`, …: `tt_domain::task::next_workspace_key`);
//! delegations and handoffs share the namespace. The run hands keys out here: it reads the
//! stored keys of an agent id once per active run (`workspace_keys_like`) and remembers every
//! key it gives. So two agents that delegate to the same agent at once get different keys
//! (asking the store for each, both could get the same one before either task was written),
//! and a fan-out to one agent reads the store once instead of once per task.
//!
//! A key is reserved until its task is written: the caller keeps the reservation after the
//! commit ([`KeyReservation::keep`]); dropped before that (a refused call, a failed commit) it
//! is given back, so a refused delegation leaves no gap in the numbering.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tt_domain::ids::RunId;
use tt_ports::{AgentInvocationRepository, StorageResult};

/// The keys one active run has read or given, by the agent id they were asked for.
#[derive(Debug, Default)]
pub(crate) struct WorkspaceKeys {
    namespaces: Mutex<HashMap<String, Namespace>>,
}

/// The keys that are an agent id or start with `{id}-`, and where the search for its next
/// free repeat starts: every repeat below `next_repeat` is taken, so a fan-out of N tasks to
/// one agent finds each key at once, not after N tries.
#[derive(Debug)]
struct Namespace {
    keys: HashSet<String>,
    next_repeat: u32,
}

/// A key given to a task not yet written; given back when dropped unless kept.
#[derive(Debug)]
#[must_use = "a reservation not kept gives its key back"]
pub(crate) struct KeyReservation {
    keys: Arc<WorkspaceKeys>,
    key: String,
    kept: bool,
}

impl WorkspaceKeys {
    /// Reserves the next free key for agent id `base`.
    pub(crate) async fn reserve(
        self: &Arc<Self>,
        store: &dyn AgentInvocationRepository,
        run_id: &RunId,
        base: &str,
    ) -> StorageResult<KeyReservation> {
        let known = self.lock().contains_key(base);
        if !known {
            // Read outside the lock; a second reader of the same id merges the same keys.
            let stored = store.workspace_keys_like(run_id, base).await?;
            let mut namespaces = self.lock();
            let given: Vec<String> = namespaces
                .values()
                .flat_map(|namespace| &namespace.keys)
                .filter(|key| belongs_to(key, base))
                .cloned()
                .collect();
            namespaces
                .entry(base.to_owned())
                .or_insert_with(Namespace::new)
                .keys
                .extend(stored.into_iter().chain(given));
        }
        let mut namespaces = self.lock();
        let key = namespaces
            .entry(base.to_owned())
            .or_insert_with(Namespace::new)
            .next_free(base);
        // `critic-002` is a key of `critic` and of `critic-002` alike.
        for (id, namespace) in namespaces.iter_mut() {
            if belongs_to(&key, id) {
                namespace.keys.insert(key.clone());
            }
        }
        Ok(KeyReservation {
            keys: Arc::clone(self),
            key,
            kept: false,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Namespace>> {
        self.namespaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Namespace {
    fn new() -> Self {
        Self {
            keys: HashSet::new(),
            next_repeat: 2,
        }
    }

    /// `base` when free, else its first free repeat: `tt_domain::task::next_workspace_key`'s
    /// rule, searched from `next_repeat` on.
    fn next_free(&mut self, base: &str) -> String {
        if !self.keys.contains(base) {
            return base.to_owned();
        }
        let mut repeat = self.next_repeat;
        loop {
            let candidate = format!("{base}-{repeat:03}");
            if !self.keys.contains(&candidate) {
                self.next_repeat = repeat;
                return candidate;
            }
            repeat = repeat.saturating_add(1);
        }
    }
}

impl KeyReservation {
    /// The reserved key.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Keeps the key for good: its task was written.
    pub(crate) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for KeyReservation {
    fn drop(&mut self) {
        if !self.kept {
            for namespace in self.keys.lock().values_mut() {
                if namespace.keys.remove(&self.key) {
                    // A free repeat may now lie below `next_repeat`.
                    namespace.next_repeat = 2;
                }
            }
        }
    }
}

/// Whether `key` is in agent id `base`'s namespace: `base` itself or `base-…`.
fn belongs_to(key: &str, base: &str) -> bool {
    key.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tt_ports::AgentRunRepository;
    use tt_testkit::contract::{manifest_for, sample_run, task};
    use tt_testkit::fakes::InMemoryStore;

    /// New workspace keys over a store holding one run whose tasks have `keys`.
    struct Stored {
        store: Arc<InMemoryStore>,
        run: RunId,
        keys: Arc<WorkspaceKeys>,
    }

    impl Stored {
        async fn reserve(&self, base: &str) -> KeyReservation {
            self.keys
                .reserve(&*self.store, &self.run, base)
                .await
                .unwrap()
        }
    }

    async fn stored(keys: &[&str]) -> Stored {
        let store = InMemoryStore::new();
        let run = sample_run(1);
        store.create_run(&run, &manifest_for(&run)).await.unwrap();
        for (n, key) in keys.iter().enumerate() {
            let mut record = task(&run, &format!("task_{n}"), n as i64 + 1);
            record.workspace_key = (*key).to_owned();
            store.create_task(&record).await.unwrap();
        }
        Stored {
            store,
            run: run.id,
            keys: Arc::new(WorkspaceKeys::default()),
        }
    }

    #[tokio::test]
    async fn keys_go_on_from_the_stored_ones_and_are_never_given_twice() {
        let keys = stored(&["critic", "critic-002", "editor"]).await;
        let a = keys.reserve("critic").await;
        let b = keys.reserve("critic").await;
        let c = keys.reserve("writer").await;
        assert_eq!(
            (a.key(), b.key(), c.key()),
            ("critic-003", "critic-004", "writer")
        );
        a.keep();
        b.keep();
        c.keep();
        let d = keys.reserve("writer").await;
        assert_eq!(d.key(), "writer-002");
    }

    #[tokio::test]
    async fn a_key_not_kept_is_given_again() {
        let keys = stored(&[]).await;
        keys.reserve("critic").await.keep();
        let refused = keys.reserve("critic").await;
        assert_eq!(refused.key(), "critic-002");
        drop(refused);
        let next = keys.reserve("critic").await;
        assert_eq!(next.key(), "critic-002");
    }

    #[tokio::test]
    async fn a_repeat_of_one_id_is_the_key_of_another() {
        // `critic-002` the repeat of `critic`, and `critic-002` the agent, share one key.
        let keys = stored(&[]).await;
        keys.reserve("critic-002").await.keep();
        keys.reserve("critic").await.keep();
        let repeat = keys.reserve("critic").await;
        assert_eq!(repeat.key(), "critic-003");
        repeat.keep();
        let keys = stored(&[]).await;
        keys.reserve("critic").await.keep();
        keys.reserve("critic").await.keep();
        let agent = keys.reserve("critic-002").await;
        assert_eq!(agent.key(), "critic-002-002");
    }

    /// The search from `next_repeat` finds what the domain's rule finds over the same keys,
    /// whatever the run holds: gaps, four-digit repeats, keys that only look like repeats.
    #[tokio::test]
    async fn keys_follow_the_domain_rule() {
        let odd = [
            "critic",
            "critic-0004",
            "critic-04",
            "critic-x",
            "critic-003",
            "criticism",
        ];
        let keys = stored(&odd).await;
        let mut held: Vec<String> = odd.iter().map(|key| (*key).to_owned()).collect();
        for _ in 0..1_005 {
            let expected =
                tt_domain::task::next_workspace_key("critic", held.iter().map(String::as_str));
            let key = keys.reserve("critic").await;
            assert_eq!(key.key(), expected);
            held.push(expected);
            key.keep();
        }
        assert_eq!(held.last().map(String::as_str), Some("critic-1007"));
    }

    #[test]
    fn a_namespace_is_the_id_and_its_dashed_repeats() {
        assert!(belongs_to("critic", "critic"));
        assert!(belongs_to("critic-002", "critic"));
        assert!(!belongs_to("critics", "critic"));
        assert!(!belongs_to("crit", "critic"));
    }
}
