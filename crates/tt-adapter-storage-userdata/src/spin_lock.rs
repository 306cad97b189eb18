//! A mutex taken with a short spin first, for locks held only across one system call (a run's
//! files during an append). The holder is then running on another core and done within
//! microseconds; sleeping on the lock instead costs two context switches and leaves the
//! waiting thread's core idle meanwhile, which on a tokio worker is a worker lost: in the
//! 256-agent fan-out on tmpfs, 10% of the wall time (docs/benchmarks.md, 7 December 2026).

use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// How long a thread spins for a held lock before it sleeps on it.
const SPIN_FOR: Duration = Duration::from_micros(20);

/// Locks `mutex`, spinning up to [`SPIN_FOR`] while another thread holds it, then sleeping. A
/// poisoned lock is taken as it is (its users keep it consistent across a panic).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    let mut deadline = None;
    loop {
        match mutex.try_lock() {
            Ok(guard) => return guard,
            Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {}
        }
        let now = Instant::now();
        if *deadline.get_or_insert(now + SPIN_FOR) <= now {
            return mutex.lock().unwrap_or_else(PoisonError::into_inner);
        }
        for _ in 0..16 {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_held_lock_is_waited_for_and_a_poisoned_one_taken() {
        let mutex = Arc::new(Mutex::new(0_u32));
        let held = lock(&mutex);
        let waiter = {
            let mutex = Arc::clone(&mutex);
            std::thread::spawn(move || {
                *lock(&mutex) += 1;
            })
        };
        // Held well past the spin: the waiter sleeps on the lock, then gets it.
        std::thread::sleep(Duration::from_millis(5));
        drop(held);
        waiter.join().unwrap();
        assert_eq!(*lock(&mutex), 1);
        let poisoner = {
            let mutex = Arc::clone(&mutex);
            std::thread::spawn(move || {
                let _guard = mutex.lock().unwrap();
                panic!("poison the lock");
            })
        };
        assert!(poisoner.join().is_err());
        assert!(mutex.is_poisoned());
        assert_eq!(*lock(&mutex), 1);
    }
}
