//! STREAM sessions: outside clients (game, app and browser clients) connected to a node
//! over TCP or WebSocket, each connection one session with its own serial lane.
//!
//! Register a [`StreamListener`] with
//! [`RuntimeBuilder::stream_listener`](crate::RuntimeBuilder::stream_listener): a name, a
//! bind endpoint, limits and exactly one session type. Each connection gets a fresh
//! value of that type; its callbacks and handlers run one at a time, in arrival order.
//! A client speaks the STREAM packet format (the book's wire chapter): a 6-byte prefix,
//! a header with marker `0xF2`, the payload in JSON or Raw. A request is answered exactly
//! once, with a Response or an Error. A reconnect is a new session: nothing of the old
//! connection carries over.

mod answer_order;
mod client_packets;
mod connection;
mod context;
mod incoming;
mod lane;
mod limits;
mod outbound;
pub(crate) mod packet;
mod peer;
mod running_listener;
mod session_bindings;
mod session_index;
mod session_type;
mod settings;
mod stream_listeners;
mod table;
mod tls;
mod transport;
mod websocket;

pub use context::{ClientSend, SessionContext};
pub use incoming::Packet;
pub use limits::{StreamLimits, DEFAULT_MAX_SESSIONS, DEFAULT_OUTBOUND_BYTES};
pub use packet::{CloseReason, Flow, StreamCodec, DEFAULT_MAX_MESSAGE_SIZE, RESERVED_PREFIX};
pub use peer::ReplyToken;
pub use peer::SessionId;
pub use session_type::Session;
pub(crate) use settings::validate;
pub use settings::StreamListener;
pub use stream_listeners::StreamListenerStatus;
pub(crate) use stream_listeners::StreamListeners;
pub use tls::TlsIdentity;

use crate::{Error, ErrorKind, Message, Result};

/// The STREAM codec of `M`'s bytes, or why a client cannot read them.
pub(crate) fn codec_of<M: Message>() -> Result<StreamCodec> {
    match M::STREAM_CODEC {
        Some(0) => Ok(StreamCodec::Raw),
        Some(1) => Ok(StreamCodec::Json),
        _ => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "message {} is not JSON or Raw, which is all a STREAM client reads: derive it with #[message(codec = zlink::Json)]",
                M::PACKET_NAME
            ),
        )),
    }
}
