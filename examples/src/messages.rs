//! The messages of the `greet` channel.
//!
//! Each message is a plain serde type. `zlink::cbor_message!` gives it a packet name and the
//! default CBOR codec, and `impl zlink::Request` ties a request to its reply type, so a
//! client call returns exactly that type.

use serde::{Deserialize, Serialize};

// ANCHOR: messages
/// Asks a server of the `greet` channel for a greeting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Greet {
    /// Who to greet.
    pub name: String,
}
zlink::cbor_message!(Greet, "Greet");
impl zlink::Request for Greet {
    type Reply = Greeting;
}

/// Like [`Greet`], but the server takes `millis` milliseconds before it answers. The demo
/// uses it to have a request in flight while the server is drained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowGreet {
    /// Who to greet.
    pub name: String,
    /// How long the server works on the request, in milliseconds.
    pub millis: u64,
}
zlink::cbor_message!(SlowGreet, "SlowGreet");
impl zlink::Request for SlowGreet {
    type Reply = Greeting;
}

/// The reply to [`Greet`] and [`SlowGreet`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Greeting {
    /// The greeting itself.
    pub text: String,
    /// The RID of the server that answered.
    pub by: String,
}
zlink::cbor_message!(Greeting, "Greeting");
// ANCHOR_END: messages
