//! The link layer: what zlink adds on top of a message transport.
//!
//! [`Transport`] is the boundary: it moves multipart messages over connections and reports
//! when a connection ends. The default is [`ZmtpTransport`], our own ZMTP 3.1 engine over
//! tokio TCP (see [`zmtp`]); the testkit provides an in-memory network that injects faults.
//! Admission, liveness and reconnect live above this boundary (in [`crate::mesh`]) so
//! every transport gets the same rules.

mod advertise;
mod backoff;
mod limits;
mod liveness;
pub mod security;
mod transport;
pub(crate) mod warn_limit;
pub mod zmtp;

pub use advertise::{advertised, binds_wildcard, is_loopback};
pub use backoff::reconnect_delay;
pub use limits::LinkLimits;
pub use liveness::{Liveness, LivenessTimings, ProbeAction};
pub use security::{
    ClientSecurity, CurveKeypair, CurvePublicKey, KeyError, ServerSecurity, Trust, TrustSet,
};
pub use transport::next_conn_id;
pub use transport::{
    ConnId, ConnectOptions, Connection, Frames, LinkError, LinkEvents, ListenOptions, Listener,
    Transport, TrySendError,
};
pub use zmtp::ZmtpTransport;
