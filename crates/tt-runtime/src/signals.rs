//! SIGINT and SIGTERM for command-line hosts (`tt-agent`, `tt-bench`): once installed, neither
//! kills the process; the first one asks the host to cancel its run, a second one exits at once
//! (status 128 + signal number) — but never in the middle of a `start_run`, so a run directory
//! is never left without its `run.json`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Signal handling of a command-line host. Dropping it keeps the handlers installed.
#[derive(Debug, Clone)]
pub struct StopSignals {
    requested: CancellationToken,
    critical: Arc<Critical>,
}

#[derive(Debug, Default)]
struct Critical {
    holders: AtomicUsize,
    released: Notify,
}

impl StopSignals {
    /// Installs the handlers now (call it first thing in an async `main`). Needs a tokio
    /// runtime with I/O enabled.
    pub fn install() -> std::io::Result<Self> {
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let requested = CancellationToken::new();
        let critical = Arc::new(Critical::default());
        let stop = Self {
            requested: requested.clone(),
            critical: Arc::clone(&critical),
        };
        tokio::spawn(async move {
            let mut seen = 0;
            loop {
                let number = tokio::select! {
                    Some(()) = interrupt.recv() => 2,
                    Some(()) = terminate.recv() => 15,
                    else => return,
                };
                seen += 1;
                if seen == 1 {
                    requested.cancel();
                    continue;
                }
                // A second signal: leave now, after any start_run in flight has written its run.
                while critical.holders.load(Ordering::SeqCst) > 0 {
                    let released = critical.released.notified();
                    if critical.holders.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                    released.await;
                }
                std::process::exit(128 + number);
            }
        });
        Ok(stop)
    }

    /// Fires on the first signal.
    pub fn requested(&self) -> CancellationToken {
        self.requested.clone()
    }

    pub fn is_requested(&self) -> bool {
        self.requested.is_cancelled()
    }

    /// Runs `work` (for example `start_run`) to its end even if a second signal comes: the
    /// exit waits for it.
    pub async fn shielded<T>(&self, work: impl Future<Output = T>) -> T {
        self.critical.holders.fetch_add(1, Ordering::SeqCst);
        let _release = Release(&self.critical);
        work.await
    }
}

/// Leaves the critical section however `shielded` ends (finished or dropped).
struct Release<'a>(&'a Critical);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.holders.fetch_sub(1, Ordering::SeqCst);
        self.0.released.notify_waiters();
    }
}
