//! Faults a test injects into this node's moves, to reach the fallbacks real sockets do
//! not produce on demand. Without the `test-faults` feature the type is empty and every
//! question answers "no", so an application build carries none of them.

/// Which relocation messages this node treats as lost.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RelocationFaults {
    /// A move never sends its cutover (the target commits on the 1000 ms fallback).
    #[cfg(feature = "test-faults")]
    pub(crate) drop_cutover: bool,
    /// A move's relay-ready answer is lost.
    #[cfg(feature = "test-faults")]
    pub(crate) lose_relay_ready: bool,
    /// Follow notices (command 50) arriving here are lost.
    #[cfg(feature = "test-faults")]
    pub(crate) drop_follow_notices: bool,
    /// Every reply to a request this node relays is lost.
    #[cfg(feature = "test-faults")]
    pub(crate) lose_relayed_replies: bool,
    /// The new routes (command 44 commits) this node sends to bound sessions' owners
    /// after a move in are lost.
    #[cfg(feature = "test-faults")]
    pub(crate) drop_session_routes: bool,
    /// The notices (command 51) this node's binds send to the sessions whose bindings
    /// they retired are lost.
    #[cfg(feature = "test-faults")]
    pub(crate) drop_binding_replaced: bool,
    /// An Instance Spot's activation stops after its reservation, as if its process died
    /// there.
    #[cfg(feature = "test-faults")]
    pub(crate) hold_activation_after_reserve: bool,
    /// An Instance Spot's activation stops after its recovery root was written, before
    /// its reservation, as if its process died there.
    #[cfg(feature = "test-faults")]
    pub(crate) hold_activation_after_root: bool,
    /// Every Logical Multicast publish worker of this node is taken.
    #[cfg(feature = "test-faults")]
    pub(crate) hold_publish_workers: bool,
}

impl RelocationFaults {
    /// Whether a move's cutover is dropped instead of sent.
    pub(crate) fn drops_cutover(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.drop_cutover;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether a move's relay-ready answer is treated as lost.
    pub(crate) fn loses_relay_ready(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.lose_relay_ready;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether arriving follow notices are dropped.
    pub(crate) fn drops_follow_notices(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.drop_follow_notices;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether a bound session's new route (44 commit) is dropped instead of sent.
    pub(crate) fn drops_session_routes(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.drop_session_routes;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether a retired binding's notice (51) is dropped instead of sent.
    pub(crate) fn drops_binding_replaced(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.drop_binding_replaced;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether every publish worker is taken (publishes cannot start).
    pub(crate) fn holds_publish_workers(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.hold_publish_workers;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether an Instance Spot's activation stops after its root, before reserving.
    pub(crate) fn holds_activation_after_root(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.hold_activation_after_root;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether an Instance Spot's activation stops after its reservation.
    pub(crate) fn holds_activation_after_reserve(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.hold_activation_after_reserve;
        #[cfg(not(feature = "test-faults"))]
        false
    }

    /// Whether replies to relayed requests are treated as lost.
    pub(crate) fn loses_relayed_replies(&self) -> bool {
        #[cfg(feature = "test-faults")]
        return self.lose_relayed_replies;
        #[cfg(not(feature = "test-faults"))]
        false
    }
}
