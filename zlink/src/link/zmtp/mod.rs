//! Our ZMTP 3.1 engine over tokio TCP: the production transport.
//!
//! Any ZMTP peer interoperates: libzmq or the `zeromq` crate as a DEALER toward a node's
//! listener (which plays ROUTER), as a ROUTER toward its dialer (which plays DEALER), and
//! as a SUB of a fanout publisher. What the engine adds over a plain ZMTP stack:
//! - every inbound size is checked from the frame header, before allocation (frame length,
//!   frames per message, bytes per message);
//! - one handshake deadline from accept to admission, and caps on open and on pending
//!   connections per listener;
//! - NULL and CURVE (RFC 26) security, CURVE keys checked against a trust set;
//! - one writer task per connection draining a bounded queue (messages and bytes) in
//!   batches; closing a connection closes exactly its TCP connection.

mod connection;
pub(crate) mod curve;
mod frame;
mod greeting;
mod handshake;
mod listener;
mod outgoing;
mod properties;
mod publisher;
mod subscriber;
mod transport;

pub(crate) use publisher::{PubListener, PubOptions, Record};
pub(crate) use subscriber::SubConnection;
pub use transport::ZmtpTransport;
