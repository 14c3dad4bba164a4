//! [`Payload`]: a message or reply as it travels inside one node — encoded bytes, or the
//! typed value itself, handed from caller to handler without a codec in between.
//!
//! A value becomes bytes only where bytes are needed: when it leaves the node, when a
//! move holds it for the object's next owner, or when the type on the other side is not
//! the type that was sent.

use std::any::Any;
use std::fmt;

use bytes::Bytes;

use super::message::Message;
use crate::{Error, ErrorKind, Result};

/// A message or reply inside one node: its encoded bytes, or (on a call whose owner runs
/// on the same node) the typed value itself.
///
/// Handlers written by hand take theirs with [`into_message`](Self::into_message) and
/// answer with [`of`](Self::of); the `#[spot]` and `#[actor]` macros write both.
pub struct Payload {
    repr: Repr,
}

enum Repr {
    Encoded(Bytes),
    Value(Value),
}

/// A typed value, how to encode and to measure it, and its encoded size once measured
/// (only a mailbox or a move's hold on this node needs it: a value that leaves the node
/// is encoded once, never measured).
struct Value {
    value: Box<dyn Any + Send>,
    encode: fn(&(dyn Any + Send)) -> Result<Bytes>,
    measure: fn(&(dyn Any + Send)) -> Result<usize>,
    len: Option<usize>,
}

impl Payload {
    /// Encoded bytes.
    pub fn encoded(bytes: Bytes) -> Payload {
        Payload {
            repr: Repr::Encoded(bytes),
        }
    }

    /// The payload of `message`: the value itself when its codec hands values over
    /// ([`Codec::HANDS_OVER`](crate::Codec::HANDS_OVER)), its encoding otherwise.
    pub fn of<M: Message>(message: M) -> Result<Payload> {
        if !M::HANDS_OVER {
            return message.encode().map(Payload::encoded);
        }
        Ok(Payload {
            repr: Repr::Value(Value {
                value: Box::new(message),
                encode: encode_as::<M>,
                measure: measure_as::<M>,
                len: None,
            }),
        })
    }

    /// The message of type `M`: the value handed over, or decoded from the bytes (also
    /// when the value handed over is of another type with the same packet name).
    pub fn into_message<M: Message>(self) -> Result<M> {
        match self.repr {
            Repr::Encoded(bytes) => M::decode(&bytes),
            Repr::Value(value) => match value.value.downcast::<M>() {
                Ok(message) => Ok(*message),
                Err(other) => M::decode(&(value.encode)(&*other)?),
            },
        }
    }

    /// The encoded bytes, encoding a value handed over.
    pub fn into_bytes(self) -> Result<Bytes> {
        match self.repr {
            Repr::Encoded(bytes) => Ok(bytes),
            Repr::Value(value) => (value.encode)(&*value.value),
        }
    }

    /// The size of its encoding in bytes (what a mailbox's byte bound counts), measured
    /// once for a value; an error when the value cannot be encoded.
    pub fn encoded_len(&mut self) -> Result<usize> {
        match &mut self.repr {
            Repr::Encoded(bytes) => Ok(bytes.len()),
            Repr::Value(value) => match value.len {
                Some(len) => Ok(len),
                None => {
                    let len = (value.measure)(&*value.value)?;
                    value.len = Some(len);
                    Ok(len)
                }
            },
        }
    }
}

impl Default for Payload {
    fn default() -> Self {
        Payload::encoded(Bytes::new())
    }
}

impl From<Bytes> for Payload {
    fn from(bytes: Bytes) -> Self {
        Payload::encoded(bytes)
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Encoded(bytes) => f.debug_tuple("Payload::Encoded").field(bytes).finish(),
            Repr::Value(value) => match value.len {
                Some(len) => write!(f, "Payload::Value({len} bytes encoded)"),
                None => f.write_str("Payload::Value"),
            },
        }
    }
}

fn encode_as<M: Message>(value: &(dyn Any + Send)) -> Result<Bytes> {
    typed::<M>(value)?.encode()
}

fn measure_as<M: Message>(value: &(dyn Any + Send)) -> Result<usize> {
    typed::<M>(value)?.encoded_len()
}

fn typed<M: Message>(value: &(dyn Any + Send)) -> Result<&M> {
    value.downcast_ref::<M>().ok_or_else(|| {
        Error::new(
            ErrorKind::InternalFailure,
            "a payload's value is not of the type it was made with",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Note {
        text: String,
    }

    /// Another type with the same packet name and the same wire form.
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct SameWire {
        text: String,
    }

    macro_rules! cbor_message {
        ($ty:ty) => {
            impl Message for $ty {
                const PACKET_NAME: &'static str = "payload-test.note";
                const HANDS_OVER: bool = true;
                fn encode(&self) -> Result<Bytes> {
                    crate::wire::cbor_encode(self)
                }
                fn decode(bytes: &[u8]) -> Result<Self> {
                    crate::wire::cbor_decode(bytes)
                }
            }
        };
    }
    cbor_message!(Note);
    cbor_message!(SameWire);

    fn note() -> Note {
        Note {
            text: "seven".into(),
        }
    }

    #[test]
    fn a_value_handed_over_is_the_value_and_counts_its_encoded_size() {
        let mut payload = Payload::of(note()).unwrap();
        assert_eq!(
            format!("{payload:?}"),
            "Payload::Value",
            "not measured until asked"
        );
        let len = payload.encoded_len().unwrap();
        assert_eq!(len, note().encode().unwrap().len());
        assert_eq!(
            format!("{payload:?}"),
            format!("Payload::Value({len} bytes encoded)")
        );
        assert_eq!(payload.into_message::<Note>().unwrap(), note());
    }

    #[test]
    fn a_value_becomes_its_encoding_where_bytes_are_needed() {
        let bytes = Payload::of(note()).unwrap().into_bytes().unwrap();
        assert_eq!(bytes, note().encode().unwrap());
        let back: Note = Payload::encoded(bytes).into_message().unwrap();
        assert_eq!(back, note());
    }

    #[test]
    fn a_value_of_another_type_is_read_through_its_encoding() {
        let payload = Payload::of(note()).unwrap();
        let other: SameWire = payload.into_message().unwrap();
        assert_eq!(other.text, "seven");
    }

    #[test]
    fn bytes_that_are_not_the_type_are_a_protocol_error() {
        let err = Payload::encoded(Bytes::from_static(b"\xff\x00"))
            .into_message::<Note>()
            .unwrap_err();
        assert!(err.is(ErrorKind::ProtocolError), "{err}");
    }
}
