//! The link layer: what zlink adds on top of a message transport.
//!
//! [`Transport`] is the boundary: it moves multipart messages over connections and reports
//! when a connection ends. The default is [`ZmqTransport`] (ZMTP over TCP with the `zeromq`
//! crate); the testkit provides an in-memory network that injects faults. Handshake,
//! liveness and reconnect live above this boundary (in [`crate::mesh`]) so every transport
//! gets the same rules.

mod advertise;
mod backoff;
mod liveness;
mod transport;
mod zmq;
pub(crate) mod zmtp;

pub use advertise::{advertised, binds_wildcard};
pub use backoff::reconnect_delay;
pub use liveness::{Liveness, LivenessTimings, ProbeAction};
pub use transport::{
    next_conn_id, ConnId, Connection, Frames, LinkError, LinkEvents, Listener, Transport,
};
pub use zmq::ZmqTransport;
