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
mod tests {
    use super::*;
    use crate::PostgresStore;
    use crate::cluster::TestCluster;
    use tt_ports::{AgentRunRepository, RunJournal};
    use tt_testkit::contract::{manifest_for, sample_run};

    fn event(run_id: &str) -> Pending {
        let (reply, _) = oneshot::channel();
        Pending {
            run_id: run_id.to_owned(),
            writes: vec![Write::Event {
                body: "{}".to_owned(),
                status: None,
            }],
            reply,
            chain: None,
        }
    }

    fn tokens_of(store: &PostgresStore) -> Tokens {
        Tokens {
            owner_id: store.ownership.owner_id.clone(),
            next: 0,
            acknowledged: Vec::new(),
        }
    }

    fn seqs(answers: &[StorageResult<Vec<Answer>>]) -> Vec<u64> {
        answers
            .iter()
            .flat_map(|answer| answer.as_ref().unwrap().iter().map(|a| a.number))
            .collect()
    }

    fn unit(run_id: &str, writes: Vec<Write>) -> Pending {
        let (reply, _) = oneshot::channel();
        Pending {
            run_id: run_id.to_owned(),
            writes,
            reply,
            chain: None,
        }
    }

    fn numbered(body: &str, status: Option<&str>) -> Write {
        Write::Event {
            body: body.to_owned(),
            status: status.map(str::to_owned),
        }
    }

    fn document(body: &str) -> Write {
        Write::Document {
            path: "output/note.md".to_owned(),
            body: body.to_owned(),
        }
    }

    /// One batch of several runs' units: each run's events numbered in queue order from its
    /// head, a unit's events in one row, the last write of a document kept, the last stated
    /// status stored, and a run this store does not hold left out alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_numbers_each_run_in_queue_order() {
        let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
        let url = cluster.create_database("tt_unit_batch").await.unwrap();
        let store = PostgresStore::open(&url).await.unwrap();
        let (a, b) = (sample_run(1), sample_run(2));
        for run in [&a, &b] {
            store.create_run(run, &manifest_for(run)).await.unwrap();
        }
        let (a_id, b_id) = (a.id.as_str(), b.id.as_str());
        let batch = [
            unit(
                a_id,
                vec![
                    numbered("{\"n\":1}", None),
                    numbered("{\"n\":2}", Some("running")),
                ],
            ),
            unit(b_id, vec![document("first"), numbered("{\"n\":1}", None)]),
            unit(a_id, vec![numbered("{\"n\":3}", None)]),
            unit(b_id, vec![document("second")]),
            unit("run_nobody_holds", vec![numbered("{}", None)]),
        ];
        let mut tokens = tokens_of(&store);
        let mut client = None;
        let committed = commit_batch(
            &mut client,
            &url,
            &store.ownership,
            &batch,
            "t1",
            &mut tokens,
            false,
        );
        let Ok(answers) = committed.await else {
            panic!("the batch committed");
        };
        let numbers: Vec<Option<Vec<u64>>> = answers
            .iter()
            .map(|answer| {
                answer
                    .as_ref()
                    .ok()
                    .map(|a| a.iter().map(|a| a.number).collect())
            })
            .collect();
        assert_eq!(
            numbers,
            [
                Some(vec![1, 2]),
                Some(vec![0, 1]),
                Some(vec![3]),
                Some(vec![0]),
                None
            ]
        );
        assert!(matches!(answers[4], Err(StorageError::NotFound { .. })));
        let (conn, _) = client.expect("the committer's connection");
        let rows = conn
            .query(
                "SELECT seq, span, body FROM events WHERE run_id = $1 ORDER BY seq",
                &[&a_id],
            )
            .await
            .unwrap();
        let rows: Vec<(i64, i32, String)> = rows
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
        assert_eq!(
            rows,
            [
                (2, 2, "[{\"n\":1},{\"n\":2}]".to_owned()),
                (3, 1, "{\"n\":3}".to_owned())
            ]
        );
        let status: Option<String> = conn
            .query_one(
                "SELECT journal_status FROM runs WHERE run_id = $1",
                &[&a_id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(status.as_deref(), Some("running"));
        let kept: String = conn
            .query_one(
                "SELECT body FROM run_documents WHERE run_id = $1 AND path = 'output/note.md'",
                &[&b_id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(kept, "second");
        assert_eq!(store.last_seq(&b.id).await.unwrap(), 1);
    }

    fn file(path: &str, above: &[&str], content: &str, append: bool, guard: &'static str) -> Write {
        Write::File(FileWrite {
            path: path.to_owned(),
            above: serde_json::to_string(above).unwrap(),
            content: content.to_owned(),
            sha256: tt_domain::text::sha256_hex(content.as_bytes()),
            append,
            guard,
            expected: None,
        })
    }

    /// The outcome column and detail of each write's answer.
    fn outcomes(answers: &[StorageResult<Vec<Answer>>]) -> Vec<(String, Option<String>)> {
        answers
            .iter()
            .map(|answer| {
                let detail = answer.as_ref().unwrap()[0].detail.as_deref().unwrap();
                let row: (
                    String,
                    Option<String>,
                    Option<String>,
                    Option<String>,
                    Option<i64>,
                ) = serde_json::from_str(detail).unwrap();
                (row.0, row.1)
            })
            .collect()
    }

    /// Workspace writes in one batch, one after another in queue order: a path written twice
    /// sees its first write (the append joins it), and each write's checks and outcome are
    /// `tt_put_file`'s.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_writes_files_as_if_one_after_another() {
        let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
        let url = cluster.create_database("tt_unit_files").await.unwrap();
        let store = PostgresStore::open(&url).await.unwrap();
        let run = sample_run(1);
        store.create_run(&run, &manifest_for(&run)).await.unwrap();
        let id = run.id.as_str();
        let mut tokens = tokens_of(&store);
        let mut client = None;
        let before = [
            unit(id, vec![file("scratch/a.md", &[], "A", false, "none")]),
            unit(
                id,
                vec![file(
                    "scratch/dir/b.md",
                    &["scratch/dir"],
                    "B",
                    false,
                    "none",
                )],
            ),
        ];
        let committed = commit_batch(
            &mut client,
            &url,
            &store.ownership,
            &before,
            "t1",
            &mut tokens,
            false,
        );
        let Ok(answers) = committed.await else {
            panic!("the first batch committed");
        };
        assert_eq!(
            outcomes(&answers),
            [("written".to_owned(), None), ("written".to_owned(), None)]
        );
        let batch = [
            unit(id, vec![file("scratch/n.md", &[], "one", false, "none")]),
            unit(id, vec![file("scratch/n.md", &[], "+two", true, "none")]),
            unit(
                id,
                vec![file(
                    "scratch/a.md/c.md",
                    &["scratch/a.md"],
                    "C",
                    false,
                    "none",
                )],
            ),
            unit(id, vec![file("scratch/dir", &[], "D", false, "none")]),
            unit(
                id,
                vec![file("scratch/a.md", &[], "A2", false, "must_not_exist")],
            ),
            unit(id, vec![file("scratch/a.md", &[], "+more", true, "none")]),
        ];
        let committed = commit_batch(
            &mut client,
            &url,
            &store.ownership,
            &batch,
            "t2",
            &mut tokens,
            false,
        );
        let Ok(answers) = committed.await else {
            panic!("the second batch committed");
        };
        let written = |detail: Option<&str>| ("written".to_owned(), detail.map(str::to_owned));
        assert_eq!(
            outcomes(&answers),
            [
                written(None),
                written(None),
                (
                    "not_a_directory".to_owned(),
                    Some("scratch/a.md".to_owned())
                ),
                ("is_directory".to_owned(), None),
                ("refused".to_owned(), None),
                written(None),
            ]
        );
        let (conn, _) = client.expect("the committer's connection");
        let content = |path: &'static str| {
            let conn = &conn;
            async move {
                let row = conn
                    .query_one(
                        "SELECT content, sha256 FROM tt_files WHERE run_id = $1 AND path = $2",
                        &[&id, &path],
                    )
                    .await
                    .unwrap();
                let (content, sha): (String, String) = (row.get(0), row.get(1));
                assert_eq!(sha, tt_domain::text::sha256_hex(content.as_bytes()));
                content
            }
        };
        assert_eq!(content("scratch/n.md").await, "one+two");
        assert_eq!(content("scratch/a.md").await, "A+more");
    }

    /// A batch tried again under its token after its connection was lost is read back when
    /// its first try had committed, and written when it had not: never twice.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_tried_again_is_written_once() {
        let cluster = tokio::task::block_in_place(|| TestCluster::start(false)).unwrap();
        let url = cluster.create_database("tt_unit_tokens").await.unwrap();
        let store = PostgresStore::open(&url).await.unwrap();
        let run = sample_run(1);
        store.create_run(&run, &manifest_for(&run)).await.unwrap();
        let batch = [event(run.id.as_str())];
        let mut tokens = tokens_of(&store);
        let (ownership, mut client) = (&store.ownership, None);
        let first = commit_batch(
            &mut client,
            &url,
            ownership,
            &batch,
            "t1",
            &mut tokens,
            false,
        );
        let Ok(first) = first.await else {
            panic!("the first try committed");
        };
        assert_eq!(seqs(&first), [1]);
        // As if its answer had been lost: the same token again, on a new connection.
        let mut fresh = None;
        let again = commit_batch(&mut fresh, &url, ownership, &batch, "t1", &mut tokens, true);
        let Ok(again) = again.await else {
            panic!("read back");
        };
        assert_eq!(seqs(&again), [1]);
        assert_eq!(store.last_seq(&run.id).await.unwrap(), 1);
        // A try that had not committed is written on its retry.
        let mut fresh = None;
        let lost = commit_batch(&mut fresh, &url, ownership, &batch, "t2", &mut tokens, true);
        let Ok(lost) = lost.await else {
            panic!("written");
        };
        assert_eq!(seqs(&lost), [2]);
        assert_eq!(store.last_seq(&run.id).await.unwrap(), 2);
    }
}
