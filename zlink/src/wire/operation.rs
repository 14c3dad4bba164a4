//! Operation identities: the non-zero number a sender gives each command it starts.

use std::sync::atomic::{AtomicU64, Ordering};

/// The operation identities one sender lifecycle hands out: 1, 2, 3, … A u64 does not
/// wrap within any lifecycle (at a billion commands a second it lasts 584 years), so
/// every identity is unique among that sender's commands.
#[derive(Debug)]
pub(crate) struct OperationIds {
    next: AtomicU64,
}

impl Default for OperationIds {
    fn default() -> Self {
        OperationIds {
            next: AtomicU64::new(1),
        }
    }
}

impl OperationIds {
    /// A new identity, never handed out before by this sender.
    pub(crate) fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_non_zero_and_never_repeat() {
        let ids = OperationIds::default();
        let taken: Vec<u64> = (0..1000).map(|_| ids.next()).collect();
        assert_eq!(taken[0], 1);
        let unique: std::collections::HashSet<_> = taken.iter().collect();
        assert_eq!(unique.len(), 1000);
    }
}
