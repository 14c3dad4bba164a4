//! A ZMTP 3.x PUB endpoint of our own, over tokio TCP.
//!
//! The `zeromq` crate's PUB socket keeps a fixed, hidden queue per subscriber and always
//! drops when it is full. Fanout needs the policy in our hands: a configurable
//! SendHighWaterMark per subscriber, and NoDrop (wait for room, up to a deadline). So the
//! publisher side speaks ZMTP itself: greeting, NULL handshake with `Socket-Type` `PUB`,
//! subscriptions (as messages or SUBSCRIBE/CANCEL commands), and framed messages. Any ZMTP
//! SUB (libzmq, the `zeromq` crate) can subscribe.

mod frame;
mod handshake;
mod publisher;

pub(crate) use publisher::{PubListener, Record};
