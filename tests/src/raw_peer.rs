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
