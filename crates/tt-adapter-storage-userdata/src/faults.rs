//! Fault injection into the store's own write path, for this crate's tests only: a plan makes
//! the n-th operation of one kind under a test's directory fail the way a sick disk fails it
//! (a write that stops half-way, an `fdatasync` that reports an error, a rename that never
//! happens). Outside `cfg(test)` the hook is an inlined `None`; `fault_tests` drives it.

use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
#[cfg(test)]
use std::sync::{Mutex, PoisonError};

/// The kinds of operation a plan can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// One line appended to a segment (journal, records, blobs).
    Append,
    /// One `fdatasync` of a segment by the flusher.
    Sync,
    /// One file replaced through a temp file (`run.json`, workspace files, …).
    Replace,
}

/// How the chosen operation fails (only test plans construct one).
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The write stops after half its bytes with an I/O error.
    TornWrite,
    /// As `TornWrite`, and putting the file back to its old length fails too.
    TornWriteNoRollback,
    /// The operation reports an I/O error having done nothing (a sync, a rename).
    Fails,
}

#[cfg(test)]
struct Plan {
    roots: Vec<PathBuf>,
    op: Op,
    fail_at: u64,
    seen: u64,
    fault: Fault,
}

/// The armed plans, one per test directory, so tests running at once in one process (as
/// `cargo test` runs them) each fail only their own files.
#[cfg(test)]
static PLANS: Mutex<Vec<Plan>> = Mutex::new(Vec::new());

#[cfg(test)]
/// Fails the `fail_at`-th (from 1) operation `op` on a file under `root` with `fault`.
pub(crate) fn arm(root: &Path, op: Op, fail_at: u64, fault: Fault) {
    let mut roots = vec![root.to_path_buf()];
    if let Ok(canonical) = root.canonicalize() {
        roots.push(canonical);
    }
    let mut plans = PLANS.lock().unwrap_or_else(PoisonError::into_inner);
    plans.retain(|plan| plan.roots[0] != root);
    plans.push(Plan {
        roots,
        op,
        fail_at,
        seen: 0,
        fault,
    });
}

#[cfg(test)]
/// Removes the plan armed for `root`; returns whether its fault was injected.
pub(crate) fn disarm(root: &Path) -> bool {
    let mut plans = PLANS.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(at) = plans.iter().position(|plan| plan.roots[0] == root) else {
        return false;
    };
    let plan = plans.swap_remove(at);
    plan.seen >= plan.fail_at
}

/// Called by the write path before each operation: the fault to inject now, if any.
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn hit(_path: &Path, _op: Op) -> Option<Fault> {
    None
}

/// Called by the write path before each operation: the fault to inject now, if any.
#[cfg(test)]
pub(crate) fn hit(path: &Path, op: Op) -> Option<Fault> {
    let mut plans = PLANS.lock().unwrap_or_else(PoisonError::into_inner);
    let plan = plans
        .iter_mut()
        .find(|plan| plan.op == op && plan.roots.iter().any(|root| path.starts_with(root)))?;
    plan.seen += 1;
    (plan.seen == plan.fail_at).then_some(plan.fault)
}

/// The error an injected fault reports.
pub(crate) fn injected_error() -> std::io::Error {
    std::io::Error::other("injected fault: the disk reported an I/O error")
}
