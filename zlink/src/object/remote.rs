//! The records of the object control commands between nodes: a creation on the node
//! placement chose (command 47) and a close on a Spot's owner (command 48). CBOR, bounded
//! like every other wire record.

use serde::{Deserialize, Serialize};

/// What the creating node asks the placed node to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CreateRequest {
    /// The creation request for `on_create`.
    #[serde(with = "serde_bytes")]
    pub(crate) request: Vec<u8>,
    /// `create` (an existing Spot is `AlreadyExists`) rather than `get_or_create`.
    pub(crate) must_be_new: bool,
}

/// How one creation attempt on the placed node ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum CreateReply {
    /// Created and Ready, with `on_create`'s reply.
    Created {
        generation: u64,
        #[serde(with = "serde_bytes")]
        reply: Vec<u8>,
    },
    /// Declined by `on_create`; nothing stays.
    Rejected {
        #[serde(with = "serde_bytes")]
        reply: Vec<u8>,
    },
    /// Another attempt holds the ID: the creator reads the authority again.
    Lost,
}

impl CreateRequest {
    pub(crate) fn encode(&self) -> crate::Result<bytes::Bytes> {
        crate::wire::cbor_encode(self)
    }
    pub(crate) fn decode(bytes: &[u8]) -> crate::Result<Self> {
        crate::wire::cbor_decode(bytes)
    }
}

impl CreateReply {
    pub(crate) fn encode(&self) -> crate::Result<bytes::Bytes> {
        crate::wire::cbor_encode(self)
    }
    pub(crate) fn decode(bytes: &[u8]) -> crate::Result<Self> {
        crate::wire::cbor_decode(bytes)
    }
}

/// The close record: the exact incarnation to close.
pub(crate) fn encode_generation(generation: u64) -> bytes::Bytes {
    bytes::Bytes::copy_from_slice(&generation.to_be_bytes())
}

/// Reads a generation record (a close's, a creation-settled wait's); anything but 8 bytes
/// is a protocol error.
pub(crate) fn decode_generation(bytes: &[u8]) -> crate::Result<u64> {
    let raw: [u8; 8] = bytes.try_into().map_err(|_| {
        crate::Error::new(
            crate::ErrorKind::ProtocolError,
            format!("a generation record is 8 bytes, not {}", bytes.len()),
        )
    })?;
    Ok(u64::from_be_bytes(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_garbage_is_an_error() {
        let request = CreateRequest {
            request: vec![1, 2],
            must_be_new: true,
        };
        assert_eq!(
            CreateRequest::decode(&request.encode().unwrap()).unwrap(),
            request
        );
        for reply in [
            CreateReply::Created {
                generation: 4,
                reply: b"hi".to_vec(),
            },
            CreateReply::Rejected { reply: vec![] },
            CreateReply::Lost,
        ] {
            assert_eq!(
                CreateReply::decode(&reply.encode().unwrap()).unwrap(),
                reply
            );
        }
        assert!(CreateReply::decode(b"\xff\xff").is_err());
        assert_eq!(decode_generation(&encode_generation(9)).unwrap(), 9);
        assert!(decode_generation(b"short").is_err());
    }
}
