//! The STREAM packets the wire chapter spells out byte by byte are what a client reads
//! and writes: each decodes to the packet the text around it names.

use zlink_testkit::stream_client::{kind, StreamPacket};

/// The hex bytes of each ```text block after "Packets, byte by byte" (every two-digit
/// hex word before the annotation on each line).
fn dumped_packets() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/wire.md"))
        .unwrap();
    let section = &text[text
        .find("**Packets, byte by byte.**")
        .expect("the section")..];
    let mut packets = Vec::new();
    for block in section.split("```text\n").skip(1) {
        let block = &block[..block.find("```").unwrap()];
        let mut current: Vec<u8> = Vec::new();
        for line in block.lines() {
            if line.trim().is_empty() {
                if !current.is_empty() {
                    packets.push(std::mem::take(&mut current));
                }
                continue;
            }
            for word in line.split_whitespace() {
                match (word.len(), u8::from_str_radix(word, 16)) {
                    (2, Ok(byte)) => current.push(byte),
                    _ => break,
                }
            }
        }
        if !current.is_empty() {
            packets.push(current);
        }
    }
    packets
}

fn decode(bytes: &[u8]) -> StreamPacket {
    let header_len = usize::from(u16::from_be_bytes([bytes[0], bytes[1]]));
    let payload_len = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]) as usize;
    assert_eq!(bytes.len(), 6 + header_len + payload_len, "{bytes:02x?}");
    StreamPacket::decode(&bytes[6..6 + header_len], bytes[6 + header_len..].to_vec()).unwrap()
}

#[test]
fn the_wire_chapters_byte_dumps_are_the_packets_it_names() {
    let packets: Vec<StreamPacket> = dumped_packets().iter().map(|b| decode(b)).collect();
    let shape: Vec<(u8, Option<u64>, &str)> = packets
        .iter()
        .map(|p| (p.kind, p.request_seq, p.name.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            (kind::SEND, None, "note"),
            (kind::REQUEST, Some(1), "where"),
            (kind::RESPONSE, Some(1), ""),
            (kind::ERROR, Some(1), ""),
            (kind::CONTROL, None, "$zlink.heartbeat.ping"),
            (kind::CONTROL, None, "session-closing"),
        ]
    );
    assert_eq!(packets[0].value(), serde_json::json!({ "text": "hi" }));
    assert_eq!(packets[2].value(), serde_json::json!({ "x": 3, "y": 4 }));
    assert_eq!(packets[3].error().map(|e| e.0), Some(0));
    assert_eq!(packets[5].closing().map(|c| c.0), Some(4));
    // Each encodes back to the same bytes.
    for (packet, bytes) in packets.iter().zip(dumped_packets()) {
        assert_eq!(packet.encode(), bytes);
    }
}
