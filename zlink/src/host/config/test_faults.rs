//! [`TestFaults`]: what tests make a node do that applications never do (shorter liveness
//! timings, lost relocation and session messages, held activations). The trait exists
//! only with the `test-faults` feature: without it, none of these faults is in the code.

use std::time::Duration;

use super::builder::RuntimeBuilder;
use crate::link::LivenessTimings;

/// Test-only settings of a [`RuntimeBuilder`]: bring the trait into scope
/// (`use zlink::TestFaults;`) to call them. Only with the `test-faults` feature.
pub trait TestFaults: Sized {
    /// Test-only: shortens the liveness probe interval and deadline (fixed at 5 s / 15 s
    /// for applications; the testkit's clusters use it). Not part of the application API.
    fn test_liveness(self, probe_interval: Duration, deadline: Duration) -> Self;

    /// Test-only fault: moves out of this node never send their cutover, so each target
    /// commits on its 1000 ms fallback.
    fn test_drop_relocation_cutover(self) -> Self;

    /// Test-only fault: every relay-ready answer to a move out of this node is treated as
    /// lost with its connection, although the target did get ready.
    fn test_lose_relay_ready(self) -> Self;

    /// Test-only fault: every reply to a request this node relays for an object that
    /// moved away is treated as lost with its connection, so the result is read from the
    /// Relocation Store.
    fn test_lose_relayed_replies(self) -> Self;

    /// Test-only fault: after a bound Actor moved in, the new route this node sends its
    /// session's owner (command 44) is lost, so that session ends on its seal timeout.
    fn test_drop_session_routes(self) -> Self;

    /// Test-only fault: when a bind on this node retires another session's binding, that
    /// session is never told (command 51 is lost), so it keeps relaying under the retired
    /// binding.
    fn test_drop_binding_replaced(self) -> Self;

    /// Test-only fault: an Instance Spot activation on this node stops right after its
    /// reservation, as if the process died there (the record stays Creating).
    fn test_hold_activation_after_reserve(self) -> Self;

    /// Test-only fault: an Instance Spot activation on this node stops right after it
    /// wrote its recovery root, before it reserves the ID, as if the process died there
    /// (the root is an orphan).
    fn test_hold_activation_after_root(self) -> Self;

    /// Test-only fault: every Logical Multicast publish worker of this node is taken, so
    /// its publishes cannot start.
    fn test_hold_publish_workers(self) -> Self;

    /// Test-only fault: follow notices sent to this node are lost, so its cached routes
    /// to objects that moved expire only with their max age.
    fn test_drop_follow_notices(self) -> Self;
}

impl TestFaults for RuntimeBuilder {
    fn test_liveness(mut self, probe_interval: Duration, deadline: Duration) -> Self {
        self.liveness = LivenessTimings {
            probe_interval,
            deadline,
        };
        self
    }

    fn test_drop_relocation_cutover(mut self) -> Self {
        self.faults.drop_cutover = true;
        self
    }

    fn test_lose_relay_ready(mut self) -> Self {
        self.faults.lose_relay_ready = true;
        self
    }

    fn test_lose_relayed_replies(mut self) -> Self {
        self.faults.lose_relayed_replies = true;
        self
    }

    fn test_drop_session_routes(mut self) -> Self {
        self.faults.drop_session_routes = true;
        self
    }

    fn test_drop_binding_replaced(mut self) -> Self {
        self.faults.drop_binding_replaced = true;
        self
    }

    fn test_hold_activation_after_reserve(mut self) -> Self {
        self.faults.hold_activation_after_reserve = true;
        self
    }

    fn test_hold_activation_after_root(mut self) -> Self {
        self.faults.hold_activation_after_root = true;
        self
    }

    fn test_hold_publish_workers(mut self) -> Self {
        self.faults.hold_publish_workers = true;
        self
    }

    fn test_drop_follow_notices(mut self) -> Self {
        self.faults.drop_follow_notices = true;
        self
    }
}
