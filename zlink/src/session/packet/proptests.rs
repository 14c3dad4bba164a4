//! Property tests of the STREAM decoders: any bytes decode to a packet or an error, never
//! a panic, and what the encoder writes decodes to what it was given.

use bytes::Bytes;
use proptest::prelude::*;

use super::*;

fn arb_packet() -> impl Strategy<Value = WirePacket> {
    (
        prop_oneof![
            Just(WireKind::Send),
            Just(WireKind::Request),
            Just(WireKind::Response),
            Just(WireKind::Error),
            Just(WireKind::Control)
        ],
        0u8..=1,
        proptest::option::of(1u64..),
        "[a-zA-Z.]{0,40}",
        proptest::collection::btree_map("[a-z]{1,8}", "[ -~]{0,20}", 0..6),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(("[0-9a-f-]{36}", any::<u8>())),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(kind, codec, seq, name, meta, corr, flow, payload)| {
            let mut metadata = crate::Metadata::new();
            for (k, v) in meta {
                let _ = metadata.insert(k, v);
            }
            WirePacket {
                kind,
                codec,
                request_seq: seq,
                name,
                metadata,
                correlation: corr.map(Bytes::from),
                flow: flow.map(|(id, origin)| Flow { id, origin }),
                payload: Bytes::from(payload),
            }
        })
}

proptest! {
    #[test]
    fn every_encoded_packet_decodes_to_itself(packet in arb_packet()) {
        let bytes = encode_packet(&packet).expect("in bounds");
        let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
        let payload_len = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]) as usize;
        prop_assert_eq!(bytes.len(), PREFIX_LEN + header_len + payload_len);
        prop_assert_eq!(decode_packet(bytes.slice(PREFIX_LEN..), header_len), Ok(packet));
    }

    #[test]
    fn any_header_bytes_decode_or_fail_without_panicking(
        body in proptest::collection::vec(any::<u8>(), 0..400),
        header_len in 0usize..420,
    ) {
        let _ = decode_packet(Bytes::from(body), header_len);
    }

    #[test]
    fn a_mutated_packet_decodes_or_fails_without_panicking(
        packet in arb_packet(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = encode_packet(&packet).expect("in bounds").to_vec();
        let i = at.index(bytes.len() - PREFIX_LEN) + PREFIX_LEN;
        bytes[i] = byte;
        let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
        let _ = decode_packet(Bytes::from(bytes).slice(PREFIX_LEN..), header_len);
    }

    #[test]
    fn any_stream_of_bytes_reads_to_packets_or_an_error(
        stream in proptest::collection::vec(any::<u8>(), 0..2000),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let mut reader = PacketReader::new(&stream[..], 1024);
            let mut read = 0;
            while let Ok(packet) = reader.next().await {
                read += PREFIX_LEN + packet.body.len();
                prop_assert!(packet.body.len() <= 1024);
                let _ = decode_packet(packet.body, packet.header_len);
            }
            prop_assert!(read <= stream.len());
            Ok(())
        })?;
    }
}
