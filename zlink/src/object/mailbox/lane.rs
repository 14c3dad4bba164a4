//! A mailbox lane: its bounds, what it holds, and why a job is refused.

use std::collections::VecDeque;

/// The fixed cost of one job, in bytes, on top of its payload and metadata.
pub(crate) const JOB_OVERHEAD_BYTES: usize = 64;
/// Lifecycle turns in a row before a waiting application turn gets its go.
pub(crate) const LIFECYCLE_RUN_CAP: u32 = 16;

/// The bounds of one lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaneLimits {
    pub(crate) jobs: usize,
    pub(crate) bytes: usize,
}

/// The default application lane: 4096 jobs, 64 MiB.
pub(crate) const APPLICATION_LANE: LaneLimits = LaneLimits {
    jobs: 4096,
    bytes: 64 * 1024 * 1024,
};
/// The default lifecycle lane: 256 jobs, 4 MiB.
pub(crate) const LIFECYCLE_LANE: LaneLimits = LaneLimits {
    jobs: 256,
    bytes: 4 * 1024 * 1024,
};

/// Which lane a job goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    Lifecycle,
    Application,
}

/// Why a job was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The lane is at its count or byte bound.
    Full(Lane),
    /// The mailbox is sealed (a move or a close is under way).
    Sealed,
    /// The mailbox is closed.
    Closed,
}

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Usage {
    pub(super) jobs: usize,
    pub(super) bytes: usize,
}

pub(super) struct LaneState<J> {
    pub(super) limits: LaneLimits,
    pub(super) queued: VecDeque<(J, usize)>,
    /// Queued plus running-but-not-completed.
    pub(super) used: Usage,
}

impl<J> LaneState<J> {
    pub(super) fn new(limits: LaneLimits) -> Self {
        LaneState {
            limits,
            queued: VecDeque::new(),
            used: Usage::default(),
        }
    }

    pub(super) fn fits(&self, bytes: usize) -> bool {
        self.used.jobs < self.limits.jobs
            && self
                .used
                .bytes
                .checked_add(bytes)
                .is_some_and(|b| b <= self.limits.bytes)
    }
}

/// The order turns take from the two lanes: lifecycle first, but after
/// [`LIFECYCLE_RUN_CAP`] lifecycle turns in a row one waiting application turn goes.
#[derive(Debug, Default)]
pub(super) struct LaneOrder {
    lifecycle_run: u32,
    application_owed: bool,
}

impl LaneOrder {
    /// The lane the next turn takes from, given which lanes have a job waiting.
    pub(super) fn pick(&mut self, lifecycle: bool, application: bool) -> Option<Lane> {
        if !lifecycle {
            self.lifecycle_run = 0;
        }
        match (lifecycle, application) {
            (false, false) => None,
            (false, true) => {
                self.application_owed = false;
                Some(Lane::Application)
            }
            (true, true) if self.application_owed => {
                self.application_owed = false;
                Some(Lane::Application)
            }
            (true, _) => {
                self.lifecycle_run += 1;
                if self.lifecycle_run >= LIFECYCLE_RUN_CAP {
                    self.lifecycle_run = 0;
                    self.application_owed = true;
                }
                Some(Lane::Lifecycle)
            }
        }
    }
}
