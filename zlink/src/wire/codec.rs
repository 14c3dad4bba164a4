//! Payload codecs: how a message value becomes payload bytes and back.
//!
//! The codec only converts between a value and bytes. Packet names, routing, correlation and
//! metadata belong to the envelope and never depend on the codec.

use bytes::Bytes;
use serde::{de::DeserializeOwned, Serialize};

use crate::{Error, ErrorKind, Result};

/// Encodes and decodes values of type `T` as payload bytes.
///
/// [`Cbor`] is the default for `#[derive(zlink::Message)]`; choose another per type with
/// `#[message(codec = MyCodec)]`. Decoding must treat its input as untrusted: a failure is
/// reported as [`ErrorKind::ProtocolError`], never a panic.
///
/// ```
/// use zlink::{Bytes, Codec};
///
/// /// Carries a UTF-8 string as its raw bytes.
/// struct RawText;
///
/// impl Codec<String> for RawText {
///     fn encode(value: &String) -> zlink::Result<Bytes> {
///         Ok(Bytes::copy_from_slice(value.as_bytes()))
///     }
///     fn decode(bytes: &[u8]) -> zlink::Result<String> {
///         String::from_utf8(bytes.to_vec())
///             .map_err(|e| zlink::Error::new(zlink::ErrorKind::ProtocolError, e.to_string()))
///     }
/// }
/// ```
pub trait Codec<T> {
    /// Encodes `value` into payload bytes.
    fn encode(value: &T) -> Result<Bytes>;

    /// Decodes payload bytes into a value.
    fn decode(bytes: &[u8]) -> Result<T>;

    /// Whether a value may go from a caller to a handler on the same node as it is,
    /// because decoding its encoding gives the same value back. `Cbor` and `Json` say yes
    /// (a field serde skips keeps its value on such a call); a codec that changes what it
    /// carries leaves the default, `false`, and its values are always encoded.
    const HANDS_OVER: bool = false;

    /// The STREAM packet codec number this codec's bytes are (`Some(1)` JSON, `Some(0)`
    /// Raw); `None` for a codec outside clients do not speak (CBOR).
    const STREAM_CODEC: Option<u8> = None;

    /// The size of `value`'s encoding (a mailbox bounds what it holds by it).
    fn encoded_len(value: &T) -> Result<usize> {
        Self::encode(value).map(|bytes| bytes.len())
    }
}

/// A writer that only counts what it is given.
#[derive(Default)]
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// CBOR through serde (`ciborium`): compact, self-describing, the default codec.
/// Decoding bounds nesting depth and refuses trailing bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cbor;

impl<T: Serialize + DeserializeOwned> Codec<T> for Cbor {
    fn encode(value: &T) -> Result<Bytes> {
        cbor_encode(value)
    }

    fn decode(bytes: &[u8]) -> Result<T> {
        cbor_decode(bytes)
    }

    const HANDS_OVER: bool = true;

    fn encoded_len(value: &T) -> Result<usize> {
        let mut counted = Counted::default();
        ciborium::into_writer(value, &mut counted)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("encode: {e}")))?;
        Ok(counted.0)
    }
}

/// JSON through serde (`serde_json`), for payloads that people or web clients read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl<T: Serialize + DeserializeOwned> Codec<T> for Json {
    fn encode(value: &T) -> Result<Bytes> {
        serde_json::to_vec(value)
            .map(Bytes::from)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("encode: {e}")))
    }

    fn decode(bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("decode: {e}")))
    }

    const HANDS_OVER: bool = true;

    const STREAM_CODEC: Option<u8> = Some(1);

    fn encoded_len(value: &T) -> Result<usize> {
        let mut counted = Counted::default();
        serde_json::to_writer(&mut counted, value)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("encode: {e}")))?;
        Ok(counted.0)
    }
}

/// A scratch buffer kept this large at most between encodes.
/// The payload bytes themselves, for a message that holds its own encoding (a binary
/// game frame, an image): `#[message(codec = zlink::Raw)]` on a type that converts from
/// [`Bytes`] and reads as bytes. STREAM clients see codec Raw (0).
#[derive(Debug, Clone, Copy, Default)]
pub struct Raw;

impl<T: From<Bytes> + AsRef<[u8]>> Codec<T> for Raw {
    fn encode(value: &T) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(value.as_ref()))
    }

    fn decode(bytes: &[u8]) -> Result<T> {
        Ok(T::from(Bytes::copy_from_slice(bytes)))
    }

    const STREAM_CODEC: Option<u8> = Some(0);

    fn encoded_len(value: &T) -> Result<usize> {
        Ok(value.as_ref().len())
    }
}

const SCRATCH_KEEP: usize = 64 * 1024;

thread_local! {
    /// Where [`cbor_encode`] serialises before copying out the exact bytes.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Encodes a value as CBOR.
pub fn cbor_encode<T: Serialize>(value: &T) -> Result<Bytes> {
    let encode = |out: &mut Vec<u8>| {
        ciborium::into_writer(value, out)
            .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("encode: {e}")))
    };
    // Growing a fresh buffer costs a realloc per doubling, and glibc's realloc always takes
    // the arena lock, which the other workers contend for while they free this thread's
    // buffers. The thread's scratch has grown already: one exact allocation.
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut out) => {
            out.clear();
            let encoded = encode(&mut out).map(|()| Bytes::copy_from_slice(&out));
            if out.capacity() > SCRATCH_KEEP {
                *out = Vec::new();
            }
            encoded
        }
        // A value whose serialisation encodes another one with this function.
        Err(_) => {
            let mut out = Vec::new();
            encode(&mut out).map(|()| Bytes::from(out))
        }
    })
}

/// Decodes a CBOR value; malformed input is a [`ErrorKind::ProtocolError`].
pub fn cbor_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    super::cbor_decode_bounded(bytes)
        .map_err(|e| Error::new(ErrorKind::ProtocolError, format!("decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Sample {
        name: String,
        count: u32,
    }

    fn sample() -> Sample {
        Sample {
            name: "seven".into(),
            count: 7,
        }
    }

    #[test]
    fn cbor_and_json_round_trip() {
        let cbor = <Cbor as Codec<Sample>>::encode(&sample()).expect("codec round trip");
        assert_eq!(
            <Cbor as Codec<Sample>>::decode(&cbor).expect("codec round trip"),
            sample()
        );
        let json = <Json as Codec<Sample>>::encode(&sample()).expect("codec round trip");
        assert_eq!(&json[..], br#"{"name":"seven","count":7}"#);
        assert_eq!(
            <Json as Codec<Sample>>::decode(&json).expect("codec round trip"),
            sample()
        );
    }

    #[test]
    fn malformed_payloads_are_protocol_errors() {
        let cbor: Result<Sample> = <Cbor as Codec<Sample>>::decode(&[0xff, 0x00]);
        assert!(cbor.unwrap_err().is(ErrorKind::ProtocolError));
        let json: Result<Sample> = <Json as Codec<Sample>>::decode(b"{\"name\":");
        assert!(json.unwrap_err().is(ErrorKind::ProtocolError));
    }

    /// Serialises as a byte string holding its inner value's own CBOR encoding.
    struct Nested(Sample);

    impl Serialize for Nested {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            let inner = cbor_encode(&self.0).map_err(serde::ser::Error::custom)?;
            s.serialize_bytes(&inner)
        }
    }

    #[test]
    fn the_scratch_buffer_gives_exact_independent_bytes_and_survives_nesting() {
        let big = vec![7u8; 100 * 1024];
        let first = cbor_encode(&big).expect("encodes");
        let small = cbor_encode(&sample()).expect("encodes");
        assert!(first.len() > 100 * 1024);
        assert_eq!(
            <Cbor as Codec<Sample>>::decode(&small).expect("decodes"),
            sample()
        );
        // The first result is not overwritten by the later encode.
        assert!(first[first.len() - 10..].iter().all(|b| *b == 7));
        let nested = cbor_encode(&Nested(sample())).expect("a nested encode falls back");
        let inner: serde_bytes_buf::Buf = cbor_decode(&nested).expect("a byte string");
        assert_eq!(
            <Cbor as Codec<Sample>>::decode(&inner.0).expect("decodes"),
            sample()
        );
    }

    mod serde_bytes_buf {
        /// A CBOR byte string, decoded.
        pub(super) struct Buf(pub(super) Vec<u8>);

        impl<'de> serde::Deserialize<'de> for Buf {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visit;
                impl serde::de::Visitor<'_> for Visit {
                    type Value = Buf;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a byte string")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<Buf, E> {
                        Ok(Buf(v.to_vec()))
                    }
                    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Buf, E> {
                        Ok(Buf(v))
                    }
                }
                d.deserialize_bytes(Visit)
            }
        }
    }

    /// A value with the shapes a message has: text, bytes, numbers, options, nesting and
    /// maps.
    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    struct Shaped {
        text: String,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
        numbers: Vec<i64>,
        maybe: Option<f64>,
        nested: Vec<Vec<String>>,
        map: std::collections::BTreeMap<String, u32>,
    }

    fn shaped() -> impl proptest::strategy::Strategy<Value = Shaped> {
        use proptest::prelude::*;
        (
            ".{0,40}",
            proptest::collection::vec(any::<u8>(), 0..300),
            proptest::collection::vec(any::<i64>(), 0..20),
            proptest::option::of(any::<f64>().prop_filter("finite", |f| f.is_finite())),
            proptest::collection::vec(proptest::collection::vec(".{0,8}", 0..4), 0..4),
            proptest::collection::btree_map(".{0,8}", any::<u32>(), 0..6),
        )
            .prop_map(|(text, bytes, numbers, maybe, nested, map)| Shaped {
                text,
                bytes,
                numbers,
                maybe,
                nested,
                map,
            })
    }

    proptest::proptest! {
        /// What a mailbox counts for a value handed over is what its encoding would hold.
        #[test]
        fn an_encoded_len_is_the_length_of_the_encoding(value in shaped()) {
            proptest::prop_assert_eq!(
                <Cbor as Codec<Shaped>>::encoded_len(&value).unwrap(),
                cbor_encode(&value).unwrap().len()
            );
            proptest::prop_assert_eq!(
                <Json as Codec<Shaped>>::encoded_len(&value).unwrap(),
                serde_json::to_vec(&value).unwrap().len()
            );
        }
    }
}
