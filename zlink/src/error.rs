//! Errors: the closed [`ErrorKind`] set shared with the wire, and the [`Error`] type every
//! public call returns.

use std::fmt;

/// The closed set of failure kinds. The numbers are part of the wire contract and match the
/// reference specification (`NotFound = 0` … `InternalFailure = 12`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ErrorKind {
    /// The target, handler, route or object does not exist.
    NotFound = 0,
    /// An identity or registration is already present.
    AlreadyExists = 1,
    /// A stored kind or type differs from what the request expects.
    TypeMismatch = 2,
    /// A required role, handler or store is not registered.
    NotConfigured = 3,
    /// Framework admission or policy refused the operation.
    Rejected = 4,
    /// The target, route or connection is not currently usable.
    Unavailable = 5,
    /// A locally owned bounded resource is full.
    CapacityExceeded = 6,
    /// The completion condition was not met by the deadline.
    DeadlineExceeded = 7,
    /// The runtime no longer admits new operations.
    ShuttingDown = 8,
    /// Wire, payload or reply contract could not be processed.
    ProtocolError = 9,
    /// Not allowed in the current state.
    InvalidOperation = 10,
    /// Published relocation payload missing or invalid.
    DataLost = 11,
    /// Anything else inside the framework.
    InternalFailure = 12,
}

impl ErrorKind {
    /// Every kind, in wire order.
    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::NotFound,
        ErrorKind::AlreadyExists,
        ErrorKind::TypeMismatch,
        ErrorKind::NotConfigured,
        ErrorKind::Rejected,
        ErrorKind::Unavailable,
        ErrorKind::CapacityExceeded,
        ErrorKind::DeadlineExceeded,
        ErrorKind::ShuttingDown,
        ErrorKind::ProtocolError,
        ErrorKind::InvalidOperation,
        ErrorKind::DataLost,
        ErrorKind::InternalFailure,
    ];

    /// The wire number of this kind.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The kind for a wire number, or `None` when the number is outside `0..=12`.
    pub fn from_code(code: u8) -> Option<ErrorKind> {
        Self::ALL.get(usize::from(code)).copied()
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Why the framework itself refused a call, when that reason decides what the caller's
/// node does next. It travels with the error, over the wire too (a reply head's refusal
/// byte), so no code has to read an error's text to act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum Refusal {
    /// The call reached a node that does not own the object under the route it was sent
    /// with (moved, closed, restarted or never there): the caller resolves the ID again.
    StaleRoute = 1,
    /// The connection the request left on closed before its reply: whether the target
    /// ran it is unknown.
    ConnectionLost = 2,
}

impl Refusal {
    /// Every refusal, in wire order.
    pub const ALL: [Refusal; 2] = [Refusal::StaleRoute, Refusal::ConnectionLost];

    /// The wire number of this refusal (never 0).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The refusal for a wire number, or `None` for a number it does not know.
    pub fn from_code(code: u8) -> Option<Refusal> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }
}

/// One configuration problem found by a builder's `build()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigViolation {
    /// The setting at fault, e.g. `channel "echo" weight`.
    pub setting: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for ConfigViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.setting, self.problem)
    }
}

/// The error returned by every fallible zlink operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An operation failed with one of the closed [`ErrorKind`]s.
    #[error("{kind}: {detail}")]
    Failed {
        /// The failure kind.
        kind: ErrorKind,
        /// Human-readable detail (never parsed by the framework).
        detail: String,
        /// Why the framework refused the call, when the caller's node acts on that.
        refusal: Option<Refusal>,
    },
    /// The caller passed an argument that can never be valid (checked locally, before
    /// anything was sent).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A builder found configuration problems; every violation is listed.
    #[error("invalid configuration ({} problem(s)): {}", .0.len(), join_violations(.0))]
    Config(Vec<ConfigViolation>),
}

fn join_violations(violations: &[ConfigViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Error {
    /// A failure of the given kind.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        Error::Failed {
            kind,
            detail: detail.into(),
            refusal: None,
        }
    }

    /// A failure of `kind` for a typed `refusal`.
    pub fn refused(kind: ErrorKind, refusal: Refusal, detail: impl Into<String>) -> Self {
        Error::Failed {
            kind,
            detail: detail.into(),
            refusal: Some(refusal),
        }
    }

    /// The same error, marked as `refusal` (argument and configuration errors stay as
    /// they are).
    pub fn with_refusal(self, refusal: Refusal) -> Self {
        match self {
            Error::Failed { kind, detail, .. } => Error::refused(kind, refusal, detail),
            other => other,
        }
    }

    /// Why the framework refused the call, when it says.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Error::Failed { refusal, .. } => *refusal,
            _ => None,
        }
    }

    /// An application handler's error as its caller hears it: a refusal the handler heard
    /// on a call of its own is dropped (it was about that call, not this one: acting on it
    /// would resend work that already ran).
    pub(crate) fn handler_error(self) -> Self {
        match self {
            Error::Failed { kind, detail, .. } => Error::new(kind, detail),
            other => other,
        }
    }

    /// Whether this error is the refusal `refusal`.
    pub fn is_refusal(&self, refusal: Refusal) -> bool {
        self.refusal() == Some(refusal)
    }

    /// The failure kind, or `None` for argument and configuration errors.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            Error::Failed { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Whether this error is a failure of `kind`.
    pub fn is(&self, kind: ErrorKind) -> bool {
        self.kind() == Some(kind)
    }
}

/// Result alias for zlink operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kind_numbers_follow_the_reference() {
        assert_eq!(ErrorKind::NotFound.code(), 0);
        assert_eq!(ErrorKind::Unavailable.code(), 5);
        assert_eq!(ErrorKind::DeadlineExceeded.code(), 7);
        assert_eq!(ErrorKind::InternalFailure.code(), 12);
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ErrorKind::from_code(13), None);
    }

    #[test]
    fn a_refusal_has_a_non_zero_wire_number_and_survives_with_refusal() {
        for refusal in Refusal::ALL {
            assert_ne!(refusal.code(), 0);
            assert_eq!(Refusal::from_code(refusal.code()), Some(refusal));
        }
        assert_eq!(Refusal::from_code(0), None);
        let err = Error::new(ErrorKind::Unavailable, "gone").with_refusal(Refusal::StaleRoute);
        assert!(err.is_refusal(Refusal::StaleRoute) && err.is(ErrorKind::Unavailable));
        assert_eq!(err.to_string(), "Unavailable: gone");
        assert_eq!(
            Error::InvalidArgument("x".into())
                .with_refusal(Refusal::StaleRoute)
                .refusal(),
            None
        );
    }

    #[test]
    fn config_error_lists_every_violation() {
        let err = Error::Config(vec![
            ConfigViolation {
                setting: "a".into(),
                problem: "bad".into(),
            },
            ConfigViolation {
                setting: "b".into(),
                problem: "worse".into(),
            },
        ]);
        let text = err.to_string();
        assert!(
            text.contains("2 problem(s)") && text.contains("a: bad") && text.contains("b: worse")
        );
        assert_eq!(err.kind(), None);
    }
}
