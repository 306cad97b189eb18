//! Hearing other hosts' journal appends: every append notifies channel `tt_journal` with
//! `<runId> <seq>` (delivered when it commits), and one listening connection per store turns
//! those into a watch of the newest seq per run, which `RunJournal::wait_for_append` waits on.
//! Until the listener is up (or if it fails) waits fall back to their timeout, which still works.
//! The same connection listens on `tt_runs` (a run created, its record saved or a new status
//! journaled: migration 16) and hands both channels' run ids to the runs watches
//! (`run_watch.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream;
use tokio::sync::{broadcast, watch};
use tokio_postgres::{AsyncMessage, NoTls};

/// The channel every append notifies.
pub(crate) const CHANNEL: &str = "tt_journal";
/// The channel a run's creation, a saved record or a new journaled status notifies.
pub(crate) const RUNS_CHANNEL: &str = "tt_runs";

/// How many run changes a slow runs watch may fall behind before it is told it lagged.
const CHANGES_KEPT: usize = 1024;

/// A run some host changed: its id, and whether its record or status changed (`tt_runs`) or
/// only its journal grew (`tt_journal`).
pub(crate) type HeardChange = (String, bool);

/// The newest seq heard per run, for the runs someone waits on; and every run change heard,
/// for the runs watches.
pub(crate) struct Heard {
    runs: Mutex<HashMap<String, watch::Sender<u64>>>,
    changes: broadcast::Sender<HeardChange>,
}

impl Default for Heard {
    fn default() -> Self {
        Self {
            runs: Mutex::default(),
            changes: broadcast::channel(CHANGES_KEPT).0,
        }
    }
}

impl Heard {
    /// Every run change heard from now on.
    pub(crate) fn changes(&self) -> broadcast::Receiver<HeardChange> {
        self.changes.subscribe()
    }

    fn run_changed(&self, run_id: &str) {
        if self.changes.receiver_count() > 0 {
            let _ = self.changes.send((run_id.to_owned(), true));
        }
    }

    fn subscribe(&self, run_id: &str) -> watch::Receiver<u64> {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.retain(|_, sender| sender.receiver_count() > 0);
        runs.entry(run_id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    fn heard(&self, payload: &str) {
        let Some((run_id, seq)) = payload.rsplit_once(' ') else {
            return;
        };
        let Ok(seq) = seq.parse::<u64>() else {
            return;
        };
        if self.changes.receiver_count() > 0 {
            let _ = self.changes.send((run_id.to_owned(), false));
        }
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = runs.get(run_id) {
            sender.send_if_modified(|newest| {
                let newer = seq > *newest;
                if newer {
                    *newest = seq;
                }
                newer
            });
        }
    }

    /// Waits until an append above `after_seq` to `run_id` is heard, or `max_wait`.
    pub(crate) async fn wait(&self, run_id: &str, after_seq: u64, max_wait: Duration) {
        let mut receiver = self.subscribe(run_id);
        let _ = tokio::time::timeout(max_wait, receiver.wait_for(|seq| *seq > after_seq)).await;
    }
}

/// Opens the listening connection and forwards notifications; the connection lives as long as
/// the returned client, which the store keeps.
pub(crate) async fn spawn_listener(
    url: &str,
    heard: &Arc<Heard>,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, NoTls).await?;
    let weak: Weak<Heard> = Arc::downgrade(heard);
    let mut messages = stream::poll_fn(move |cx| connection.poll_message(cx));
    tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            let Some(heard) = weak.upgrade() else {
                return;
            };
            match message {
                Ok(AsyncMessage::Notification(note)) if note.channel() == RUNS_CHANNEL => {
                    heard.run_changed(note.payload());
                }
                Ok(AsyncMessage::Notification(note)) => heard.heard(note.payload()),
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {CHANNEL}; LISTEN {RUNS_CHANNEL}"))
        .await?;
    Ok(client)
}
