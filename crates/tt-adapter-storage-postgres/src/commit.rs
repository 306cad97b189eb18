//! Group commit of journal appends, run documents and workspace writes, the writes a model
//! turn makes most, of checkpoints, and of the invocation and task records written together
//! with the events that name them.
//! Every such write of the store (any run) goes to one queue; one task takes everything
//! queued, writes it in one statement (one transaction, one WAL flush) on its own connection,
//! and answers each caller once that statement committed, so a write is still durable when it
//! returns. While a batch commits the next one gathers. Several writes made at once
//! (`RunJournal::append_all`, `RunJournal::commit`) are one unit of the queue: they go into one
//! batch and commit together, one round trip for all of them. Seqs follow the
//! queue's order within a run, and the statement refuses the runs whose lease this store no
//! longer holds (it locks the lease row, so a takeover waits for the batch, or the batch for it).
//! A new task whose id is taken fails the whole statement (a unique violation); the batch is
//! then written again one unit at a time, so only that unit fails (`AlreadyExists`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{Client, Statement};
use tt_ports::{CommitChain, StorageError, StorageResult};

use crate::error::{CONNECTION_LOST, is_connection_error, is_connection_lost};
use crate::lease::Ownership;
use crate::pool::connect;
use crate::retry::Backoff;

mod batch;

use batch::{BatchParams, CHECKPOINT_ANSWER, FILE_ANSWER, Key, RUN_ANSWER, UnitKeys, WRITE_BATCH};
pub(crate) use batch::{FileWrite, NewTaskRow, Write};

/// At most this many appends go into one statement (a fan-out's burst fits; arrays stay small).
const MAX_BATCH: usize = 1024;

/// What a batch that committed answered, read back by its token when the connection was lost
/// before the answer arrived.
const LANDED: &str = "SELECT answers FROM tt_commit_batches WHERE token = $1";

/// What the statement answered for one write: an event's seq or a checkpoint's number (0 for
/// the others), and a checkpoint's fingerprints.
pub(crate) struct Answer {
    pub number: u64,
    pub detail: Option<String>,
}

/// One caller's writes (of one run) waiting for their batch: they always go into the same
/// batch, so they commit together or not at all. A unit of a chain (`commit_chained`) is
/// written only while its chain is not broken, and breaks it when it fails.
struct Pending {
    run_id: String,
    writes: Vec<Write>,
    reply: oneshot::Sender<StorageResult<Vec<Answer>>>,
    chain: Option<CommitChain>,
}

/// A queued unit's answers, once its batch committed or failed.
pub(crate) type QueuedAnswers = oneshot::Receiver<StorageResult<Vec<Answer>>>;

/// The queue of a store's journal appends; the committing task ends when the store is dropped.
pub(crate) struct JournalCommitter {
    queue: mpsc::UnboundedSender<Pending>,
}

impl JournalCommitter {
    /// Starts the committing task on the current tokio runtime; it connects on first use.
    pub(crate) fn spawn(url: &str, ownership: &Arc<Ownership>) -> Self {
        let (queue, receiver) = mpsc::unbounded_channel();
        tokio::spawn(commit_loop(
            url.to_owned(),
            Arc::downgrade(ownership),
            receiver,
        ));
        Self { queue }
    }

    /// Appends `body` (an event's JSON) to `run_id`'s journal; returns its seq once the batch
    /// holding it committed.
    pub(crate) async fn append(
        &self,
        run_id: &str,
        body: String,
        status: Option<String>,
    ) -> StorageResult<u64> {
        let seqs = self
            .submit(run_id, vec![Write::Event { body, status }])
            .await?;
        seqs.first()
            .copied()
            .ok_or_else(|| io_error(&format!("runs/{run_id}/events"), "no seq"))
    }

    /// Appends `bodies` to `run_id`'s journal in order, in one batch: all of them commit
    /// together or none does. Returns their seqs once the batch committed.
    pub(crate) async fn append_all(
        &self,
        run_id: &str,
        bodies: Vec<(String, Option<String>)>,
    ) -> StorageResult<Vec<u64>> {
        let writes = bodies
            .into_iter()
            .map(|(body, status)| Write::Event { body, status })
            .collect();
        self.submit(run_id, writes).await
    }

    /// Writes the run document at `path` (its relative path); returns once the batch holding
    /// it committed.
    pub(crate) async fn put_document(
        &self,
        run_id: &str,
        path: String,
        body: String,
    ) -> StorageResult<()> {
        self.submit(run_id, vec![Write::Document { path, body }])
            .await
            .map(drop)
    }

    /// Writes `writes` of `run_id` in one batch, as one unit: all of them commit together or
    /// none does. Answers one number per write, in order: an event's seq, 0 for the others.
    pub(crate) async fn submit(&self, run_id: &str, writes: Vec<Write>) -> StorageResult<Vec<u64>> {
        let answers = self.submit_answers(run_id, writes).await?;
        Ok(answers.into_iter().map(|answer| answer.number).collect())
    }

    /// [`submit`](Self::submit), answering the whole [`Answer`] of each write.
    pub(crate) async fn submit_answers(
        &self,
        run_id: &str,
        writes: Vec<Write>,
    ) -> StorageResult<Vec<Answer>> {
        let answer = self.queue_unit(run_id, writes, None)?;
        answer.await.map_err(|_| stopped())?
    }

    /// Queues `writes` of `run_id` as one unit behind everything queued before, as a unit of
    /// `chain` when given, and returns at once with the receiver of its answers.
    pub(crate) fn queue_unit(
        &self,
        run_id: &str,
        writes: Vec<Write>,
        chain: Option<CommitChain>,
    ) -> StorageResult<QueuedAnswers> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending {
                run_id: run_id.to_owned(),
                writes,
                reply,
                chain,
            })
            .map_err(|_| stopped())?;
        Ok(answer)
    }
}

/// The error of a unit whose committer is gone.
pub(crate) fn stopped() -> StorageError {
    StorageError::Other("the group committer has stopped".to_owned())
}

/// Answers the units of a broken chain (`CommitChain`) in `batch` with a refusal, unwritten,
/// and keeps the others.
fn refuse_broken(batch: &mut Vec<Pending>) {
    let (refused, kept): (Vec<Pending>, Vec<Pending>) = std::mem::take(batch)
        .into_iter()
        .partition(|pending| pending.chain.as_ref().is_some_and(CommitChain::is_broken));
    *batch = kept;
    for pending in refused {
        let _ = pending
            .reply
            .send(Err(CommitChain::refused(&pending.run_id)));
    }
}

/// The tokens of one committer's batches: each batch's own, and those whose answers arrived,
/// to delete with the next batch.
struct Tokens {
    owner_id: String,
    next: u64,
    acknowledged: Vec<String>,
}

impl Tokens {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("{}#{}", self.owner_id, self.next)
    }
}

async fn commit_loop(
    url: String,
    ownership: std::sync::Weak<Ownership>,
    mut receiver: mpsc::UnboundedReceiver<Pending>,
) {
    let mut client: Option<(Client, Statement)> = None;
    let mut batch: Vec<Pending> = Vec::new();
    let mut tokens = match ownership.upgrade() {
        Some(ownership) => Tokens {
            owner_id: ownership.owner_id.clone(),
            next: 0,
            acknowledged: Vec::new(),
        },
        None => return,
    };
    while let Some(first) = receiver.recv().await {
        batch.push(first);
        let mut writes: usize = batch.iter().map(|p| p.writes.len()).sum();
        while writes < MAX_BATCH {
            match receiver.try_recv() {
                Ok(next) => {
                    writes += next.writes.len();
                    batch.push(next);
                }
                Err(_) => break,
            }
        }
        let Some(ownership) = ownership.upgrade() else {
            return;
        };
        refuse_broken(&mut batch);
        if batch.is_empty() {
            continue;
        }
        let answers =
            match commit_retrying(&mut client, &url, &ownership, &batch, &mut tokens).await {
                Ok(answers) => answers,
                // A taken task id failed the statement, which left nothing: each unit again on
                // its own, so only the one with that task fails.
                Err(_) if batch.len() > 1 => {
                    let mut answers = Vec::with_capacity(batch.len());
                    for pending in &batch {
                        if pending.chain.as_ref().is_some_and(CommitChain::is_broken) {
                            answers.push(Err(CommitChain::refused(&pending.run_id)));
                            continue;
                        }
                        let alone = commit_retrying(
                            &mut client,
                            &url,
                            &ownership,
                            std::slice::from_ref(pending),
                            &mut tokens,
                        )
                        .await;
                        let answer = alone.unwrap_or_else(|taken| vec![Err(taken)]).remove(0);
                        if answer.is_err()
                            && let Some(chain) = &pending.chain
                        {
                            chain.mark_broken();
                        }
                        answers.push(answer);
                    }
                    answers
                }
                Err(taken) => vec![Err(taken)],
            };
        for (pending, answer) in batch.drain(..).zip(answers) {
            // A chain whose unit failed is broken before any later unit of it is gathered.
            if answer.is_err()
                && let Some(chain) = &pending.chain
            {
                chain.mark_broken();
            }
            // A caller that stopped waiting still had its event committed.
            let _ = pending.reply.send(answer);
        }
    }
}

/// A driver error with the server's message, when the server sent one.
fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{err}: {}", db.message()),
        None => err.to_string(),
    }
}

fn io_error(what: &str, message: &str) -> StorageError {
    StorageError::Io {
        what: what.to_owned(),
        message: message.to_owned(),
    }
}

/// Why a batch wrote nothing.
enum BatchError {
    /// A task id is taken: the statement rolled back, the units are tried one at a time.
    TaskTaken(StorageError),
    /// The connection was lost or could not be made: the batch may have committed.
    Lost(String),
}

/// Commits one batch under one token, trying again on a new connection while the connection
/// is lost (`retry.rs`); `Err` only for a taken task id.
async fn commit_retrying(
    client: &mut Option<(Client, Statement)>,
    url: &str,
    ownership: &Ownership,
    batch: &[Pending],
    tokens: &mut Tokens,
) -> Result<Vec<StorageResult<Vec<Answer>>>, StorageError> {
    let token = tokens.fresh();
    let mut backoff = Backoff::new();
    let mut maybe_landed = false;
    loop {
        match commit_batch(client, url, ownership, batch, &token, tokens, maybe_landed).await {
            Ok(answers) => {
                tokens.acknowledged.push(token);
                return Ok(answers);
            }
            Err(BatchError::TaskTaken(taken)) => return Err(taken),
            Err(BatchError::Lost(message)) => {
                *client = None;
                maybe_landed = true;
                if !backoff.wait().await {
                    let message = format!("{CONNECTION_LOST}: {message}");
                    return Ok(batch
                        .iter()
                        .map(|p| Err(io_error(&format!("runs/{}/events", p.run_id), &message)))
                        .collect());
                }
            }
        }
    }
}

/// The answers a committed batch recorded under its token: `(kind, ord) -> (number, detail)`.
type Written = HashMap<(i32, i64), (i64, Option<String>)>;

fn recorded_answers(text: &str) -> Result<Written, serde_json::Error> {
    let rows: Vec<(i32, i64, i64, Option<String>)> = serde_json::from_str(text)?;
    Ok(rows
        .into_iter()
        .map(|(kind, ord, number, detail)| ((kind, ord), (number, detail)))
        .collect())
}

/// Commits one batch; one answer per pending caller, in order. `maybe_landed`: an earlier try
/// of this batch (same `token`) lost its connection, so it is first looked up by its token and
/// written only if it did not commit.
#[allow(clippy::too_many_arguments)]
async fn commit_batch(
    client: &mut Option<(Client, Statement)>,
    url: &str,
    ownership: &Ownership,
    batch: &[Pending],
    token: &str,
    tokens: &mut Tokens,
    maybe_landed: bool,
) -> Result<Vec<StorageResult<Vec<Answer>>>, BatchError> {
    let failed = |message: &str| -> Result<Vec<StorageResult<Vec<Answer>>>, BatchError> {
        Ok(batch
            .iter()
            .map(|p| Err(io_error(&format!("runs/{}/events", p.run_id), message)))
            .collect())
    };
    if client.as_ref().is_none_or(|(conn, _)| conn.is_closed()) {
        let fresh = match connect(url).await {
            Ok(fresh) => fresh,
            Err(err) => {
                let err = StorageError::from(err);
                return if is_connection_lost(&err) {
                    Err(BatchError::Lost(err.to_string()))
                } else {
                    failed(&err.to_string())
                };
            }
        };
        // Parsed and planned once per connection.
        match fresh.prepare(WRITE_BATCH).await {
            Ok(statement) => *client = Some((fresh, statement)),
            Err(err) if is_connection_error(&err) => return Err(BatchError::Lost(err.to_string())),
            Err(err) => return failed(&describe(&err)),
        }
    }
    let Some((conn, statement)) = client.as_ref() else {
        return failed("no connection");
    };
    let params = BatchParams::of(
        batch
            .iter()
            .map(|pending| (pending.run_id.as_str(), pending.writes.as_slice())),
    );
    if maybe_landed {
        match conn.query_opt(LANDED, &[&token]).await {
            Ok(Some(row)) => {
                return match recorded_answers(row.get(0)) {
                    Ok(written) => Ok(settle(conn, ownership, batch, &params.keys, written).await),
                    Err(err) => failed(&format!("the answers of batch {token}: {err}")),
                };
            }
            Ok(None) => {}
            Err(err) if is_connection_error(&err) => return Err(BatchError::Lost(err.to_string())),
            Err(err) => return failed(&describe(&err)),
        }
    }
    let rows = match params
        .send(
            conn,
            statement,
            &ownership.owner_id,
            token,
            &tokens.acknowledged,
        )
        .await
    {
        Ok(rows) => rows,
        Err(err) if is_connection_error(&err) => return Err(BatchError::Lost(err.to_string())),
        Err(err) if err.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
            return Err(BatchError::TaskTaken(StorageError::AlreadyExists {
                what: match batch {
                    [only] => only
                        .writes
                        .iter()
                        .find_map(|write| match write {
                            Write::Task(task) => Some(format!("task {}", task.task_id)),
                            _ => None,
                        })
                        .unwrap_or_else(|| format!("a record of run {}", only.run_id)),
                    _ => "a task".to_owned(),
                },
            }));
        }
        Err(err) => return failed(&err.to_string()),
    };
    tokens.acknowledged.clear();
    let mut written: Written = HashMap::with_capacity(rows.len());
    for row in &rows {
        written.insert((row.get(0), row.get(1)), (row.get(2), row.get(3)));
    }
    Ok(settle(conn, ownership, batch, &params.keys, written).await)
}

/// Each caller's answer from what the batch wrote: its numbers, or why its run was left out.
async fn settle(
    conn: &Client,
    ownership: &Ownership,
    batch: &[Pending],
    keys: &[UnitKeys],
    mut written: Written,
) -> Vec<StorageResult<Vec<Answer>>> {
    // A unit is written when its run was held (and, if it has events, has a head to number
    // them from); its records and checkpoints go with its run.
    let base_of = |unit: &UnitKeys| {
        written
            .get(&(RUN_ANSWER, unit.run))
            .map(|(base, _)| *base)
            .filter(|base| *base >= 0 || !unit.has_events)
    };
    let bases: Vec<Option<i64>> = keys.iter().map(base_of).collect();
    // The runs left out: not there, or not this store's any more.
    let mut refused: BTreeMap<&str, StorageError> = BTreeMap::new();
    for (pending, base) in batch.iter().zip(&bases) {
        if base.is_none() && !refused.contains_key(pending.run_id.as_str()) {
            let why = why_refused(conn, ownership, &pending.run_id).await;
            refused.insert(pending.run_id.as_str(), why);
        }
    }
    batch
        .iter()
        .zip(keys)
        .zip(bases)
        .map(|((pending, unit), base)| {
            let Some(base) = base else {
                return Err(match refused.get(pending.run_id.as_str()) {
                    Some(StorageError::NotFound { what }) => StorageError::not_found(what.clone()),
                    Some(StorageError::Locked { what, owner_pid }) => StorageError::Locked {
                        what: what.clone(),
                        owner_pid: *owner_pid,
                    },
                    Some(other) => io_error(&format!("run {}", pending.run_id), &other.to_string()),
                    None => io_error(&format!("run {}", pending.run_id), "not written"),
                });
            };
            unit.writes
                .iter()
                .map(|key| match *key {
                    Key::Event(place) => Ok(Answer {
                        number: u64::try_from(base + place).unwrap_or(0),
                        detail: None,
                    }),
                    Key::Record => Ok(Answer {
                        number: 0,
                        detail: None,
                    }),
                    Key::File(ord) => written
                        .remove(&(FILE_ANSWER, ord))
                        .map(|(_, detail)| Answer { number: 0, detail })
                        .ok_or_else(|| {
                            io_error(&format!("run {}", pending.run_id), "file not written")
                        }),
                    Key::Checkpoint(ord) => written
                        .remove(&(CHECKPOINT_ANSWER, ord))
                        .map(|(number, detail)| Answer {
                            number: u64::try_from(number).unwrap_or(0),
                            detail,
                        })
                        .ok_or_else(|| {
                            io_error(&format!("run {}", pending.run_id), "checkpoint not written")
                        }),
                })
                .collect()
        })
        .collect()
}

/// Why a batch left `run_id` out: the run is gone (`NotFound`) or another store holds it
/// (`Locked`, and this store forgets it).
async fn why_refused(conn: &Client, ownership: &Ownership, run_id: &str) -> StorageError {
    let what = format!("run {run_id}");
    match conn
        .query_opt("SELECT 1 FROM runs WHERE run_id = $1", &[&run_id])
        .await
    {
        Ok(Some(_)) => {
            ownership.forget(run_id);
            StorageError::Locked {
                what,
                owner_pid: None,
            }
        }
        Ok(None) => StorageError::not_found(what),
        Err(err) => io_error(&what, &err.to_string()),
    }
}

#[cfg(test)]
mod tests;
