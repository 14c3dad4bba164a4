//! The messages of the `greet` channel.
//!
//! Each message is a plain serde type. `#[derive(zlink::Message)]` gives it a packet name
//! (the type's name) and the default CBOR codec; `#[message(reply = ...)]` ties a request to
//! its reply type, so a client call returns exactly that type.

use serde::{Deserialize, Serialize};

// ANCHOR: messages
/// Asks a server of the `greet` channel for a greeting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, zlink::Message)]
#[message(reply = Greeting)]
pub struct Greet {
    /// Who to greet.
    pub name: String,
}

/// Like [`Greet`], but the server takes `millis` milliseconds before it answers. The demo
/// uses it to have a request in flight while the server is drained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, zlink::Message)]
#[message(reply = Greeting)]
pub struct SlowGreet {
    /// Who to greet.
    pub name: String,
    /// How long the server works on the request, in milliseconds.
    pub millis: u64,
}

/// The reply to [`Greet`] and [`SlowGreet`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, zlink::Message)]
pub struct Greeting {
    /// The greeting itself.
    pub text: String,
    /// The RID of the server that answered.
    pub by: String,
}
// ANCHOR_END: messages
