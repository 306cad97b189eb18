//! The run's record keys and checkpoints: how a call's audit records are named and how a
//! checkpoint is taken and journaled. Its own module so the loop, the dispatcher, the
//! approval gate, the commit and resume all name records one way without importing the
//! dispatcher.

use tt_domain::event::EventLevel;
use tt_domain::event_payload as payload;
use tt_domain::ids::InvocationId;
use tt_domain::text::sha256_hex_prefix;
use tt_domain::workspace::CheckpointReason;

use crate::engine::context::RunContext;
use crate::error::ApplicationResult;

/// File key for a call's audit files: `call_` + hex of the first 8 bytes of sha256 over
/// `<invocationId>/<round>/<callId>`, so call ids reused by a provider never overwrite an
/// earlier call's files. The original call id is kept inside the files and events.
pub fn call_file_key(invocation_id: &InvocationId, round: u32, call_id: &str) -> String {
    let round = round.to_string();
    let digest = sha256_hex_prefix(
        &[
            invocation_id.as_str().as_bytes(),
            b"/",
            round.as_bytes(),
            b"/",
            call_id.as_bytes(),
        ],
        8,
    );
    let mut key = String::with_capacity(5 + digest.len());
    key.push_str("call_");
    key.push_str(&digest);
    key
}

/// Takes a checkpoint of `paths` and journals `checkpoint_created`.
pub(crate) async fn checkpoint(
    ctx: &RunContext,
    invocation_id: &InvocationId,
    reason: CheckpointReason,
    event_seq: u64,
    paths: &[tt_domain::workspace::WorkspacePath],
) -> ApplicationResult<()> {
    let record = ctx
        .services
        .workspace
        .create_checkpoint(
            &ctx.run_id,
            reason,
            event_seq,
            paths,
            ctx.services.clock.now(),
        )
        .await?;
    let created = payload::CheckpointCreated {
        invocation_id: invocation_id.clone(),
        checkpoint_id: record.id,
        reason,
        event_seq,
        files: record.files,
    };
    ctx.events
        .record(&ctx.run_id, EventLevel::Info, &created)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_file_keys_are_hashed_and_distinct_per_invocation_and_round() {
        let root = InvocationId::root();
        let key = call_file_key(&root, 1, "call_1");
        assert!(key.starts_with("call_"));
        assert_eq!(key.len(), 5 + 16);
        assert!(key[5..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(key, call_file_key(&root, 2, "call_1"));
        assert_ne!(
            key,
            call_file_key(&InvocationId::from_raw("inv_x"), 1, "call_1")
        );
        assert_eq!(key, call_file_key(&root, 1, "call_1"));
        // The key as it was first written: the start of the hex of the joined text.
        for (invocation, round, call) in [(&root, 1, "call_1"), (&root, 4_000_000_000, "c é")] {
            let joined = format!("{invocation}/{round}/{call}");
            let digest = tt_domain::text::sha256_hex(joined.as_bytes());
            assert_eq!(
                call_file_key(invocation, round, call),
                format!("call_{}", &digest[..16])
            );
        }
    }
}
