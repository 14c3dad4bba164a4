//! What the wire chapter promises a peer written in another language, each checked with a
//! raw ZMTP peer over real TCP: admission and its rejects, `update`, and the answer to a
//! malformed message.

use std::time::Duration;

use bytes::Bytes;
use zlink::wire::{Admission, Command, ControlHeader, Envelope, RejectReason, PROTOCOL_MAJOR};
use zlink_testkit::{wait_until, RawZmtp};
use zlink_tests::*;

fn admission(rid: &str, generation: u64, revision: u64, channels: Vec<(String, u32)>) -> Admission {
    Admission {
        mesh_name: MESH.into(),
        rid: rid.into(),
        generation,
        revision,
        protocol: PROTOCOL_MAJOR,
        endpoint: String::new(),
        channels,
        max_message: None,
    }
}

fn control(command: Command, admission: Admission) -> Vec<Bytes> {
    Envelope::control(
        command,
        ControlHeader {
            admission: Some(admission),
            ..ControlHeader::default()
        },
    )
    .encode()
}

fn slices(frames: &[Bytes]) -> Vec<&[u8]> {
    frames.iter().map(|f| f.as_ref()).collect()
}

/// The reject reason `raw` receives next (failing if it gets anything else).
async fn reject_reason(raw: &mut RawZmtp) -> Option<RejectReason> {
    let answer = tokio::time::timeout(WAIT, raw.recv())
        .await
        .expect("an answer in time")
        .expect("a message");
    let frames: Vec<Bytes> = answer.into_iter().map(Bytes::from).collect();
    match Envelope::decode(&frames).expect("a decodable answer") {
        Envelope::Control {
            command: Command::Reject,
            header,
        } => header.reject,
        other => panic!("expected a reject, got {other:?}"),
    }
}

#[tokio::test]
async fn a_hello_with_an_empty_rid_or_on_the_route_mesh_the_nodes_own_rid_is_rejected_3() {
    let a = server("a", 100).await;
    for rid in ["", "a"] {
        let mut raw = RawZmtp::dealer(&a.endpoint())
            .await
            .expect("zmtp handshake");
        raw.send(&slices(&control(
            Command::Hello,
            admission(rid, 7, 1, vec![]),
        )))
        .await
        .expect("hello");
        assert_eq!(
            reject_reason(&mut raw).await,
            Some(RejectReason::IdentityMismatch),
            "rid {rid:?}"
        );
        assert!(raw.closed_within(WAIT).await, "closed after the reject");
    }
    a.shutdown().await;
}

#[tokio::test]
async fn a_hello_with_a_zero_generation_or_revision_is_rejected_11() {
    let a = server("a", 100).await;
    for (generation, revision) in [(0, 1), (7, 0)] {
        let mut raw = RawZmtp::dealer(&a.endpoint())
            .await
            .expect("zmtp handshake");
        let hello = control(
            Command::Hello,
            admission("raw", generation, revision, vec![]),
        );
        raw.send(&slices(&hello)).await.expect("hello");
        assert_eq!(
            reject_reason(&mut raw).await,
            Some(RejectReason::InvalidDescriptor)
        );
    }
    a.shutdown().await;
}

#[tokio::test]
async fn before_hello_a_probe_is_rejected_11_and_an_admit_closes_the_connection_unanswered() {
    let a = server("a", 100).await;
    let mut early = RawZmtp::dealer(&a.endpoint())
        .await
        .expect("zmtp handshake");
    let probe = Envelope::control(
        Command::LivenessProbe,
        ControlHeader {
            probe: 5,
            ..ControlHeader::default()
        },
    )
    .encode();
    early.send(&slices(&probe)).await.expect("probe");
    assert_eq!(
        reject_reason(&mut early).await,
        Some(RejectReason::InvalidDescriptor)
    );
    let mut backwards = RawZmtp::dealer(&a.endpoint())
        .await
        .expect("zmtp handshake");
    backwards
        .send(&slices(&control(
            Command::Admit,
            admission("raw", 7, 1, vec![]),
        )))
        .await
        .expect("admit");
    assert!(
        backwards.closed_within(WAIT).await,
        "an admit sent to a listener closes the connection"
    );
    a.shutdown().await;
}

#[tokio::test]
async fn a_head_over_64_kib_before_admission_is_rejected_11() {
    let a = server("a", 100).await;
    let mut raw = RawZmtp::dealer(&a.endpoint())
        .await
        .expect("zmtp handshake");
    // A hello whose one frame is 100 KiB: within the 256 KiB pre-admission cap, over the
    // largest head zlink decodes.
    let mut hello = control(Command::Hello, admission("raw", 7, 1, vec![]))[0].to_vec();
    hello.resize(100 * 1024, 0);
    raw.send(&[&hello]).await.expect("hello");
    assert_eq!(
        reject_reason(&mut raw).await,
        Some(RejectReason::InvalidDescriptor)
    );
    a.shutdown().await;
}

#[tokio::test]
async fn an_update_replaces_the_channels_only_with_a_higher_rev_and_another_gen_closes_the_connection(
) {
    let a = server("a", 100).await;
    let mut raw = RawZmtp::dealer(&a.endpoint())
        .await
        .expect("zmtp handshake");
    let chs = |weight| vec![("prices".to_string(), weight)];
    raw.send(&slices(&control(
        Command::Hello,
        admission("raw", 7, 1, chs(100)),
    )))
    .await
    .expect("hello");
    let admit: Vec<Bytes> = raw
        .recv()
        .await
        .expect("admit")
        .into_iter()
        .map(Bytes::from)
        .collect();
    assert_eq!(Envelope::decode(&admit).unwrap().command(), Command::Admit);
    let weight_seen = || {
        a.nodes()
            .peers()
            .into_iter()
            .find(|p| p.rid == "raw")
            .and_then(|p| p.channels.first().map(|(_, w)| *w))
    };
    wait_until(WAIT, "a admitted raw", || async {
        weight_seen() == Some(100)
    })
    .await;
    raw.send(&slices(&control(
        Command::Update,
        admission("raw", 7, 3, chs(0)),
    )))
    .await
    .expect("update");
    wait_until(WAIT, "the update applied", || async {
        weight_seen() == Some(0)
    })
    .await;
    // A stale rev is ignored; a probe's ack on the same connection shows it was read.
    raw.send(&slices(&control(
        Command::Update,
        admission("raw", 7, 2, chs(50)),
    )))
    .await
    .expect("stale update");
    zlink_tests::raw_peer::envelopes_before_probe_ack(&mut raw, 9).await;
    assert_eq!(weight_seen(), Some(0), "a stale rev changes nothing");
    // Another lifecycle generation in an update closes the connection.
    raw.send(&slices(&control(
        Command::Update,
        admission("raw", 8, 4, chs(100)),
    )))
    .await
    .expect("forged update");
    assert!(raw.closed_within(WAIT).await);
    a.shutdown().await;
}

#[tokio::test]
async fn a_reject_is_followed_by_the_close_within_a_moment() {
    let a = server("a", 100).await;
    let mut raw = RawZmtp::dealer(&a.endpoint())
        .await
        .expect("zmtp handshake");
    let mut wrong = admission("raw", 7, 1, vec![]);
    wrong.protocol = 9;
    raw.send(&slices(&control(Command::Hello, wrong)))
        .await
        .expect("hello");
    assert_eq!(
        reject_reason(&mut raw).await,
        Some(RejectReason::ProtocolVersionUnsupported)
    );
    assert!(raw.closed_within(Duration::from_secs(1)).await);
    a.shutdown().await;
}
