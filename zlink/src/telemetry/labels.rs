//! The closed label values zlink's instruments use.

use crate::{Error, ErrorKind};

/// What a call addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    /// A channel (select-one among its members).
    Channel,
    /// One node by RID.
    Node,
    /// A Spot by ID.
    Spot,
    /// A Spot by ID with Instance intent (activated by its first message).
    InstanceSpot,
    /// An Actor by ID.
    Actor,
}

impl Surface {
    /// Every surface, in label order.
    pub const ALL: [Surface; 5] = [
        Surface::Channel,
        Surface::Node,
        Surface::Spot,
        Surface::InstanceSpot,
        Surface::Actor,
    ];

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Surface::Channel => "channel",
            Surface::Node => "node",
            Surface::Spot => "spot",
            Surface::InstanceSpot => "instance_spot",
            Surface::Actor => "actor",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

/// Whether a call waits for a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// A one-way send.
    Send,
    /// A request with one reply.
    Request,
}

impl CallKind {
    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallKind::Send => "send",
            CallKind::Request => "request",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

/// How a call ended: `ok`, the [`ErrorKind`] it failed with (snake case), an argument or a
/// configuration the caller's node refused before sending, or `cancelled` (the caller
/// dropped it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// It failed with this kind.
    Failed(ErrorKind),
    /// An argument that can never be valid.
    InvalidArgument,
    /// A configuration problem.
    Config,
    /// The caller dropped the call before it ended.
    Cancelled,
}

/// How many distinct outcomes there are.
pub(crate) const OUTCOMES: usize = ErrorKind::ALL.len() + 4;

impl Outcome {
    /// The outcome of `result`.
    pub fn of<T>(result: &Result<T, Error>) -> Outcome {
        match result {
            Ok(_) => Outcome::Ok,
            Err(Error::Failed { kind, .. }) => Outcome::Failed(*kind),
            Err(Error::InvalidArgument(_)) => Outcome::InvalidArgument,
            Err(Error::Config(_)) => Outcome::Config,
        }
    }

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed(kind) => match kind {
                ErrorKind::NotFound => "not_found",
                ErrorKind::AlreadyExists => "already_exists",
                ErrorKind::TypeMismatch => "type_mismatch",
                ErrorKind::NotConfigured => "not_configured",
                ErrorKind::Rejected => "rejected",
                ErrorKind::Unavailable => "unavailable",
                ErrorKind::CapacityExceeded => "capacity_exceeded",
                ErrorKind::DeadlineExceeded => "deadline_exceeded",
                ErrorKind::ShuttingDown => "shutting_down",
                ErrorKind::ProtocolError => "protocol_error",
                ErrorKind::InvalidOperation => "invalid_operation",
                ErrorKind::DataLost => "data_lost",
                ErrorKind::InternalFailure => "internal_failure",
            },
            Outcome::InvalidArgument => "invalid_argument",
            Outcome::Config => "config",
            Outcome::Cancelled => "cancelled",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Outcome::Ok => 0,
            Outcome::Failed(kind) => 1 + usize::from(kind.code()),
            Outcome::InvalidArgument => OUTCOMES - 3,
            Outcome::Config => OUTCOMES - 2,
            Outcome::Cancelled => OUTCOMES - 1,
        }
    }
}
