//! The typed message traits.

use bytes::Bytes;

use crate::Result;

/// An application message with a packet name and a codec.
///
/// Derive it with `#[derive(zlink::Message)]`: the packet name defaults to the type's name,
/// the codec to [`Cbor`](super::Cbor). Implementing it by hand is equally valid.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a zlink message",
    label = "not a zlink message",
    note = "add `#[derive(zlink::Message)]` (with serde's Serialize and Deserialize) to `{Self}`"
)]
pub trait Message: Sized + Send + Sync + 'static {
    /// The packet name that identifies this message type on the wire (1..=255 bytes).
    const PACKET_NAME: &'static str;

    /// Encodes the message into payload bytes.
    fn encode(&self) -> Result<Bytes>;

    /// Decodes payload bytes. A failure is reported as [`ErrorKind::ProtocolError`](crate::ErrorKind::ProtocolError).
    fn decode(bytes: &[u8]) -> Result<Self>;

    /// Whether a call whose handler runs on the same node hands the value itself over
    /// instead of encoding and decoding it (see [`Codec::HANDS_OVER`](crate::Codec::HANDS_OVER)).
    const HANDS_OVER: bool = false;

    /// The STREAM packet codec number of this message's bytes (see
    /// [`Codec::STREAM_CODEC`](crate::Codec::STREAM_CODEC)); `None` when outside clients
    /// cannot read it.
    const STREAM_CODEC: Option<u8> = None;

    /// The size of [`encode`](Self::encode)'s output, without keeping it.
    fn encoded_len(&self) -> Result<usize> {
        self.encode().map(|bytes| bytes.len())
    }
}

/// A message sent with a request that expects a reply of type [`Request::Reply`]. A client call
/// returns exactly that type, so a mismatched reply type does not compile.
///
/// Derive it with `#[message(reply = ReplyType)]` next to `#[derive(zlink::Message)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a request: it names no reply type",
    label = "not a request",
    note = "declare the reply with `#[message(reply = ReplyType)]` on `{Self}`, or make this handler return `Result<(), E>` to handle it as a one-way send"
)]
pub trait Request: Message {
    /// The reply message type.
    type Reply: Message;
}
