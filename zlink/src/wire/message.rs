//! The typed message traits and the default CBOR codec.

use bytes::Bytes;
use serde::{de::DeserializeOwned, Serialize};

use crate::{Error, ErrorKind, Result};

/// An application message with a packet name and a codec.
///
/// Implement it with `#[derive(zlink::Message)]` (macros) or by hand: the default codec is
/// CBOR through [`cbor_encode`] / [`cbor_decode`].
pub trait Message: Sized + Send + Sync + 'static {
    /// The packet name that identifies this message type on the wire (1..=255 bytes).
    const PACKET_NAME: &'static str;

    /// Encodes the message into payload bytes.
    fn encode(&self) -> Result<Bytes>;

    /// Decodes payload bytes. A failure is reported as [`ErrorKind::ProtocolError`].
    fn decode(bytes: &[u8]) -> Result<Self>;
}

/// A message sent with a request that expects a reply of type [`Request::Reply`]. A client call
/// returns exactly that type, so a mismatched reply type does not compile.
pub trait Request: Message {
    /// The reply message type.
    type Reply: Message;
}

/// Encodes a value as CBOR.
pub fn cbor_encode<T: Serialize>(value: &T) -> Result<Bytes> {
    let mut out = Vec::with_capacity(64);
    ciborium::into_writer(value, &mut out)
        .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("encode: {e}")))?;
    Ok(Bytes::from(out))
}

/// Decodes a CBOR value; malformed input is a [`ErrorKind::ProtocolError`].
pub fn cbor_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    super::cbor_decode_bounded(bytes)
        .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("decode: {e}")))
}
