//! The ZMTP CURVE security mechanism (RFC 26 CurveZMQ, as libzmq speaks it), sans-IO.
//!
//! Each side is a small state machine that takes command bodies (the bytes of a ZMTP
//! command frame) and returns the bodies to send back; the caller owns the socket, the
//! framing and the trust decision.
//!
//! ```text
//! client                                   server
//! hello()            -- HELLO    -->       on_hello()
//! on_welcome()       <-- WELCOME --        (returned by on_hello)
//!   returns INITIATE -- INITIATE -->       on_initiate() -> client's permanent key
//! on_ready()         <-- READY   --        ready()  (after the caller trusted the key)
//! CurveSession                             CurveSession
//! ```
//!
//! Handshake commands travel as ZMTP command frames. After READY every frame, data or
//! command, travels inside a MESSAGE body made by [`CurveSealer::seal`]; libzmq sends
//! those bodies as plain data frames (flags 0, LONG as needed), with MORE and COMMAND
//! carried only in the encrypted flags byte. Send them the same way: libzmq 4.3 ORs the
//! outer frame's MORE and COMMAND bits into the decrypted frame's flags.
//!
//! Short nonces count up from 1 on each side (client: HELLO 1, INITIATE 2, messages from
//! 3; server: READY 1, messages from 2); a peer's short nonces must strictly increase.
//! A failed `&mut self` step leaves its state machine as it was.

mod client;
mod crypto;
mod error;
mod keyfile;
mod keys;
mod message;
mod nonce;
mod poly1305;
mod secretbox;
mod server;
mod x25519;

pub(crate) use client::CurveClient;
pub use keys::{CurveKeypair, CurvePublicKey, KeyError};
pub(crate) use message::{CurveOpener, CurveSealer, CurveSession, MESSAGE_OVERHEAD};
// Callers get these from results and need not name them.
pub(crate) use server::{error_body, CookieKey, CurveServer};
#[cfg_attr(not(test), allow(unused_imports))]
pub(crate) use {error::CurveError, message::OpenedFrame};

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
