//! Decoder robustness: random and mutated input never panics and is reported as a
//! protocol error; valid envelopes round-trip. Runs as a bounded property test in CI.

use bytes::Bytes;
use proptest::prelude::*;
use zlink::wire::{
    Admission, CallHead, CallMessage, Command, ControlHeader, Envelope, Metadata, ReplyOutcome,
    RouteFence, WireName, PROTOCOL_MAJOR,
};

fn request_envelope(payload: Vec<u8>, with_metadata: bool) -> Envelope {
    let mut metadata = Metadata::new();
    if with_metadata {
        metadata.insert("trace", "abc").unwrap();
    }
    Envelope::Call(CallMessage {
        command: Command::ChannelRequest,
        head: CallHead {
            correlation: 42,
            operation: 1,
            deadline_ms: 30_000,
            hops: 0,
            target: WireName::from_text("echo"),
            packet: WireName::from_text("Echo"),
            fence: None,
            session: None,
            topic: None,
            push: None,
        },
        metadata,
        payload: Bytes::from(payload),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_frames_never_panic(frames in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..256), 0..4)) {
        let frames: Vec<Bytes> = frames.into_iter().map(Bytes::from).collect();
        let _ = Envelope::decode(&frames);
    }

    #[test]
    fn random_head_after_valid_prefix_never_panics(cmd in prop::sample::select(vec![1u8, 2, 3, 4, 5, 6, 16, 17, 18, 19, 20, 40]), flags in 0u8..2, body in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut head = vec![0x5A, 0x4D, PROTOCOL_MAJOR, cmd, flags];
        head.extend(body);
        let _ = Envelope::decode(&[Bytes::from(head), Bytes::from_static(b"\xa0"), Bytes::from_static(b"x")]);
    }

    #[test]
    fn mutated_valid_envelopes_never_panic(payload in prop::collection::vec(any::<u8>(), 0..64), flip in any::<prop::sample::Index>(), byte in any::<u8>(), frame in 0usize..3) {
        let mut frames = request_envelope(payload, true).encode();
        let target = frame.min(frames.len() - 1);
        let mut bytes = frames[target].to_vec();
        if !bytes.is_empty() {
            let i = flip.index(bytes.len());
            bytes[i] = byte;
        }
        frames[target] = Bytes::from(bytes);
        let _ = Envelope::decode(&frames);
    }

    #[test]
    fn valid_requests_roundtrip(payload in prop::collection::vec(any::<u8>(), 0..1024), md in any::<bool>()) {
        let env = request_envelope(payload, md);
        prop_assert_eq!(Envelope::decode(&env.encode()).unwrap(), env);
    }

    #[test]
    fn valid_replies_roundtrip(payload in prop::collection::vec(any::<u8>(), 0..256), kind in prop::option::of(0u8..=12), detail in ".{0,40}", refusal in prop::option::of(1u8..=2)) {
        let outcome = match kind {
            None => ReplyOutcome::Ok(Bytes::from(payload)),
            Some(kind) => ReplyOutcome::Failed { kind, detail, refusal },
        };
        let env = Envelope::Reply { correlation: 9, operation: 77, outcome };
        prop_assert_eq!(Envelope::decode(&env.encode()).unwrap(), env);
    }

    #[test]
    fn names_of_any_valid_length_roundtrip(channel in "[a-z]{1,255}", packet in "[A-Z]{1,255}") {
        let env = Envelope::Call(CallMessage {
            command: Command::ChannelSend,
            head: CallHead {
                correlation: 0,
                operation: 1,
                deadline_ms: 0,
                hops: 0,
                target: WireName::from_text(&channel),
                packet: WireName::from_text(&packet),
                fence: None,
                session: None,
                topic: None,
                push: None,
            },
            metadata: Metadata::new(),
            payload: Bytes::new(),
        });
        prop_assert_eq!(Envelope::decode(&env.encode()).unwrap(), env);
    }
}

proptest! {
    #[test]
    fn spot_commands_carry_their_id_and_route_fence(
        id in "[a-z0-9-]{1,255}",
        object_generation in 1u64..,
        owner_generation in 1u64..,
        lease_generation in 1u64..,
        request in any::<bool>(),
    ) {
        let env = Envelope::Call(CallMessage {
            command: if request { Command::SpotRequest } else { Command::SpotSend },
            head: CallHead {
                correlation: u64::from(request),
                operation: 1,
                deadline_ms: 0,
                hops: 0,
                target: WireName::from_text(&id),
                packet: WireName::from_text("Join"),
                fence: Some(RouteFence { object_generation, owner_generation, lease_generation }),
                session: None,
                topic: None,
                push: None,
            },
            metadata: Metadata::new(),
            payload: Bytes::new(),
        });
        prop_assert_eq!(Envelope::decode(&env.encode()).unwrap(), env);
    }

    #[test]
    fn a_spot_head_cut_or_padded_anywhere_is_refused(cut in 0usize..52, pad in any::<bool>()) {
        let env = Envelope::Call(CallMessage {
            command: Command::SpotSend,
            head: CallHead {
                correlation: 0,
                operation: 1,
                deadline_ms: 0,
                hops: 0,
                target: WireName::from_text("room-7"),
                packet: WireName::from_text("Say"),
                fence: Some(RouteFence { object_generation: 2, owner_generation: 3, lease_generation: 4 }),
                session: None,
                topic: None,
                push: None,
            },
            metadata: Metadata::new(),
            payload: Bytes::new(),
        });
        let mut frames = env.encode();
        let mut head = frames[0].to_vec();
        if pad {
            head.push(0);
        } else {
            head.truncate(head.len().saturating_sub(cut + 1));
        }
        frames[0] = Bytes::from(head);
        prop_assert!(Envelope::decode(&frames).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn a_multicast_record_carries_its_channel_topic_and_packet(
        channel in "[a-z0-9.-]{1,255}",
        topic in "[a-z0-9./-]{1,255}",
        packet in "[A-Za-z]{1,64}",
        payload in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let env = multicast(&channel, Some(&topic), &packet, Bytes::from(payload));
        prop_assert_eq!(Envelope::decode(&env.encode()).unwrap(), env);
    }

    #[test]
    fn a_multicast_head_cut_padded_or_with_a_lying_topic_length_is_refused(
        cut in 0usize..40,
        pad in any::<bool>(),
        claimed in 0u8..,
    ) {
        let mut frames = multicast("rooms", Some("announce"), "News", Bytes::new()).encode();
        let mut head = frames[0].to_vec();
        let at = head.len() - "announce".len() - 1;
        if claimed as usize != "announce".len() {
            let mut lying = head.clone();
            lying[at] = claimed;
            let mut lying_frames = frames.clone();
            lying_frames[0] = Bytes::from(lying);
            prop_assert!(Envelope::decode(&lying_frames).is_err());
        }
        if pad {
            head.push(0);
        } else {
            head.truncate(head.len().saturating_sub(cut + 1));
        }
        frames[0] = Bytes::from(head);
        prop_assert!(Envelope::decode(&frames).is_err());
    }
}

fn multicast(channel: &str, topic: Option<&str>, packet: &str, payload: Bytes) -> Envelope {
    zlink_tests::raw_peer::multicast_envelope(0, channel, topic, packet, payload)
}

#[test]
fn a_multicast_record_without_a_topic_or_a_channel_is_refused() {
    assert!(Envelope::decode(&multicast("rooms", None, "News", Bytes::new()).encode()).is_err());
    assert!(Envelope::decode(&multicast("", Some("t"), "News", Bytes::new()).encode()).is_err());
}

#[test]
fn a_spot_command_without_an_id_or_with_a_zero_fence_is_refused() {
    let spot = |target: &str, object_generation: u64, owner_generation: u64| {
        Envelope::Call(CallMessage {
            command: Command::SpotSend,
            head: CallHead {
                correlation: 0,
                operation: 1,
                deadline_ms: 0,
                hops: 0,
                target: WireName::from_text(target),
                packet: WireName::from_text("Say"),
                fence: Some(RouteFence {
                    object_generation,
                    owner_generation,
                    lease_generation: 1,
                }),
                session: None,
                topic: None,
                push: None,
            },
            metadata: Metadata::new(),
            payload: Bytes::new(),
        })
        .encode()
    };
    assert!(Envelope::decode(&spot("room", 1, 1)).is_ok());
    assert!(Envelope::decode(&spot("", 1, 1)).is_err());
    assert!(Envelope::decode(&spot("room", 1, 0)).is_err());
    assert!(Envelope::decode(&spot("room", 0, 1)).is_err());
}

#[test]
fn huge_declared_lengths_are_refused_without_allocating_them() {
    // A control record whose CBOR declares a 2^32-byte text string inside a tiny frame.
    let mut head = vec![0x5A, 0x4D, PROTOCOL_MAJOR, 1, 0x00];
    head.extend([0xA1, 0x62, b'a', b'd', 0x7B, 0, 0, 0, 1, 0, 0, 0, 0]);
    let err = Envelope::decode(&[Bytes::from(head)]).unwrap_err();
    assert!(err.reason.contains("header"), "{err}");
    // An oversized metadata frame is refused by its length alone.
    let env = request_envelope(vec![1], true);
    let mut frames = env.encode();
    frames[1] = Bytes::from(vec![0xA0; 2000]);
    assert!(Envelope::decode(&frames)
        .unwrap_err()
        .reason
        .contains("exceeds"));
}

#[test]
fn call_head_name_lengths_must_match_the_frame() {
    let good = request_envelope(vec![1], false).encode();
    // Declares a 200-byte packet name the frame does not hold.
    let mut head = good[0].to_vec();
    head[27] = 200;
    let err = Envelope::decode(&[Bytes::from(head), good[1].clone()]).unwrap_err();
    assert!(err.reason.contains("length"), "{err}");
    assert_eq!(err.correlation, Some(42));
    // Trailing bytes after the names are refused too.
    let mut head = good[0].to_vec();
    head.push(b'x');
    assert!(Envelope::decode(&[Bytes::from(head), good[1].clone()]).is_err());
    // A name that is not UTF-8.
    let mut head = good[0].to_vec();
    let last = head.len() - 1;
    head[last] = 0xFF;
    let err = Envelope::decode(&[Bytes::from(head), good[1].clone()]).unwrap_err();
    assert!(err.reason.contains("UTF-8"), "{err}");
}

#[test]
fn decoder_rejects_bad_prefix_flags_and_frame_counts() {
    let good = request_envelope(vec![1, 2, 3], false).encode();
    let mut bad_magic = good.clone();
    bad_magic[0] = Bytes::from([&[0u8, 0][..], &good[0][2..]].concat());
    assert!(Envelope::decode(&bad_magic)
        .unwrap_err()
        .reason
        .contains("magic"));
    let mut bad_version = good.to_vec();
    bad_version[0] = Bytes::from([&good[0][..2], &[9u8][..], &good[0][3..]].concat());
    assert!(Envelope::decode(&bad_version)
        .unwrap_err()
        .reason
        .contains("version"));
    let mut bad_flag = good.to_vec();
    bad_flag[0] = Bytes::from([&good[0][..4], &[0x80u8][..], &good[0][5..]].concat());
    assert!(Envelope::decode(&bad_flag)
        .unwrap_err()
        .reason
        .contains("flags"));
    let missing_payload = &good[..1];
    let err = Envelope::decode(missing_payload).unwrap_err();
    assert_eq!(
        err.correlation,
        Some(42),
        "the correlation is kept so the receiver can reply"
    );
    let extra = [good.clone(), vec![Bytes::from_static(b"x")]].concat();
    assert!(Envelope::decode(&extra).is_err());
}

#[test]
fn reply_envelopes_carry_no_metadata_frame() {
    let reply = Envelope::Reply {
        correlation: 7,
        operation: 1,
        outcome: ReplyOutcome::Ok(Bytes::from_static(b"ok")),
    };
    let frames = reply.encode();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0][4] & 0x01, 0, "metadata flag clear");
    // A reply claiming metadata is malformed.
    let mut with_flag = frames.clone();
    with_flag[0] = Bytes::from([&frames[0][..4], &[0x01u8][..], &frames[0][5..]].concat());
    assert!(Envelope::decode(&with_flag).is_err());
    // An error reply carrying a payload is malformed; so is an unknown error kind.
    let failed = Envelope::Reply {
        correlation: 7,
        operation: 1,
        outcome: ReplyOutcome::Failed {
            kind: 4,
            detail: "nope".into(),
            refusal: None,
        },
    }
    .encode();
    assert_eq!(failed.len(), 1);
    assert!(Envelope::decode(&[failed[0].clone(), Bytes::from_static(b"x")]).is_err());
    // A refusal byte: flag 01 and exactly one byte after the detail, with a known number,
    // on an error reply only.
    let refused = Envelope::Reply {
        correlation: 7,
        operation: 1,
        outcome: ReplyOutcome::Failed {
            kind: 5,
            detail: "moved".into(),
            refusal: Some(zlink::Refusal::StaleRoute.code()),
        },
    }
    .encode();
    assert_eq!(refused[0][4], 0x01);
    assert_eq!(*refused[0].last().expect("a byte"), 1);
    assert!(Envelope::decode(&refused).is_ok());
    let truncated = Bytes::from(refused[0][..refused[0].len() - 1].to_vec());
    assert!(
        Envelope::decode(&[truncated]).is_err(),
        "flag 01 without its byte"
    );
    let mut unknown = refused[0].to_vec();
    *unknown.last_mut().expect("a byte") = 0xEE;
    assert!(
        Envelope::decode(&[Bytes::from(unknown)]).is_err(),
        "an unknown refusal"
    );
    let mut undefined = refused[0].to_vec();
    undefined[4] = 0x03;
    assert!(
        Envelope::decode(&[Bytes::from(undefined)]).is_err(),
        "flag 02 on a reply"
    );
    let mut unknown_kind = failed[0].to_vec();
    unknown_kind[21] = 13;
    assert!(Envelope::decode(&[Bytes::from(unknown_kind)]).is_err());
}

#[test]
fn admission_roundtrips() {
    let env = Envelope::control(
        Command::Hello,
        ControlHeader {
            admission: Some(Admission {
                mesh_name: "m".into(),
                rid: "a".into(),
                generation: 5,
                revision: 1,
                protocol: PROTOCOL_MAJOR,
                endpoint: "tcp://127.0.0.1:1".into(),
                channels: vec![("echo".into(), 100)],
                max_message: Some(16 << 20),
            }),
            ..ControlHeader::default()
        },
    );
    assert_eq!(Envelope::decode(&env.encode()).unwrap(), env);
}

fn bound_actor_send(session: Option<zlink::wire::SessionTail>, command: Command) -> Envelope {
    Envelope::Call(CallMessage {
        command,
        head: CallHead {
            correlation: if command.is_request() { 9 } else { 0 },
            operation: 1,
            deadline_ms: if command.is_request() { 1_000 } else { 0 },
            hops: 0,
            target: WireName::from_text("player-1"),
            packet: WireName::from_text("move"),
            fence: Some(RouteFence {
                object_generation: 2,
                owner_generation: 3,
                lease_generation: 4,
            }),
            session,
            topic: None,
            push: None,
        },
        metadata: Metadata::new(),
        payload: Bytes::from_static(b"{}"),
    })
}

#[test]
fn a_bound_session_tail_round_trips_on_actor_sends_and_requests() {
    let tail = zlink::wire::SessionTail {
        binding_generation: 7,
        session_seq: 41,
    };
    for command in [Command::ActorSend, Command::ActorRequest] {
        let envelope = bound_actor_send(Some(tail), command);
        let frames = envelope.encode();
        assert_eq!(
            frames[0][4] & zlink::wire::FLAG_SESSION_TAIL,
            zlink::wire::FLAG_SESSION_TAIL
        );
        assert_eq!(Envelope::decode(&frames).unwrap(), envelope);
        // Without a tail the flag stays clear and the head is 16 bytes shorter.
        let plain = bound_actor_send(None, command).encode();
        assert_eq!(plain[0][4] & zlink::wire::FLAG_SESSION_TAIL, 0);
        assert_eq!(frames[0].len(), plain[0].len() + 16);
    }
}

#[test]
fn a_bound_session_tail_is_refused_where_it_does_not_belong_or_is_malformed() {
    let tail = zlink::wire::SessionTail {
        binding_generation: 7,
        session_seq: 1,
    };
    // On a Spot send: set the flag and append the tail by hand (the encoder never would).
    let mut spot = bound_actor_send(None, Command::SpotSend).encode();
    let mut head = spot[0].to_vec();
    head[4] |= zlink::wire::FLAG_SESSION_TAIL;
    head.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1]);
    spot[0] = Bytes::from(head);
    let error = Envelope::decode(&spot).unwrap_err();
    assert!(error.to_string().contains("takes none"), "{error}");
    // A zero binding generation.
    let mut zero = bound_actor_send(Some(tail), Command::ActorSend).encode();
    let mut head = zero[0].to_vec();
    let at = head.len() - 16;
    head[at..at + 8].fill(0);
    zero[0] = Bytes::from(head);
    let error = Envelope::decode(&zero).unwrap_err();
    assert!(
        error.to_string().contains("zero binding generation"),
        "{error}"
    );
    // The flag without the 16 bytes.
    let mut short = bound_actor_send(None, Command::ActorSend).encode();
    let mut head = short[0].to_vec();
    head[4] |= zlink::wire::FLAG_SESSION_TAIL;
    short[0] = Bytes::from(head);
    assert!(Envelope::decode(&short).is_err());
    // The flag on a request is refused with the readable correlation.
    let mut request = bound_actor_send(None, Command::SpotRequest).encode();
    let mut head = request[0].to_vec();
    head[4] |= zlink::wire::FLAG_SESSION_TAIL;
    request[0] = Bytes::from(head);
    let error = Envelope::decode(&request).unwrap_err();
    assert_eq!(error.correlation, Some(9));
}

fn push(tail: Option<zlink::wire::PushTail>) -> Envelope {
    let Envelope::Call(mut call) = bound_actor_send(None, Command::BoundSessionSend) else {
        unreachable!("a call")
    };
    call.head.push = tail;
    call.payload = Bytes::from_static(b"pushed bytes");
    Envelope::Call(call)
}

fn push_tail() -> zlink::wire::PushTail {
    zlink::wire::PushTail {
        session: 12,
        session_node_generation: 3,
        actor_node_generation: 5,
        binding_generation: 7,
        codec: 1,
    }
}

#[test]
fn a_push_carries_its_tail_in_the_binary_head_and_its_payload_as_its_own_frame() {
    let envelope = push(Some(push_tail()));
    let frames = envelope.encode();
    assert_eq!(Envelope::decode(&frames).unwrap(), envelope);
    // The payload frame is the pushed bytes as they are: no record around them.
    assert_eq!(frames.last().unwrap(), &Bytes::from_static(b"pushed bytes"));
    // The head: fixed part, names, the Actor's fence (24) and the push tail (33).
    assert_eq!(
        frames[0].len(),
        28 + "player-1".len() + "move".len() + 24 + 33
    );
}

#[test]
fn a_push_tail_that_is_missing_truncated_or_zero_is_refused() {
    // The encoder writes zeros for a missing tail: refused.
    assert!(Envelope::decode(&push(None).encode()).is_err());
    let good = push(Some(push_tail())).encode();
    // One byte short, and one byte too many.
    for cut in [good[0].len() - 1, good[0].len() + 1] {
        let mut frames = good.clone();
        let mut head = good[0].to_vec();
        head.resize(cut, 0);
        frames[0] = Bytes::from(head);
        assert!(Envelope::decode(&frames).is_err(), "a head of {cut} bytes");
    }
    // Each generation zeroed in turn (session owner, Actor owner, binding).
    for at in [8, 16, 24] {
        let mut frames = good.clone();
        let mut head = good[0].to_vec();
        let tail = head.len() - 33;
        head[tail + at..tail + at + 8].fill(0);
        frames[0] = Bytes::from(head);
        let error = Envelope::decode(&frames).unwrap_err();
        assert!(error.to_string().contains("zero generation"), "{error}");
    }
}
