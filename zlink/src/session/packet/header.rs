//! The header and the whole packet: `0xF2 | kind | codec | flags | [request_seq u64] |
//! name (u8 len + UTF-8) | [metadata (u16 len + block)] | [correlation (u8 len + bytes)] |
//! [flow_id 36 B + flow_origin u8]`, each optional part present when its flag is set.

use bytes::{BufMut, Bytes, BytesMut};

use super::{flags, stream_metadata, Flow, WireKind, WirePacket, FLOW_ID_LEN, MARKER, PREFIX_LEN};

/// Why a packet could not be read. The session answers a readable request with an Error
/// packet and ends the session on anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PacketError {
    /// The request the packet was, when that much was readable.
    pub(crate) request_seq: Option<u64>,
    /// What is wrong, for the Error packet and the log.
    pub(crate) detail: String,
}

impl PacketError {
    fn new(detail: impl Into<String>) -> Self {
        PacketError {
            request_seq: None,
            detail: detail.into(),
        }
    }
}

/// Decodes one packet from `body`, the `header_len` header bytes followed by the payload
/// (the prefix already checked against the limits and taken off).
pub(crate) fn decode_packet(body: Bytes, header_len: usize) -> Result<WirePacket, PacketError> {
    if header_len > body.len() {
        return Err(PacketError::new(format!(
            "the header of {header_len} bytes is longer than the {} bytes received",
            body.len()
        )));
    }
    let mut at = Cursor {
        bytes: &body[..header_len],
        read: 0,
    };
    let fixed = at.take(4).map_err(PacketError::new)?;
    if fixed[0] != MARKER {
        return Err(PacketError::new(format!(
            "the header starts with {:#04x}, not the marker 0xf2",
            fixed[0]
        )));
    }
    let (kind_code, codec, flag_bits) = (fixed[1], fixed[2], fixed[3]);
    let request_seq = if flag_bits & flags::REQUEST_SEQ != 0 {
        let seq = at.take(8).map_err(PacketError::new)?;
        match u64::from_be_bytes(seq.try_into().unwrap_or([0; 8])) {
            // No request to answer: a sequence is never 0.
            0 => return Err(PacketError::new("a request sequence is never 0")),
            seq => Some(seq),
        }
    } else {
        None
    };
    // From here on the request is known, so what is wrong can be answered to it.
    let fail = |detail: String| PacketError {
        request_seq,
        detail,
    };
    let Some(kind) = WireKind::from_code(kind_code) else {
        return Err(fail(format!(
            "packet kind {kind_code} is undefined (1..=5)"
        )));
    };
    if flag_bits & !flags::DEFINED != 0 {
        return Err(fail(format!(
            "header flags {flag_bits:#04x} set undefined bits {:#04x}",
            flag_bits & !flags::DEFINED
        )));
    }
    if flag_bits & flags::COMPRESSED != 0 {
        return Err(fail("compressed packets are not spoken here".into()));
    }
    let name_len = usize::from(at.take(1).map_err(fail)?[0]);
    let name = std::str::from_utf8(at.take(name_len).map_err(fail)?)
        .map_err(|_| fail("the packet name is not UTF-8".into()))?
        .to_string();
    let metadata = if flag_bits & flags::METADATA != 0 {
        let len = at.take(2).map_err(fail)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        stream_metadata::decode(at.take(len).map_err(fail)?).map_err(fail)?
    } else {
        crate::Metadata::new()
    };
    let correlation = if flag_bits & flags::CORRELATION != 0 {
        let len = usize::from(at.take(1).map_err(fail)?[0]);
        let start = at.read;
        at.take(len).map_err(fail)?;
        Some(body.slice(start..start + len))
    } else {
        None
    };
    let flow = if flag_bits & flags::FLOW != 0 {
        let id = at.take(FLOW_ID_LEN).map_err(fail)?;
        let id = std::str::from_utf8(id)
            .ok()
            .filter(|id| id.is_ascii())
            .ok_or_else(|| fail("the flow ID is not ASCII".into()))?
            .to_string();
        let origin = at.take(1).map_err(fail)?[0];
        Some(Flow { id, origin })
    } else {
        None
    };
    if at.read != header_len {
        return Err(fail(format!(
            "{} bytes follow the header's last field",
            header_len - at.read
        )));
    }
    Ok(WirePacket {
        kind,
        codec,
        request_seq,
        name,
        metadata,
        correlation,
        flow,
        payload: body.slice(header_len..),
    })
}

/// Encodes `packet`, prefix included. Fails when a field is longer than its length field
/// (a name over 255 bytes, a payload over 4 GiB).
pub(crate) fn encode_packet(packet: &WirePacket) -> Result<Bytes, String> {
    if packet.name.len() > usize::from(u8::MAX) {
        return Err(format!(
            "packet name of {} bytes exceeds 255",
            packet.name.len()
        ));
    }
    let correlation_len = packet.correlation.as_ref().map_or(0, |c| c.len());
    if correlation_len > usize::from(u8::MAX) {
        return Err(format!(
            "correlation of {correlation_len} bytes exceeds 255"
        ));
    }
    if let Some(flow) = &packet.flow {
        if flow.id.len() != FLOW_ID_LEN {
            return Err(format!(
                "a flow ID is {FLOW_ID_LEN} bytes, not {}",
                flow.id.len()
            ));
        }
    }
    let payload_len = u32::try_from(packet.payload.len())
        .map_err(|_| format!("payload of {} bytes exceeds 4 GiB", packet.payload.len()))?;
    let mut flag_bits = 0u8;
    let mut header_len = 4 + 1 + packet.name.len();
    if packet.request_seq.is_some() {
        flag_bits |= flags::REQUEST_SEQ;
        header_len += 8;
    }
    if !packet.metadata.is_empty() {
        flag_bits |= flags::METADATA;
        header_len += 2 + stream_metadata::encoded_len(&packet.metadata);
    }
    if packet.correlation.is_some() {
        flag_bits |= flags::CORRELATION;
        header_len += 1 + correlation_len;
    }
    if packet.flow.is_some() {
        flag_bits |= flags::FLOW;
        header_len += FLOW_ID_LEN + 1;
    }
    // Metadata is at most 1024 bytes, so the header fits its u16 length.
    let mut out = BytesMut::with_capacity(PREFIX_LEN + header_len + packet.payload.len());
    out.put_u16(header_len as u16);
    out.put_u32(payload_len);
    out.put_slice(&[MARKER, packet.kind as u8, packet.codec, flag_bits]);
    if let Some(seq) = packet.request_seq {
        out.put_u64(seq);
    }
    out.put_u8(packet.name.len() as u8);
    out.put_slice(packet.name.as_bytes());
    if !packet.metadata.is_empty() {
        out.put_u16(stream_metadata::encoded_len(&packet.metadata) as u16);
        stream_metadata::encode(&packet.metadata, &mut out);
    }
    if let Some(correlation) = &packet.correlation {
        out.put_u8(correlation.len() as u8);
        out.put_slice(correlation);
    }
    if let Some(flow) = &packet.flow {
        out.put_slice(flow.id.as_bytes());
        out.put_u8(flow.origin);
    }
    out.put_slice(&packet.payload);
    Ok(out.freeze())
}

struct Cursor<'a> {
    bytes: &'a [u8],
    read: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let rest = &self.bytes[self.read..];
        if rest.len() < n {
            return Err(format!(
                "the header is truncated: {n} more bytes expected at offset {}, {} left",
                self.read,
                rest.len()
            ));
        }
        self.read += n;
        Ok(&rest[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::packet::StreamCodec;

    fn decode_whole(bytes: &Bytes) -> Result<WirePacket, PacketError> {
        let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
        decode_packet(bytes.slice(PREFIX_LEN..), header_len)
    }

    #[test]
    fn a_packet_with_every_optional_part_round_trips() {
        let mut packet = WirePacket::new(
            WireKind::Request,
            StreamCodec::Json,
            "Login",
            Bytes::from_static(b"{\"user\":\"ada\"}"),
        );
        packet.request_seq = Some(7);
        packet
            .metadata
            .insert("trace", "t-1")
            .expect("small metadata");
        packet.correlation = Some(Bytes::from_static(b"corr"));
        packet.flow = Some(Flow {
            id: "123e4567-e89b-12d3-a456-426614174000".into(),
            origin: 3,
        });
        let bytes = encode_packet(&packet).expect("encodable");
        assert_eq!(decode_whole(&bytes), Ok(packet));
    }

    #[test]
    fn the_prefix_is_big_endian_header_length_then_payload_size() {
        let packet = WirePacket::new(
            WireKind::Send,
            StreamCodec::Raw,
            "A",
            Bytes::from_static(b"xyz"),
        );
        let bytes = encode_packet(&packet).expect("encodable");
        assert_eq!(&bytes[..6], &[0, 6, 0, 0, 0, 3]);
        assert_eq!(&bytes[6..12], &[0xF2, 1, 0, 0, 1, b'A']);
    }

    #[test]
    fn an_undefined_flag_on_a_request_is_answered_to_its_sequence() {
        let mut packet = WirePacket::new(WireKind::Request, StreamCodec::Json, "A", Bytes::new());
        packet.request_seq = Some(9);
        let mut bytes = encode_packet(&packet).expect("encodable").to_vec();
        bytes[9] |= 0x80;
        let error = decode_whole(&Bytes::from(bytes)).expect_err("undefined flag");
        assert_eq!(error.request_seq, Some(9));
        assert!(
            error.detail.contains("undefined bits 0x80"),
            "{}",
            error.detail
        );
    }

    #[test]
    fn a_duplicate_metadata_key_is_a_decode_error() {
        let mut header = vec![0xF2, 1, 1, flags::METADATA, 1, b'A'];
        let block = [2, 1, b'k', 0, 1, b'v', 1, b'k', 0, 1, b'w'];
        header.extend_from_slice(&(block.len() as u16).to_be_bytes());
        header.extend_from_slice(&block);
        let error = decode_packet(Bytes::from(header.clone()), header.len()).expect_err("dup");
        assert!(error.detail.contains("given twice"), "{}", error.detail);
    }

    #[test]
    fn a_wrong_marker_and_a_truncated_header_are_errors_not_panics() {
        assert!(decode_packet(Bytes::from_static(&[0xF1, 1, 1, 0, 0]), 5).is_err());
        assert!(decode_packet(Bytes::from_static(&[0xF2, 1, 1, 0x01, 0, 0]), 6).is_err());
        assert!(decode_packet(Bytes::from_static(&[0xF2, 1]), 2).is_err());
        assert!(decode_packet(Bytes::from_static(&[0xF2, 1, 1, 0, 5, b'a']), 6).is_err());
    }
}
