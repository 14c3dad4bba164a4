//! What raw ZMTP peers in the hostile-peer and wire tests read: whole zlink envelopes,
//! and everything that arrives before the answer to a liveness probe.

use bytes::Bytes;
use zlink::wire::{Command, ControlHeader, Envelope};
use zlink_testkit::RawZmtp;

use crate::WAIT;

/// The next message `raw` receives, as frames.
pub async fn next_frames(raw: &mut RawZmtp) -> Vec<Bytes> {
    raw.recv()
        .await
        .expect("a message")
        .into_iter()
        .map(Bytes::from)
        .collect()
}

/// Sends a liveness probe `probe` and returns every envelope `raw` received before its
/// ack. The node answers on the same connection, behind whatever it queued for it
/// before, so what is not in the list was never sent before the probe.
pub async fn envelopes_before_probe_ack(raw: &mut RawZmtp, probe: u64) -> Vec<Envelope> {
    let ping = Envelope::control(
        Command::LivenessProbe,
        ControlHeader {
            probe,
            ..ControlHeader::default()
        },
    )
    .encode();
    let frames: Vec<&[u8]> = ping.iter().map(|f| f.as_ref()).collect();
    raw.send(&frames).await.expect("probe");
    let mut before = Vec::new();
    tokio::time::timeout(WAIT, async {
        loop {
            let message = next_frames(raw).await;
            match Envelope::decode(&message) {
                Ok(Envelope::Control {
                    command: Command::LivenessAck,
                    header,
                }) if header.probe == probe => return,
                Ok(envelope) => before.push(envelope),
                Err(_) => {}
            }
        }
    })
    .await
    .expect("the probe's ack in time");
    before
}

/// A raw DEALER admitted to `endpoint` in [`MESH`](crate::MESH) as `rid`, advertising
/// `channels` (Server roles with their weights).
pub async fn admitted(endpoint: &str, rid: &str, channels: Vec<(String, u32)>) -> RawZmtp {
    let mut raw = RawZmtp::dealer(endpoint).await.expect("zmtp handshake");
    let hello = Envelope::control(
        Command::Hello,
        ControlHeader {
            admission: Some(zlink::wire::Admission {
                mesh_name: crate::MESH.into(),
                rid: rid.into(),
                generation: 7,
                revision: 1,
                protocol: zlink::wire::PROTOCOL_MAJOR,
                endpoint: String::new(),
                channels,
                max_message: None,
            }),
            ..ControlHeader::default()
        },
    )
    .encode();
    let frames: Vec<&[u8]> = hello.iter().map(|f| f.as_ref()).collect();
    raw.send(&frames).await.expect("hello");
    let admit = next_frames(&mut raw).await;
    assert_eq!(Envelope::decode(&admit).unwrap().command(), Command::Admit);
    raw
}

/// A Logical Multicast record (command 23) as its parts say (`topic: None` leaves the
/// topic out, which no receiver accepts).
pub fn multicast_envelope(
    correlation: u64,
    channel: &str,
    topic: Option<&str>,
    packet: &str,
    payload: Bytes,
) -> Envelope {
    use zlink::wire::{CallHead, CallMessage, Metadata, WireName};
    Envelope::Call(CallMessage {
        command: Command::LogicalMulticast,
        head: CallHead {
            correlation,
            operation: 1,
            deadline_ms: 0,
            hops: 0,
            target: WireName::from_text(channel),
            packet: WireName::from_text(packet),
            fence: None,
            session: None,
            topic: topic.map(WireName::from_text),
            push: None,
        },
        metadata: Metadata::new(),
        payload,
    })
}
