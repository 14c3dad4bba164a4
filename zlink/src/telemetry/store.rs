//! The Location Store as one node uses it: every call by operation, how it ended, and how
//! long it took.

use std::sync::OnceLock;
use std::time::Instant;

use metrics::{Counter, Histogram};

use super::{names, recording, NodeLabels};

/// One kind of Location Store call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreOp {
    ClaimLease,
    RenewLease,
    ReleaseLease,
    ReadLease,
    PublishDescriptor,
    WithdrawDescriptor,
    ReadDescriptor,
    ScanDescriptors,
    ScanRecordKeys,
    Read,
    Apply,
    NextGeneration,
}

const OPS: usize = 12;

impl StoreOp {
    /// Its `op` label.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            StoreOp::ClaimLease => "claim_lease",
            StoreOp::RenewLease => "renew_lease",
            StoreOp::ReleaseLease => "release_lease",
            StoreOp::ReadLease => "read_lease",
            StoreOp::PublishDescriptor => "publish_descriptor",
            StoreOp::WithdrawDescriptor => "withdraw_descriptor",
            StoreOp::ReadDescriptor => "read_descriptor",
            StoreOp::ScanDescriptors => "scan_descriptors",
            StoreOp::ScanRecordKeys => "scan_record_keys",
            StoreOp::Read => "read",
            StoreOp::Apply => "apply",
            StoreOp::NextGeneration => "next_generation",
        }
    }
}

/// The owner lease keeper's lateness histogram of node `rid` of `mesh`: `None` when no
/// recorder is installed (then the keeper reads no extra clock).
pub(crate) fn lease_lateness(mesh: &str, rid: &str) -> Option<Histogram> {
    recording().then(|| {
        metrics::histogram!(
            names::LEASE_RENEWAL_LATENESS,
            NodeLabels::new(mesh, rid).with(&[])
        )
    })
}

/// One operation's instruments.
struct OpInstruments {
    ok: Counter,
    failed: Counter,
    duration: Histogram,
}

/// The Location Store instruments of one node: nothing is registered, and no clock read,
/// when no recorder was installed as the node was built.
pub(crate) struct StoreMeter {
    labels: Option<NodeLabels>,
    /// The node, as the store calls' spans name it (recorded or not).
    node: NodeLabels,
    ops: [OnceLock<OpInstruments>; OPS],
}

impl StoreMeter {
    /// The mesh and RID of the node whose calls these are as its
    /// spans name it.
    pub(crate) fn node(&self) -> (&str, &str) {
        (self.node.mesh.as_ref(), self.node.rid.as_ref())
    }

    /// The meter of node `rid` of `mesh`.
    pub(crate) fn new(mesh: &str, rid: &str) -> Self {
        StoreMeter {
            labels: recording().then(|| NodeLabels::new(mesh, rid)),
            node: NodeLabels::new(mesh, rid),
            ops: Default::default(),
        }
    }

    /// A meter that records nothing.
    #[cfg(test)]
    pub(crate) fn unregistered() -> Self {
        StoreMeter {
            labels: None,
            node: NodeLabels::new("", ""),
            ops: Default::default(),
        }
    }

    /// A call begins: when it began, if anything is recorded.
    pub(crate) fn start(&self) -> Option<Instant> {
        self.labels.as_ref().map(|_| Instant::now())
    }

    /// A call of `op` begun at `started` (from [`start`](Self::start)) ended, well or not.
    pub(crate) fn ended(&self, op: StoreOp, started: Option<Instant>, ok: bool) {
        let (Some(labels), Some(started)) = (&self.labels, started) else {
            return;
        };
        let instruments = self.ops[op as usize].get_or_init(|| {
            let with = |outcome| labels.with(&[("op", op.as_str()), ("outcome", outcome)]);
            OpInstruments {
                ok: metrics::counter!(names::STORE_OPERATIONS, with("ok")),
                failed: metrics::counter!(names::STORE_OPERATIONS, with("failed")),
                duration: metrics::histogram!(
                    names::STORE_OPERATION_DURATION,
                    labels.with(&[("op", op.as_str())])
                ),
            }
        });
        if ok {
            instruments.ok.increment(1);
        } else {
            instruments.failed.increment(1);
        }
        instruments.duration.record(started.elapsed().as_secs_f64());
    }
}
