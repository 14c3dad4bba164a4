//! Message Follow (seed 000 §2.5): what happens to messages for an object that is leaving
//! this node, or has left it.
//!
//! - At the seal, the source starts an **ingress hold** for the object: what arrives on
//!   its route waits here, bounded by count and bytes ([`Departures`], [`Held`]).
//! - Once the target answers relay-ready, one **relay** task carries everything to it in
//!   the order the source accepted it: the saved queue, then the hold, then what still
//!   arrives ([`relay`]). A relay keeps the message's packet, payload, metadata, deadline
//!   and reply capability (the reply comes back through this node), runs no handler here
//!   and reads no store. It counts one more hop; past `MAX_FOLLOW_HOPS` the message is
//!   `Unavailable`.
//! - After the owner change commits, the old route is the **Message Follow route** for
//!   MessageFollowDuration: what arrives on it is relayed, and each sender gets one
//!   **follow notice** (command 50), sent behind a barrier so it never overtakes what was
//!   relayed. A notice received drops the receiver's cached route to the object, only if
//!   it is exactly the route the notice names and only from the node that owned it
//!   ([`notice`]).
//!
//! What a node cannot deliver is refused with its answer given and, for a one-way,
//! counted in `status().lost_one_ways`.

mod departures;
mod held;
mod notice;
mod notice_record;
mod relay;
mod suppression;
mod terminal;

pub(crate) use departures::{Departure, Departures, Offer};
pub(crate) use held::{held_to_job, job_to_held, Held};
pub(crate) use notice::followed;
pub(crate) use notice_record::{check_fence, protocol, FollowNotice};
pub(crate) use relay::{RelayItem, RelayServices};
pub(crate) use terminal::{Recorder, RELAY_ID_KEY};

/// The most times one message is relayed by Message Follow.
pub(crate) const MAX_FOLLOW_HOPS: u8 = 8;
/// The ingress hold of one sealed object: at most this many messages...
pub(crate) const HOLD_MESSAGES: usize = 1024;
/// ...and this many bytes.
pub(crate) const HOLD_BYTES: usize = 16 * 1024 * 1024;
