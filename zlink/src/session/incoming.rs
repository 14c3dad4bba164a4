//! One application packet from a client, as a session handler gets it.

use bytes::Bytes;

use super::packet::{Flow, StreamCodec};
use super::peer::ReplyToken;
use crate::{Error, ErrorKind, Message, Metadata, Result};

/// A Send or Request packet from the client.
#[derive(Debug)]
pub struct Packet {
    pub(crate) name: String,
    pub(crate) codec: StreamCodec,
    pub(crate) metadata: Metadata,
    pub(crate) payload: Bytes,
    pub(crate) flow: Option<Flow>,
    pub(crate) request_seq: Option<u64>,
    pub(crate) reply: Option<ReplyToken>,
}

impl Packet {
    /// The packet name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the payload is encoded.
    pub fn codec(&self) -> StreamCodec {
        self.codec
    }

    /// The client's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The payload bytes.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The flow the client named, if any.
    pub fn flow(&self) -> Option<&Flow> {
        self.flow.as_ref()
    }

    /// Whether the client expects an answer.
    pub fn is_request(&self) -> bool {
        self.request_seq.is_some()
    }

    /// The client's request sequence, for a request.
    pub fn request_seq(&self) -> Option<u64> {
        self.request_seq
    }

    /// Takes the request's reply token (once): answer with it, or hand it on. `None` for a
    /// Send packet or once taken.
    pub fn take_reply(&mut self) -> Option<ReplyToken> {
        self.reply.take()
    }

    /// Decodes the payload as `M`, whose codec must be the packet's.
    pub fn decode<M: Message>(&self) -> Result<M> {
        let expected = super::codec_of::<M>()?;
        if expected != self.codec {
            return Err(Error::new(
                ErrorKind::ProtocolError,
                format!(
                    "packet {} came as {:?}, its handler reads {:?}",
                    self.name, self.codec, expected
                ),
            ));
        }
        M::decode(&self.payload)
    }
}
